// Package plugin is vigil's plugin runtime: it loads predicate plugins
// (.wasm, Extism calling convention, ABI vigil.predicate/v1), keeps the
// registry of kinds and their grants, and makes the bounded calls the rest
// of the host needs: Admit at registration, Observe when a watch is due.
//
// What it guarantees:
//   - Every call is bounded: a wall-clock timeout that interrupts a running
//     guest (wazero's close-on-context-done), a memory cap per instance (for
//     guest and Extism kernel memory alike), and an output size cap.
//   - An instance that trapped, timed out or ran out of memory is discarded,
//     never reused; one instance is never used by two goroutines at once.
//   - Each module is compiled once (wazero's compilation cache, on disk
//     when configured, so a restart does not recompile) and keeps a small
//     fixed pool of warm instances. A burst of calls queues for an instance;
//     memory does not grow with load.
//   - A bad plugin (a file that does not compile, a describe that breaks the
//     contract, two files claiming one kind) is reported by file and rule in
//     Problems and never affects the others. Where the registry pins the
//     file of a contested kind, each file it sets aside is reported too
//     (kind.pinned), never silently ignored; so is a plugin whose kind the
//     host serves itself (kind.host), which the host's kind keeps. A file
//     loaded on its own (Config.Extra, vigil plugin try FILE) wins its
//     kind the same way, under the grants the registry gives that kind.
//   - Every load and reload logs what loaded, what did not and why, from
//     Reload itself, so SIGHUP and the API's reload say the same; and,
//     when it compiles anything, "compiling N plugins" before and
//     "compiled N plugins in D" after, with the cache directory, so a
//     first start's minute of compiling is explained.
//   - Reload swaps a new generation of plugins in atomically. Unchanged
//     files keep their module; a call in flight finishes on the module it
//     started on, which closes when its last call returns.
//   - Plugins get no filesystem, no sockets, no real sleep, a fake clock,
//     and no Extism http_request (allowed hosts stay empty). Their one way
//     out is the host function vigil_fetch, which answers only kinds granted
//     the fetch capability and hands the request to the injected Fetcher,
//     with the cadence of the watch being observed (kind.WithCadence, put on the
//     call's context by the scheduler, as the recipient is for vigil_exec):
//     the issuer serves a watch a held result younger than its cadence.
//
// What it must never do:
//   - Turn "the plugin could not answer" into an outcome. A fault is a
//     pending Observation with Fault set; the scheduler keeps the watch
//     waiting. Only a plugin's own error (a call for the wrong kind, a
//     routing bug) comes back as an error, so it is loud.
//   - Reach the network in Admit. Admission is configuration: the kind has a
//     plugin, the plugin's capabilities are granted, the params match the
//     schema, the plugin's admit agrees, and each destination admit names
//     is within the kind's fetch grants and not an address the kind's
//     destination guard refuses. Destinations are judged without DNS
//     (literals, localhost and the inet_aton forms, through netguard's
//     LiteralResolver); a name is left to each fetch's own guard.
//   - Blame the caller for the plugin. A refusal (*api.Error, a 422) is
//     about the params or the operator's settings; an answer off the
//     contract, destinations included, is a *kind.CallError (a fault, 503).
//
// Why a goroutine-free timeout was not used: wazero can only interrupt
// compiled code that checks the module's state at loop entries, and it
// watches each call's context in a goroutine. A shared watchdog would save
// the goroutine but not the checks, which are the larger cost for Go guests
// (one per guest loop iteration, and Go makes every function call one);
// the SDK cuts the checks instead, by
// decoding the observe envelope in one pass. See docs/BENCHMARKS.md.
//
// Why Extism's ABI and not a bespoke one: any Extism PDK (Rust, JS, Zig, C)
// can write a vigil plugin without a vigil SDK for that language, and the
// Go SDK here speaks the same ABI through go:wasmimport.
package plugin
