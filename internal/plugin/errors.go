package plugin

import (
	"errors"
	"fmt"
)

// Sentinel errors; the structured errors below answer errors.Is with them.
var (
	// ErrClosed: the runtime is closed.
	ErrClosed = errors.New("plugin runtime closed")
	// ErrBadDestinations: admit named destinations off the contract (too
	// many, a target that does not parse, from a kind that declares no
	// fetch, on a refusal). It is the plugin's fault, inside a
	// *kind.CallError, never the caller's.
	ErrBadDestinations = errors.New("admit named destinations off the contract")
	// ErrBadPartitionKey: admit's partition key is off the contract (over
	// abi.MaxPartitionKey bytes, or on a refusal). It is the plugin's
	// fault, inside a *kind.CallError, never the caller's.
	ErrBadPartitionKey = errors.New("admit's partition key is off the contract")
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

// RuleKindPinned is the rule of a file that claims a kind another file
// serves because the registry's kinds.<kind>.wasm names that one: the
// kind is served, and this file is not loaded.
const RuleKindPinned = "kind.pinned"

// RuleKindHost is the rule of a plugin whose kind the host serves itself
// (a built-in such as observe.thread): the host's stays, and the plugin is
// not loaded.
const RuleKindHost = "kind.host"

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
