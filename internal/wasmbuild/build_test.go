package wasmbuild

import (
	"os"
	"path/filepath"
	"testing"
)

func TestGoVersionOfTheBundledTimer(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "plugins", "timer", "timer.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := GoVersion(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) < 4 || v[:3] != "go1" {
		t.Fatalf("version %q", v)
	}
}

func TestGoVersionRefuses(t *testing.T) {
	for _, b := range [][]byte{nil, []byte("\x00asm"), []byte("not wasm at all"), []byte("\x00asm\x01\x00\x00\x00\x00\x05"), []byte("\x00asm\x01\x00\x00\x00")} {
		if v, err := GoVersion(b); err == nil {
			t.Errorf("%q: got %q", b, v)
		}
	}
}

// FuzzGoVersion: any bytes, no panic.
func FuzzGoVersion(f *testing.F) {
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x00\x0a\x09producers"))
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = GoVersion(b) })
}
