// Package wasmbuild builds Go plugin sources into .wasm for tests, and
// reads which Go release built a .wasm. It is test support: the product
// never builds plugins, it loads built ones.
//
// It also names the one wazero compilation cache directory every test
// shares, because compiling a Go plugin cold takes seconds and CI would
// spend minutes doing it per package.
package wasmbuild
