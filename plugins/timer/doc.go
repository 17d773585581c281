// Command timer is vigil's bundled timer predicate: it settles "fired" once
// the host's clock reaches params.at.
//
// Build (what `just plugins` runs):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -buildvcs=false -o timer.wasm .
//
// It owns one question, has the instant come, and must never read the wall
// clock: it answers from the host's now alone, so it is deterministic under
// a fake clock and probed once, at its instant, not every interval: its
// admit names the instant as the watch's first check (next_check), so the
// host arms the watch there instead of probing it at registration, and
// its pending answer (to a probe before the instant: a clock that moved
// back, a restart's overdue pass) names it as the next check.
package main
