// Package plugins holds vigil's bundled predicate plugins: one folder per
// kind with its Go source and its built .wasm, and a registry.json with the
// grants each bundled kind gets by default.
//
// It owns the bundled set and nothing else: the runtime in host/plugin
// loads it like any plugin directory. The .wasm files are committed and
// embedded, so `go run ./cmd/vigil serve` needs no build step; `just
// plugins` rebuilds them, and TestBundledPluginsAreReproducible fails when
// a committed .wasm is not what its source builds to.
//
// Rejected alternative: building the plugins at start-up or in go generate.
// A host that needs a wasm toolchain at run time, or an extra command before
// its first run, breaks the two-commands rule.
//
// Public: for a program that embeds vigil's bundled plugins; each kind's
// folder is a plugin's source (package main), not a library.
package plugins
