//go:build !wasm

package sdk

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// moduleFiles lists what Source must hold, read from the module's
// directory: go.mod, every non-test .go file and the schemas that
// abi/schema embeds, outside testdata and outside nested modules (a
// directory with its own go.mod).
func moduleFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && (d.Name() == "testdata" || exists(filepath.Join(p, "go.mod"))) {
				return fs.SkipDir
			}
			return nil
		}
		embedded := path.Dir(filepath.ToSlash(p)) == "abi/schema" && strings.HasSuffix(p, ".json")
		if p == "go.mod" || embedded || (strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go")) {
			files = append(files, filepath.ToSlash(p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	return files
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func sourceFiles(t *testing.T, fsys fs.FS) []string {
	t.Helper()
	var files []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	return files
}

// Source holds exactly the module's go.mod, non-test Go files and
// embedded schemas, byte for byte: a package added to the module without its pattern in
// source.go's go:embed fails here.
func TestSourceIsTheModule(t *testing.T) {
	want := moduleFiles(t)
	got := sourceFiles(t, Source())
	if !slices.Equal(got, want) {
		t.Fatalf("Source() holds\n  %s\nthe module has\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	for _, f := range want {
		b, err := fs.ReadFile(Source(), f)
		if err != nil {
			t.Fatal(err)
		}
		disk, err := os.ReadFile(filepath.FromSlash(f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, disk) {
			t.Errorf("%s differs from the file on disk", f)
		}
	}
}

// Test files are hidden however they are asked for: opened by name, read
// by name, listed by the FS or by an opened directory, one at a time.
func TestSourceHidesTests(t *testing.T) {
	src := Source()
	if _, err := src.Open("sdk_test.go"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("open sdk_test.go: %v", err)
	}
	if _, err := fs.ReadFile(src, "abi/abi_test.go"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("read abi/abi_test.go: %v", err)
	}
	d, err := src.Open(".")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	dir, ok := d.(fs.ReadDirFile)
	if !ok {
		t.Fatalf("%T is no directory", d)
	}
	var names []string
	for {
		entries, err := dir.ReadDir(1)
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if err != nil {
			break
		}
	}
	if len(names) == 0 || !slices.Contains(names, "sdk.go") {
		t.Fatalf("listed %v", names)
	}
	for _, n := range names {
		if isTest(n) {
			t.Fatalf("listed %s", n)
		}
	}
}

// Written into a directory, Source is a module that builds, natively and
// for wasip1, with no network and nothing but the standard library: what
// a generated plugin's replace directive points at.
func TestSourceBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the SDK twice")
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, Source()); err != nil {
		t.Fatal(err)
	}
	for _, env := range [][]string{nil, {"GOOS=wasip1", "GOARCH=wasm"}} {
		cmd := exec.Command(goCmd(), "build", "./...")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), append([]string{"GOPROXY=off", "GOFLAGS=-mod=mod", "GOWORK=off", "CGO_ENABLED=0"}, env...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v go build ./... in the written source: %v\n%s", env, err, out)
		}
	}
}

// goCmd is the go command: the one on PATH, else the running toolchain's.
func goCmd() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}
