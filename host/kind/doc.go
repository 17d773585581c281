// Package kind is the one seam between the host and the predicates it
// serves: what a kind of watch is (Kind: describe, admit, observe, and the
// optional Settled hook), the answers those calls give (Info, Admission,
// Observation) and their error (CallError; a refusal is an *api.Error),
// and the Registry
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
// Admission is asked an AdmitRequest: the params, the watch's recipient,
// and the registering principal as a Caller ("may it read this
// record?"). A kind whose params name a record of the host (a Work item,
// a watch, a recipient, a scope) admits only one the Caller may read,
// and refuses another with a HiddenError, which answers exactly as an
// unknown id; host/authz's Principal is the Caller of an API request,
// HostCaller the host's own. A nil Caller reads nothing. A plugin is
// asked with the params alone (Multi): it reads no record of the host.
//
// Rejected: the caller in a context value, as the recipient of a probe
// is. Admission is where a leak happens; a parameter every kind's Admit
// must take makes each kind's author see the question, and a value a
// registration path forgot to put in a context would read as nobody only
// by luck of the default.
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
