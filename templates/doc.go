// Package templates owns the plugin templates `vigil plugin new` writes,
// one per language (Go with vigil's SDK, freestanding C, AssemblyScript),
// and the writing of one into a directory for a kind. Each template is a
// complete timer-like predicate of kind template.timer with a unit test,
// a schema test, recorded conformance cases and a Makefile whose default
// target builds the .wasm; the C and AssemblyScript ones speak the Extism
// ABI directly, importing nothing but the kernel. A Go plugin builds with
// only Go and the vigil binary: the SDK's source (sdk.Source) is written
// beside it.
//
// What it guarantees: what is written builds and passes the conformance
// suite unchanged; its tests write each template into a temporary
// directory and build it there with its own Makefile, as an outside author
// would.
//
// What it must never do: write into a directory that holds anything, or
// outside the directory it is given; carry a built .wasm in place of the
// source.
//
// Rejected: text/template. A template here is real source with one token,
// "template.timer", replaced by the kind (and a leading "_" dropped from a
// file name), so the C and AssemblyScript templates build and pass the
// suite as they stand in the tree and the Go one is ordinary Go gofmt
// checks: what is tested is what is written, not a rendering of it.
//
// Public: for a tool that writes vigil's plugin templates, as vigil
// plugin new does.
package templates
