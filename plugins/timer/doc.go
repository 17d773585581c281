// Command timer is vigil's bundled timer predicate: it settles "fired" once
// the host's clock reaches params.at.
//
// Build (what `just plugins` runs):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -buildvcs=false -o timer.wasm .
//
// It owns one question, has the instant come, and must never read the wall
// clock: it answers from the host's now alone, so it is deterministic under
// a fake clock and probed twice (at registration and at its instant), not
// every interval, because its pending answer names the instant as the next
// check.
package main
