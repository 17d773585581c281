// Package templates owns the plugin templates `vigil plugin new` writes,
// one per language (Go with vigil's SDK, freestanding C, AssemblyScript),
// and the writing of one into a directory for a kind. Each template is a
// complete timer-like predicate of kind template.timer (params an
// instant, fired at it, its natural deadline the instant plus a minute,
// its pending answer naming the instant as the next check) with a unit
// test, a schema test, recorded conformance cases and a Makefile whose
// default target builds the .wasm. The C and AssemblyScript ones speak the
// Extism ABI directly, importing nothing but the kernel.
//
// What it guarantees:
//   - What is written builds and passes the conformance suite unchanged:
//     the tests write each template for a kind into a temporary
//     directory, build it there with its own Makefile, as an outside
//     author would (for Go, a module of its own outside this one, with
//     GOWORK=off), run its unit and schema tests and the suite with its
//     cases.
//   - A Go plugin builds with only Go and the vigil binary: the SDK's
//     source, the binary's own (sdk.Source), is written beside it in
//     third_party/vigil-sdk, and its go.mod replaces the SDK's module
//     path with that directory until the SDK is published.
//
// What it must never do:
//   - Write into a directory that holds anything, or outside the
//     directory it is given: a generator that overwrites an author's
//     files once is never trusted again.
//   - Carry a built .wasm in place of the source. The template's tests
//     build every one from source each run (the compilers they need are
//     internal/toolreq's to find).
//
// Why a template is real source with one token, "template.timer",
// replaced by the kind (and a leading "_" dropped from a file name, which
// keeps the Go template's files out of this module's build), and not a
// text/template: the C and AssemblyScript templates build and pass the
// suite as they stand in the tree, and the Go one is ordinary Go that
// gofmt checks, so what is tested is what is written, not a rendering of
// it. The token is itself a valid kind, so a template that forgets to
// replace it still builds and is caught by its test asserting the kind.
//
// Why the C and AssemblyScript templates speak the Extism ABI directly
// rather than through Extism's C or AssemblyScript PDK: the part of the
// kernel a predicate needs is eight functions (input_length,
// input_load_u64/u8, alloc, store_u64/u8, output_set, error_set), written
// out in one short file a reader can check against docs/abi.md, while a
// PDK is a dependency fetched from elsewhere whose imports (an env.abort,
// a WASI call) the host may not provide, and which would have to be
// vendored into every generated plugin to build offline.
package templates
