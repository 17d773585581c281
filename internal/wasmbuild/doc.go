// Package wasmbuild builds Go plugin sources into .wasm for tests, and
// reads which Go release built a .wasm. It is test support: the product
// never builds plugins, it loads built ones.
//
// A plugin source inside the root module builds against the SDK through
// the root go.mod's replace (github.com/vigilhq/vigil/sdk => ./sdk), so
// the build sees the checkout's SDK, never a published one; a source with
// a go.mod of its own that imports the SDK needs its own replace.
//
// It also names the one wazero compilation cache directory every test
// shares, because compiling a Go plugin cold takes seconds and CI would
// spend minutes doing it per package.
//
// Rejected: committing the test plugins' .wasm, as the bundled ones are,
// which would go stale against the checkout's SDK.
package wasmbuild
