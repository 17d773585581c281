package plugins

import (
	"embed"
	"io/fs"
)

//go:embed registry.json */*.wasm
var files embed.FS

// Bundled returns the bundled set: registry.json at the root and
// <kind>/<kind>.wasm for each bundled kind.
func Bundled() fs.FS { return files }
