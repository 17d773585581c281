//go:build !wasm

package sdk

import (
	"embed"
	"io/fs"
	"strings"
)

// source is this module as it is built: its go.mod, the Go files of
// every package in it, and the files those packages embed (the JSON
// Schemas). The patterns name each package's directory, so a package
// added to the module must be added here (TestSourceIsTheModule says when
// one is missing). Test files are embedded with the rest (a pattern
// cannot leave them out) and hidden by Source.
//
//go:embed go.mod *.go abi/*.go abi/schema/*.go abi/schema/*.json wake/*.go internal/export/*.go
var source embed.FS

// Source returns the SDK module's source: go.mod at the root, the non-test
// .go files of each of its packages and the files they embed, at their
// paths in the module ("abi/abi.go", "abi/schema/describe.json"). Written into a directory, it is a module a plugin
// can depend on with a replace directive until the SDK is published;
// vigil plugin new writes it beside a generated plugin that way.
//
// It exists outside wasm only: a plugin never carries its own SDK's
// source.
func Source() fs.FS { return sourceFS{source} }

// sourceFS hides the test files of an embedded tree.
type sourceFS struct{ fsys embed.FS }

// isTest reports whether name is a test file, which Source leaves out.
func isTest(name string) bool { return strings.HasSuffix(name, "_test.go") }

func (s sourceFS) Open(name string) (fs.File, error) {
	if isTest(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	f, err := s.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	if d, ok := f.(fs.ReadDirFile); ok {
		return sourceDir{d}, nil
	}
	return f, nil
}

func (s sourceFS) ReadDir(name string) ([]fs.DirEntry, error) {
	entries, err := s.fsys.ReadDir(name)
	return withoutTests(entries), err
}

func (s sourceFS) ReadFile(name string) ([]byte, error) {
	if isTest(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return s.fsys.ReadFile(name)
}

// sourceDir is a directory of sourceFS, listed without its test files.
type sourceDir struct{ fs.ReadDirFile }

func (d sourceDir) ReadDir(n int) ([]fs.DirEntry, error) {
	if n <= 0 {
		entries, err := d.ReadDirFile.ReadDir(-1)
		return withoutTests(entries), err
	}
	// Read until n entries that are not tests, or the end.
	var out []fs.DirEntry
	for len(out) < n {
		entries, err := d.ReadDirFile.ReadDir(n - len(out))
		out = append(out, withoutTests(entries)...)
		if err != nil {
			if len(out) > 0 {
				return out, nil
			}
			return nil, err
		}
	}
	return out, nil
}

func withoutTests(entries []fs.DirEntry) []fs.DirEntry {
	out := entries[:0:0]
	for _, e := range entries {
		if !isTest(e.Name()) {
			out = append(out, e)
		}
	}
	return out
}

var (
	_ fs.ReadDirFS  = sourceFS{}
	_ fs.ReadFileFS = sourceFS{}
)
