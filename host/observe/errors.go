package observe

import (
	"errors"
	"time"
)

// Error codes the API answers with.
const (
	CodeMalformed     = "malformed_json"
	CodeInvalidField  = "invalid_field"
	CodeInvalidParams = "invalid_params"
	CodeNotAReporter  = "not_a_reporter"
	CodeOnceConflict  = "once_conflict"
	CodeRateLimited   = "rate_limited"
	CodeNotFound      = "not_found"
	CodeWorkConflict  = "work_conflict"
)

// Error is a refusal the caller can act on.
type Error struct {
	Code    string
	Field   string
	Message string
	// RetryAfter is set with CodeRateLimited.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Field != "" {
		return "observe: " + e.Code + ": " + e.Field + ": " + e.Message
	}
	return "observe: " + e.Code + ": " + e.Message
}

// ErrUnknownScope is a record for a scope the configuration does not name.
var ErrUnknownScope = errors.New("observe: unknown scope")
