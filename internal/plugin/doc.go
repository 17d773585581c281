// Package plugin is vigil's plugin runtime: it loads predicate plugins
// (.wasm, Extism calling convention, ABI vigil.predicate/v1), keeps the
// registry of kinds and their grants, and makes the bounded calls the rest
// of the host needs: Admit at registration, Observe when a watch is due,
// and Wake when an inbound event names the kind (the optional export wake,
// read from each module's exports at load: Info.Wakes).
// Each loaded plugin is one kind.Kind in the host's kind registry.
//
// What it owns:
//   - Bounded calls: a wall-clock timeout that interrupts a running guest,
//     a memory cap per instance, an output size cap. An instance that
//     trapped, timed out or ran out of memory is discarded; one instance
//     never serves two goroutines at once.
//   - Modules compiled once (on disk through wazero's compilation cache)
//     with a small fixed pool of warm instances: a burst queues, memory
//     does not grow with load.
//   - Loading and reloading: a bad plugin is reported by file and rule in
//     Problems and never affects the others; a reload swaps a generation
//     atomically, a call in flight finishing on the module it started on.
//   - The host functions a guest may call, as granted: vigil_fetch and
//     vigil_extraction_failed (internal/fetch), vigil_exec (internal/runner).
//
// What it must never do: turn "the plugin could not answer" into an
// outcome (a fault is a pending Observation with Fault set); reach the
// network in Admit (admission is configuration, destinations judged
// without DNS); blame the caller for the plugin (an answer off the
// contract, its partition key and first check included, is a
// *kind.CallError, a 503, never a 422); let a wake answer off the contract
// (too many keys, one too long, an error, a timeout) wake anything.
//
// Rejected: a shared watchdog instead of wazero's interrupt per call. It
// would save a goroutine per call but not the checks compiled into the
// guest's loops, which are the larger cost, and it cannot stop a loop;
// the SDK cuts the checks instead (docs/BENCHMARKS.md).
package plugin
