package note

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	if got := Clip("short"); got != "short" {
		t.Fatalf("short: %q", got)
	}
	long := strings.Repeat("é", 40) // 80 bytes
	got := Clip(long)
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "…") || len(got) > Max+len("…") {
		t.Fatalf("long: %q", got)
	}
}
