package fetch

import "errors"

// ErrNoReader is DeadLetters on an issuer whose event log cannot be read
// back (it has no ReadEvents).
var ErrNoReader = errors.New("fetch: the event log cannot be read")

// Error is a fetch that produced no response, with its reason in the
// issuer's failure taxonomy (the abi.Fetch* reasons). Screen returns one
// for a refused command; Fetch reports one as the response's Failure.
type Error struct {
	// Reason is one of the abi.Fetch* failure reasons.
	Reason string
	// Header names the offending header of a refused command, "" when the
	// refusal is not about one header. A name, never a value.
	Header string
	// Setting names the configuration that would grant what was refused
	// ("kinds.ci.fetch_hosts", "secrets.github"), for not_granted.
	Setting string
	// Message is for the plugin and the operator. It never carries a
	// header value or a secret.
	Message string
	// Err is the underlying error, when there is one.
	Err error
}

func (e *Error) Error() string { return "fetch: " + e.Reason + ": " + e.Message }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }
