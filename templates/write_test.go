package templates

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/fstest"
)

func TestWriteRefuses(t *testing.T) {
	tmp := t.TempDir()
	full := filepath.Join(tmp, "full")
	if err := os.MkdirAll(full, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(full, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, kind string
		lang       Lang
		dir        string
		want       error
	}{
		{"a kind with capitals", "Alerts.Prom", C, filepath.Join(tmp, "a"), ErrKind},
		{"an empty kind", "", C, filepath.Join(tmp, "b"), ErrKind},
		{"a kind of 65 bytes", string(make65()), C, filepath.Join(tmp, "c"), ErrKind},
		{"an unknown language", "alerts.prom", "rust", filepath.Join(tmp, "d"), ErrLang},
		{"a directory that holds a file", "alerts.prom", C, full, ErrNotEmpty},
		{"a file", "alerts.prom", Go, file, ErrNotEmpty},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Write(tt.kind, tt.lang, tt.dir)
			if !errors.Is(err, tt.want) || got != nil {
				t.Fatalf("Write = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	// Nothing of the author's was touched, and nothing was created.
	if b, err := os.ReadFile(filepath.Join(full, "notes.txt")); err != nil || string(b) != "mine" {
		t.Fatalf("notes.txt: %q %v", b, err)
	}
	if entries, _ := os.ReadDir(full); len(entries) != 1 {
		t.Fatalf("full holds %v", entries)
	}
	for _, d := range []string{"a", "b", "c", "d"} {
		if _, err := os.Stat(filepath.Join(tmp, d)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was created: %v", d, err)
		}
	}
}

func make65() []byte {
	b := make([]byte, 65)
	for i := range b {
		b[i] = 'a'
	}
	return b
}

// An existing empty directory is written into.
func TestWriteIntoAnEmptyDirectory(t *testing.T) {
	dir := t.TempDir()
	got, err := Write("alerts.prom", C, dir)
	if err != nil || !slices.Contains(got, "timer.c") {
		t.Fatalf("Write = %v, %v", got, err)
	}
}

func TestDefaultDir(t *testing.T) {
	for kind, want := range map[string]string{
		"alerts.prom":        "prom",
		"timer":              "timer",
		"acme.deploy-window": "deploy-window",
		"a.b.":               "b",
		"x_y":                "x_y",
	} {
		if got, err := DefaultDir(kind); err != nil || got != want {
			t.Errorf("DefaultDir(%q) = %q, %v; want %q", kind, got, err, want)
		}
	}
	for kind, want := range map[string]error{"...": ErrNoDir, ".": ErrNoDir, "A": ErrKind, "": ErrKind} {
		if got, err := DefaultDir(kind); !errors.Is(err, want) {
			t.Errorf("DefaultDir(%q) = %q, %v; want %v", kind, got, err, want)
		}
	}
}

// A build left in a template's directory (a .wasm, the C unit test's
// binary, node_modules) is never written into a plugin.
func TestWriteSkipsBuiltFiles(t *testing.T) {
	fsys := fstest.MapFS{
		"Makefile":                        {Data: []byte("WASM := " + Token + ".wasm\n")},
		"_main.go":                        {Data: []byte("package main\n")},
		Token + ".wasm":                   {Data: []byte("\x00asm")},
		"timer_test":                      {Data: []byte("ELF")},
		"node_modules/assemblyscript/x":   {Data: []byte("x")},
		"build/timer.test.wasm":           {Data: []byte("\x00asm")},
		"testdata/conformance/at.json":    {Data: []byte("{}")},
		"assembly/index.ts":               {Data: []byte("// " + Token)},
		"third_party/vigil-sdk/go.mod":    {Data: []byte("module x")},
		"testdata/conformance/sub/x.json": {Data: []byte("{}")},
	}
	dir := filepath.Join(t.TempDir(), "p")
	got, err := write("alerts.prom", dir, []tree{{fsys: fsys, replace: true}})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := []string{"Makefile", "assembly/index.ts", "main.go", "testdata/conformance/at.json", "testdata/conformance/sub/x.json"}
	if !slices.Equal(got, want) {
		t.Fatalf("wrote %v, want %v", got, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "Makefile")); string(b) != "WASM := alerts.prom.wasm\n" {
		t.Fatalf("Makefile = %q", b)
	}
}

// A write that fails part way removes what it created, and leaves a
// directory it did not create in place.
func TestWriteRemovesWhatItMadeOnFailure(t *testing.T) {
	fsys := fstest.MapFS{
		"a.txt":   {Data: []byte("a")},
		"sub/b":   {Data: []byte("b")},
		"sub/bad": {Data: []byte("c"), Mode: 0o644},
	}
	dir := filepath.Join(t.TempDir(), "p")
	// The second tree writes a file the first one wrote: O_EXCL refuses it.
	_, err := write("alerts.prom", dir, []tree{{fsys: fsys}, {fsys: fstest.MapFS{"a.txt": {Data: []byte("again")}}}})
	if !errors.Is(err, os.ErrExist) {
		t.Fatalf("err = %v, want a refusal to write over a.txt", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s left behind: %v", dir, err)
	}

	empty := t.TempDir()
	if _, err := write("alerts.prom", empty, []tree{{fsys: fsys}, {fsys: fstest.MapFS{"a.txt": {Data: []byte("again")}}}}); err == nil {
		t.Fatal("no error")
	}
	if entries, err := os.ReadDir(empty); err != nil || len(entries) != 0 {
		t.Fatalf("%s holds %v (%v)", empty, entries, err)
	}
}

// A tree written verbatim (the SDK's source) is written whole, a directory
// named like a build's included.
func TestWriteCopiesAVerbatimTreeWhole(t *testing.T) {
	fsys := fstest.MapFS{"build/x.go": {Data: []byte("package build // " + Token)}}
	dir := filepath.Join(t.TempDir(), "p")
	got, err := write("alerts.prom", dir, []tree{{fsys: fsys, under: "third_party/m"}})
	if err != nil || !slices.Equal(got, []string{"third_party/m/build/x.go"}) {
		t.Fatalf("wrote %v, %v", got, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "third_party", "m", "build", "x.go")); string(b) != "package build // "+Token {
		t.Fatalf("x.go = %q", b)
	}
}
