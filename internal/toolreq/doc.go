// Package toolreq finds the tools outside Go that some tests need (clang
// and wasm-ld for the C template, node and the AssemblyScript compiler for
// the AssemblyScript one), and decides what a test does when one is
// missing: it skips, naming exactly which tool is missing and how to get
// it, so `go test ./...` needs only Go; under VIGIL_REQUIRE_TOOLS=1 (which
// CI sets, .ci/run) it fails instead, so CI can never pass by skipping.
//
// It must never install anything, or reach a network: a test that
// downloads is slow, flaky and not the test's business. .ci/run installs
// (one apt-get call for clang and lld; npm for AssemblyScript, into
// ASCPrefix()), and a developer does the same by hand.
//
// Rejected: a build tag in place of the variable. The same `go test
// ./...` runs on a laptop and in CI, and a tag would have to be
// remembered on the command line; a variable CI exports once cannot be
// forgotten by one stage. (Failing always would leave a Go-only checkout
// untestable.)
package toolreq
