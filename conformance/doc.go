// Package conformance is the suite a plugin author runs against a built
// .wasm before shipping it: `vigil conformance FILE`, or conformance.Run
// from the author's own go test. It answers one question: is this file a
// good vigil predicate? Each check has a stable id, a level (required or
// advisory), a why and a fix, listed in Specs and on docs/conformance.md.
//
// What it owns: the checks, run inside the real runtime (internal/plugin) with
// the production limits and a registry entry granting what the kind
// declares, so what passes here is what the host will serve; a fake fetch
// and exec, so nothing reaches a network (generic scenarios, or an
// author's recorded responses replayed); repeatable runs (a fixed instant
// and seed); a guest clock moved to both ends of what WASI can say, to
// catch a plugin that reads it; and what the contract allows but serve
// would punish reported as a warning, never a failure (LateProbe, which
// vigil plugin try prints from the same function). Each check is proved
// to bite by a broken plugin in testdata/broken, which fails exactly it.
//
// It composes internal/plugin as the binary does; it sits above the host's
// packages, not below them.
//
// What it must never do: judge a plugin by anything but the contract
// (sdk/abi, docs/writing-a-plugin.md) and the rules the host relies on;
// pass a check it could not run; reach past the runtime except for the
// four things only a direct call sees (the exports, describe's raw
// answer, a call for another kind, and wake inputs the host would never
// write: empty, or not JSON).
//
// Rejected: fixtures per plugin for the fake fetch. The suite knows no
// plugin's payloads; its generic answers test what every plugin must do
// with any answer, and what a plugin makes of its forge's real payloads is
// the author's cases, replayed offline.
//
// Public: plugin authors run it from their own tests.
package conformance
