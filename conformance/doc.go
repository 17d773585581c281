// Package conformance is the suite a plugin author runs against a built
// .wasm before shipping it: `vigil conformance FILE` from a shell or CI, or
// conformance.Run from the author's own go test. It answers one question:
// is this file a good vigil predicate? Each check has a stable id, a
// level (required or advisory) and a why and a fix, listed in Specs and
// on the spec page docs/conformance.md (suite version SuiteVersion).
//
// What it guarantees:
//   - The plugin runs inside the real runtime (host/plugin) with the
//     production limits, from a plugin directory holding a copy of the file
//     and a registry entry granting what the kind declares. What passes
//     here is what the host will serve.
//   - Nothing reaches a network. Every fetch meets the suite's fake
//     fetch, which answers by scenario (a generic 200, a changed body,
//     timeouts, refusals, 503 and 429 answers) or, for an author's case,
//     replays the recorded responses, and records each request per call.
//   - Runs are repeatable: a fixed observation instant and a fixed seed
//     for the generated params, so two runs check the same things.
//   - A check that cannot run says why and which check to fix first; it
//     never passes silently.
//   - A plugin that reads the guest's clock instead of the input's now is
//     caught whatever instant its params name: observe.no-wall-clock
//     moves the guest's clock to both ends of what a WASI clock can say
//     (1970 and 2262), with now fixed, on the example and on every
//     admitted generated params. Clocks close together (the default and a
//     year on, suite 2) both lie before an instant in the future, and a
//     plugin comparing its clock with one passed.
//   - What the contract allows but serve would punish is a warning (an
//     advisory failure, "warn" in the text report, "warning:" in JUnit),
//     never a failure: a pending answer with no next_check whose next
//     probe by the cadence falls after the natural deadline, so the watch
//     expires at its deadline (observe.deadline-reachable). LateProbe is
//     that rule, and vigil plugin try prints it from the same function.
//
// What it must never do:
//   - Judge a plugin by anything but the contract (sdk/abi,
//     docs/writing-a-plugin.md) and the rules the host relies on. A check
//     the suite cannot make for every plugin (a changed subject, which
//     needs a payload the plugin reads) is advisory, not required.
//   - Reach past the runtime without need. Four things only a direct call
//     can see, and the suite's probe makes them under the same bounds:
//     which functions the module exports, describe's raw answer (the
//     runtime refuses a bad describe at its first broken rule), a call
//     for another kind (the runtime routes by kind, so it never sends one),
//     and wake's inputs the host would never write (an empty input, one
//     that is not JSON) beside the junk bodies any sender may sign.
//
// Why a fake fetch that answers the same body for every request, and not
// fixtures per plugin: the suite knows no plugin's payloads. The generic
// answers test what every plugin must do with any answer (stay
// deterministic, call a failure pending); what a plugin makes of its
// forge's real payloads is the author's cases, replayed offline.
//
// Each check is proved to bite by a broken plugin in testdata/broken: one
// way to be wrong each, built on the well-behaved plugin in testdata/base,
// and the test asserts it fails exactly its check and passes the others.
// The advisory observe.deadline-reachable is proved by testdata/quirks/
// latetimer, which passes every required check and is warned of.
package conformance
