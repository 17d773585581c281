// Package servetest is test support for tests that run the real vigil
// binary: building it, a free loopback address, and waiting until a
// started `vigil serve` answers GET /healthz. The end-to-end tests
// (cmd/vigil) and the crash harness (internal/crashtest) start their
// processes their own ways (a log buffer, a log file per start) and share
// this.
//
// What it must never do: listen anywhere but 127.0.0.1, or own a process
// (the caller starts and kills it). Rejected: a copy of these in each test
// package, which had drifted (a 5-minute bound in one, 3 in the other; one
// checked the status code, one did not).
package servetest
