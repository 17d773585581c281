package plugin

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// wasmModule is a minimal binary module: the header, a custom section
// to step over, and an import section with the given entries (each a
// function import of type 0), then a trailing section.
func wasmModule(imps []wasmImport) []byte {
	leb := func(n int) []byte {
		var out []byte
		for {
			c := byte(n & 0x7f)
			n >>= 7
			if n != 0 {
				out = append(out, c|0x80)
				continue
			}
			return append(out, c)
		}
	}
	name := func(s string) []byte { return append(leb(len(s)), s...) }
	var sec []byte
	sec = append(sec, leb(len(imps))...)
	for _, im := range imps {
		sec = append(sec, name(im.module)...)
		sec = append(sec, name(im.name)...)
		sec = append(sec, 0, 0) // func, type 0
	}
	b := []byte("\x00asm\x01\x00\x00\x00")
	custom := append(name("note"), "anything"...)
	b = append(b, 0)
	b = append(b, leb(len(custom))...)
	b = append(b, custom...)
	b = append(b, 2)
	b = append(b, leb(len(sec))...)
	b = append(b, sec...)
	return append(b, 3, 1, 0) // a function section with no functions
}

func TestWasmImportsReadsTheImportSection(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		imps := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) wasmImport {
			return wasmImport{module: rapid.String().Draw(t, "module"), name: rapid.String().Draw(t, "name")}
		}), 0, 20).Draw(t, "imports")
		got, err := wasmImports(wasmModule(imps))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, imps) && !(len(got) == 0 && len(imps) == 0) {
			t.Fatalf("read %v, want %v", got, imps)
		}
	})
}

func TestCheckImportsNamesTheImport(t *testing.T) {
	ok := []wasmImport{{"extism:host/env", "input_length"}, {"extism:host/user", "vigil_fetch"}, {"wasi_snapshot_preview1", "fd_write"}}
	if err := checkImports(wasmModule(ok)); err != nil {
		t.Fatalf("the host's own modules refused: %v", err)
	}
	err := checkImports(wasmModule(append(ok, wasmImport{"env", "abort"})))
	if !errors.Is(err, ErrImport) {
		t.Fatalf("env.abort: %v, want ErrImport", err)
	}
	for _, want := range []string{"env.abort", "--use abort="} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("%q does not say %q", err, want)
		}
	}
	// A module it cannot read is the compiler's to refuse.
	if err := checkImports([]byte("not wasm")); err != nil {
		t.Fatalf("an unreadable module: %v", err)
	}
}

// FuzzWasmImports: any bytes are read without a panic, and what reads as
// a module reads the same again.
func FuzzWasmImports(f *testing.F) {
	f.Add(wasmModule([]wasmImport{{"env", "abort"}}))
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x02\xff\xff\xff\xff\x0f"))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, errA := wasmImports(b)
		c, errC := wasmImports(b)
		if (errA == nil) != (errC == nil) || !slices.Equal(a, c) {
			t.Fatal("two reads of the same bytes differ")
		}
	})
}
