package plugin

import (
	"errors"
	"fmt"
)

// Sentinel errors; the structured errors below answer errors.Is with them.
var (
	// ErrUnknownKind: no loaded plugin serves the kind.
	ErrUnknownKind = errors.New("no plugin for kind")
	// ErrRaised: the plugin answered an error (error_set), such as a call
	// for a kind it does not serve.
	ErrRaised = errors.New("plugin raised an error")
	// ErrFault: the plugin timed out, trapped, ran out of memory or broke
	// the output contract.
	ErrFault = errors.New("plugin fault")
	// ErrClosed: the runtime is closed.
	ErrClosed = errors.New("plugin runtime closed")
	// ErrBadDestinations: admit named destinations off the contract (too
	// many, a target that does not parse, from a kind that declares no
	// fetch, on a refusal). It is the plugin's fault, inside a
	// *CallError, never the caller's.
	ErrBadDestinations = errors.New("admit named destinations off the contract")
)

// RegistryError is a registry file that cannot be used.
type RegistryError struct {
	File string
	Key  string // "kinds.ci", when one entry is at fault
	Err  error
}

func (e *RegistryError) Error() string {
	if e.Key != "" {
		return fmt.Sprintf("%s: %s: %v", e.File, e.Key, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *RegistryError) Unwrap() error { return e.Err }

// LoadError is one plugin file, or one registry entry, that could not be
// served. It names the file and the rule; it never stops the other plugins.
type LoadError struct {
	File string // "bundled:timer.wasm" or a path in the plugin directory
	Kind string // when known
	Rule string // "describe.kind", "kind.conflict", "compile", …
	Err  error
}

func (e *LoadError) Error() string {
	if e.Kind != "" {
		return fmt.Sprintf("%s (kind %s): %s: %v", e.File, e.Kind, e.Rule, e.Err)
	}
	return fmt.Sprintf("%s: %s: %v", e.File, e.Rule, e.Err)
}

func (e *LoadError) Unwrap() error { return e.Err }

// Refusal codes, as the API reports them.
const (
	CodeWatchUnobservable = "watch_unobservable"
	CodeInvalidParams     = "invalid_params"
	// CodeDestinationRefused: a destination admit named is an address the
	// kind's destination guard refuses (loopback, private, link-local,
	// metadata, …), so every fetch of the watch would be refused.
	CodeDestinationRefused = "destination_refused"
)

// Refusal is admit's "no": the watch must not be written. Setting names what
// an operator changes to make the kind observable; Field names the param at
// fault.
type Refusal struct {
	Code    string
	Message string
	Field   string
	Setting string
}

func (e *Refusal) Error() string {
	switch {
	case e.Setting != "":
		return fmt.Sprintf("%s: %s (setting: %s)", e.Code, e.Message, e.Setting)
	case e.Field != "":
		return fmt.Sprintf("%s: %s: %s", e.Code, e.Field, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Fault reasons.
const (
	FaultTimeout  = "timeout"
	FaultTrap     = "trap"
	FaultMemory   = "memory"
	FaultTooLarge = "output_too_large"
	FaultContract = "bad_output"
	FaultRaised   = "raised"
	FaultInstance = "instantiate"
)

// CallError is a plugin call that produced no usable answer.
type CallError struct {
	Kind   string
	Export string
	Reason string // one of the Fault* constants
	Err    error
}

func (e *CallError) Error() string {
	return fmt.Sprintf("plugin %s: %s: %s: %v", e.Kind, e.Export, e.Reason, e.Err)
}

func (e *CallError) Unwrap() []error {
	if e.Reason == FaultRaised {
		return []error{ErrRaised, e.Err}
	}
	return []error{ErrFault, e.Err}
}
