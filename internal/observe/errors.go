package observe

import "errors"

// Refusals are *api.Error with api's codes (observe_unavailable is a
// record in a scope with no observe entry left: the operation goes with
// the last entry; RetryAfter is set with rate_limited), so the API
// answers them as they are.

// ErrUnknownScope is a record for a scope the configuration does not name.
var ErrUnknownScope = errors.New("observe: unknown scope")
