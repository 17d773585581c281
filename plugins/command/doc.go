// Command command is vigil's bundled command predicate: it settles once a
// command the operator granted exits as expected (exit status, and
// optionally a string in its output).
//
// Build (what `just plugins` runs):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -buildvcs=false -o command.wasm .
//
// A sandboxed plugin cannot run a process. Running one is the host's exec
// capability (vigil_exec), granted per kind in the registry with a list of
// programs, the environment variables passed, and a maximum timeout; the
// host runs the command in the workspace where the watch was registered
// (the registering principal's recipient record, else the watch's
// recipient's), as an
// argument vector (no shell unless the operator lists one), and ends it
// with its whole process group when its timeout passes.
//
// It owns one question, did the command succeed this time, and must never:
//   - answer a failed outcome for a command that failed or timed out: a
//     failing health check is "not yet", and a timeout is "I could not
//     tell"; both are pending, and the deadline, not this plugin, ends the
//     wait;
//   - admit a program the registry does not grant, or a timeout over the
//     grant's maximum: both are known before any watch is written.
package main
