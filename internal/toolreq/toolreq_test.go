package toolreq

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeTB records what Need and ASC do with a test.
type fakeTB struct {
	skipped, failed string
}

func (f *fakeTB) Helper()                        {}
func (f *fakeTB) Skipf(format string, a ...any)  { f.skipped = fmt.Sprintf(format, a...) }
func (f *fakeTB) Fatalf(format string, a ...any) { f.failed = fmt.Sprintf(format, a...) }

// A PATH with one program on it, so the test needs no real tool.
func pathWith(t *testing.T, names ...string) {
	dir := t.TempDir()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
}

func TestNeedFindsTheTools(t *testing.T) {
	pathWith(t, "clang", "wasm-ld")
	t.Setenv(RequireEnv, "1")
	var tb fakeTB
	got := Need(&tb, Clang, WasmLd)
	if len(got) != 2 || filepath.Base(got[0]) != "clang" || filepath.Base(got[1]) != "wasm-ld" || tb.skipped != "" || tb.failed != "" {
		t.Fatalf("got %v, %+v", got, tb)
	}
}

func TestNeedSkipsNamingTheMissingTool(t *testing.T) {
	pathWith(t, "clang")
	t.Setenv(RequireEnv, "")
	var tb fakeTB
	if got := Need(&tb, Clang, WasmLd); got != nil {
		t.Fatalf("got %v", got)
	}
	if tb.failed != "" || !strings.Contains(tb.skipped, "wasm-ld is not on PATH (apt-get install lld)") {
		t.Fatalf("%+v", tb)
	}
}

func TestNeedFailsUnderRequire(t *testing.T) {
	pathWith(t, "clang")
	t.Setenv(RequireEnv, "1")
	var tb fakeTB
	if got := Need(&tb, Clang, WasmLd); got != nil {
		t.Fatalf("got %v", got)
	}
	if tb.skipped != "" || !strings.Contains(tb.failed, "wasm-ld is not on PATH") || !strings.Contains(tb.failed, RequireEnv+"=1") {
		t.Fatalf("%+v", tb)
	}
}

func TestASC(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // ASCPrefix, under a temporary directory of the test's own
	pathWith(t)
	t.Setenv(ASCEnv, "")

	t.Run("missing skips", func(t *testing.T) {
		t.Setenv(RequireEnv, "")
		var tb fakeTB
		if got := ASC(&tb); got != "" || !strings.Contains(tb.skipped, "the AssemblyScript compiler (asc)") || tb.failed != "" {
			t.Fatalf("%q %+v", got, tb)
		}
	})
	t.Run("missing fails under require", func(t *testing.T) {
		t.Setenv(RequireEnv, "1")
		var tb fakeTB
		if got := ASC(&tb); got != "" || tb.failed == "" || tb.skipped != "" {
			t.Fatalf("%q %+v", got, tb)
		}
	})
	t.Run("a VIGIL_ASC naming nothing fails under require", func(t *testing.T) {
		t.Setenv(RequireEnv, "1")
		t.Setenv(ASCEnv, filepath.Join(tmp, "nothing"))
		var tb fakeTB
		if got := ASC(&tb); got != "" || !strings.Contains(tb.failed, "names no file") {
			t.Fatalf("%q %+v", got, tb)
		}
	})
	t.Run("found in the prefix", func(t *testing.T) {
		t.Setenv(RequireEnv, "1")
		bin := filepath.Join(ASCPrefix(), "node_modules", ".bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bin, "asc"), nil, 0o755); err != nil {
			t.Fatal(err)
		}
		var tb fakeTB
		if got := ASC(&tb); got != filepath.Join(bin, "asc") || tb.failed != "" || tb.skipped != "" {
			t.Fatalf("%q %+v", got, tb)
		}
	})
}

// Missing skips saying why, or fails under VIGIL_REQUIRE_TOOLS=1.
func TestMissingSkipsOrFailsUnderRequire(t *testing.T) {
	for _, require := range []string{"", "1"} {
		t.Setenv(RequireEnv, require)
		var tb fakeTB
		Missing(&tb, "cannot mount a tmpfs")
		switch {
		case require == "" && (tb.failed != "" || !strings.Contains(tb.skipped, "cannot mount a tmpfs")):
			t.Fatalf("without %s: %+v, want a skip naming why", RequireEnv, tb)
		case require == "1" && (tb.skipped != "" || !strings.Contains(tb.failed, "cannot mount a tmpfs")):
			t.Fatalf("with %s=1: %+v, want a failure naming why", RequireEnv, tb)
		}
	}
}
