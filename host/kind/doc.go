// Package kind is the one seam between the host and the predicates it
// serves: what a kind of watch is (Kind: describe, admit, observe, and the
// optional Settled hook), the answers those calls give (Info, Admission,
// Observation) and their errors (Refusal, CallError), and the Registry
// that the scheduler and the recipients look kinds up in.
//
// Two sources register kinds: the wasm runtime (host/plugin), one Kind per
// loaded plugin, replaced as a whole on every reload; and the host's own
// built-in kinds (observe.thread, recipient.reminder), each registering
// itself. Only a built-in kind sets an Observation's Type, the message
// type its change is mailed as. The scheduler
// and the recipients depend on this package only, never on host/plugin, so
// a built-in kind and a plugin are served through the same calls, and a
// new source of kinds is one more Replace.
//
// Changed is a channel each write of the kinds closes (then a new one is
// made when asked), so a listener (the MCP server's kind enum) learns of
// a reload without polling; it is made only when asked for, so it costs
// nothing while nobody waits.
//
// The host's bounds on a watch's params (CheckParams: 64 KiB, 32 levels
// of objects and arrays) are here, beside the refusal they answer with:
// the scheduler and the recipients hold every kind's params to them
// before any kind sees them, so a hostile document is the caller's
// invalid_params and never a plugin's fault.
//
// What it must never do: run a predicate or know how one runs (that is its
// source's), or decide anything about a watch (that is the scheduler's).
// A lookup is one atomic load of an immutable map, because every probe
// makes one.
//
// Rejected: the scheduler asserting optional interfaces on whatever
// Plugins value it was handed (the built-in kind wrapped the runtime, and
// the settled hook was found by type assertion at each settlement). That
// hid which kinds have hooks and made every wrapper forward every method.
package kind
