package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// A cursor written is read back as itself; a file that holds anything but
// one whole number (and white space around it) is refused as a usage
// error, never read as some other cursor.
func TestCursorFileProperties(t *testing.T) {
	dir := t.TempDir()
	rapid.Check(t, func(t *rapid.T) {
		path := filepath.Join(dir, "c")
		seq := rapid.Uint64().Draw(t, "seq")
		if err := writeCursor(path, seq); err != nil {
			t.Fatal(err)
		}
		got, err := readCursor(path)
		if err != nil || got != seq {
			t.Fatalf("wrote %d, read %d (%v)", seq, got, err)
		}
		content := rapid.String().Draw(t, "content")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err = readCursor(path)
		want, perr := strconv.ParseUint(strings.TrimSpace(content), 10, 64)
		switch {
		case perr == nil && (err != nil || got != want):
			t.Fatalf("%q: read %d (%v), want %d", content, got, err, want)
		case perr != nil && exitCode(err) != ExitUsage:
			t.Fatalf("%q: read %d (%v), want a usage error", content, got, err)
		}
	})
	if got, err := readCursor(filepath.Join(dir, "absent")); err != nil || got != 0 {
		t.Fatalf("an absent file: %d %v, want 0", got, err)
	}
}
