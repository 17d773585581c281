// Package kind is the one seam between the host and the predicates it
// serves: what a kind of watch is (Kind: describe, admit, observe, and the
// optional Settled hook), the answers those calls give (Info, Admission,
// Observation) and their error (CallError; a refusal is an *api.Error),
// and the Registry that the scheduler and the recipients look kinds up in.
//
// What it owns:
//   - The Registry: two sources register kinds, the wasm runtime
//     (internal/plugin, one Kind per loaded plugin, replaced whole on every
//     reload) and the host's built-in kinds (observe.thread,
//     recipient.reminder). A lookup is one atomic load of an immutable map,
//     because every probe makes one; Changed tells a listener of a reload
//     without polling.
//   - Admission's question: an AdmitRequest carries the params, the
//     watch's recipient and the registering principal as a Caller. A kind
//     whose params name a record of the host admits only one the Caller
//     may read, and refuses another with a HiddenError, answered exactly
//     as an unknown id. A plugin is asked with the params alone (Multi).
//   - The host's bounds on a watch's params (CheckParams: 64 KiB, 32
//     levels), so a hostile document is the caller's invalid_params, never
//     a plugin's fault.
//   - Events and first checks: a Waker maps an inbound event to the
//     partition keys of the watches it concerns (Info.Wakes says a kind
//     can; Registry.Wake asks it); an Admission may carry the watch's
//     first check (NextCheck), where the scheduler arms it instead of
//     probing it at once.
//   - The local principal's name, LocalPrincipal.
//
// What it must never do: run a predicate or know how one runs (that is its
// source's), or decide anything about a watch (that is the scheduler's).
//
// Rejected: the caller in a context value, as the recipient of a probe
// is. Admission is where a leak happens; a parameter every kind's Admit
// must take makes each kind's author see the question, where a value a
// registration path forgot to put in a context would read as nobody only
// by luck of the default.
package kind
