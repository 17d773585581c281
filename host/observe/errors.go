package observe

import (
	"errors"

	"github.com/vigilhq/vigil/api"
)

// Error codes the API answers with (api's table of codes).
const (
	CodeMalformed     = api.CodeMalformedJSON
	CodeInvalidField  = api.CodeInvalidField
	CodeInvalidParams = api.CodeInvalidParams
	CodeNotAReporter  = api.CodeNotAReporter
	// CodeObserveUnavailable is a record in a scope with no observe entry
	// left: the operation goes with the last entry.
	CodeObserveUnavailable = api.CodeObserveUnavailable
	CodeOnceConflict       = api.CodeOnceConflict
	CodeRateLimited        = api.CodeRateLimited
	CodeNotFound           = api.CodeNotFound
	CodeWorkConflict       = api.CodeWorkConflict
)

// Error is a refusal the caller can act on: the API's one error type
// (RetryAfter set with CodeRateLimited).
type Error = api.Error

// ErrUnknownScope is a record for a scope the configuration does not name.
var ErrUnknownScope = errors.New("observe: unknown scope")
