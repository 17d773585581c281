package netguard

import (
	"errors"
	"fmt"
	"net/netip"
)

// Sentinel errors; the structured errors below answer errors.Is with them.
var (
	// ErrRefused: the destination is one the guard does not let through.
	ErrRefused = errors.New("destination refused")
	// ErrNoAddress: a name resolved to no address at all.
	ErrNoAddress = errors.New("name has no address")
)

// RefusedError is a destination the guard refused. Addr is the refused
// address; it is the zero Addr when what was refused did not parse as one
// (DialControl's address, a network that is not IP). Host is the name that
// resolved to Addr, when the refusal came from Resolve. Reason says which
// rule refused it, for an operator: "loopback", "private (RFC 1918)",
// "NAT64 form of 10.0.0.1: private (RFC 1918)", ….
type RefusedError struct {
	Addr   netip.Addr
	Host   string
	Reason string
}

func (e *RefusedError) Error() string {
	switch {
	case e.Host != "" && e.Addr.IsValid():
		return fmt.Sprintf("netguard: %s resolves to %s: %s: %s", e.Host, e.Addr, ErrRefused, e.Reason)
	case e.Addr.IsValid():
		return fmt.Sprintf("netguard: %s: %s: %s", e.Addr, ErrRefused, e.Reason)
	}
	return fmt.Sprintf("netguard: %s: %s", ErrRefused, e.Reason)
}

// Is makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// ResolveError is a name that could not be resolved: the resolver failed,
// or answered no address. It is not a refusal; the issuer contract reports
// it as a connect failure, not destination_refused.
type ResolveError struct {
	Host string
	Err  error
}

func (e *ResolveError) Error() string {
	return fmt.Sprintf("netguard: resolve %q: %v", e.Host, e.Err)
}

func (e *ResolveError) Unwrap() error { return e.Err }
