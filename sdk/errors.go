package sdk

import "fmt"

// ParamError refuses params: admit answers invalid_params naming Field.
type ParamError struct {
	Field   string
	Message string
}

func (e *ParamError) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return fmt.Sprintf("%s: %s", e.Field, e.Message)
}

// InvalidParams returns an error that admit reports as invalid_params.
// field is the param's JSON name ("at", "repo.owner").
func InvalidParams(field, format string, args ...any) error {
	return &ParamError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// UnobservableError refuses a subject this host can never observe as
// configured: admit answers unobservable, and the host refuses the watch
// with 422 watch_unobservable naming Setting.
type UnobservableError struct {
	Setting string
	Message string
}

func (e *UnobservableError) Error() string {
	return fmt.Sprintf("%s (setting: %s)", e.Message, e.Setting)
}

// Unobservable returns an error that admit reports as unobservable. setting
// is what the operator would change to make the subject observable.
func Unobservable(setting, format string, args ...any) error {
	return &UnobservableError{Setting: setting, Message: fmt.Sprintf(format, args...)}
}

// FetchError is a fetch that produced no response: the host refused the
// request, or the request failed. Reason is the issuer's taxonomy
// (abi.FetchTimeout, abi.FetchRateLimited, …). A predicate almost always
// answers Pending on it: the host could not tell, so neither can the plugin.
type FetchError struct {
	Reason  string
	Message string
}

func (e *FetchError) Error() string { return fmt.Sprintf("fetch %s: %s", e.Reason, e.Message) }
