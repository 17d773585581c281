package captoken

import (
	"bytes"
	"crypto/rand"
	"strings"
	"testing"
)

func TestNewParses(t *testing.T) {
	tok, err := New(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if len(tok) != Len {
		t.Fatalf("token %q: %d characters, want %d", tok, len(tok), Len)
	}
	if got, err := Parse(tok); err != nil || got != tok {
		t.Fatalf("Parse(%q) = %q, %v", tok, got, err)
	}
	other, _ := New(rand.Reader)
	if other == tok {
		t.Fatal("two tokens alike")
	}
}

func TestNewFromTheReader(t *testing.T) {
	a, _ := New(bytes.NewReader(make([]byte, Size)))
	if a != "AAAAAAAAAAAAAAAAAAAAAA" {
		t.Fatalf("token of zero bytes = %q", a)
	}
	if _, err := New(bytes.NewReader(make([]byte, Size-1))); err == nil {
		t.Fatal("a short reader made a token")
	}
}

func TestParseRefusesOtherForms(t *testing.T) {
	for _, s := range []string{"", "short", strings.Repeat("A", Len+1), strings.Repeat("A", Len-1) + "=",
		strings.Repeat("A", Len-1) + "+", strings.Repeat("A", Len-1) + "B", // a non-canonical last character
		"../../../../etc/passwd.....", strings.Repeat("é", Len/2)} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) took it", s)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("AAAAAAAAAAAAAAAAAAAAAA")
	f.Add("")
	f.Add(strings.Repeat("_", Len))
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Parse(s)
		if err != nil {
			return
		}
		if got != s || len(s) != Len {
			t.Fatalf("Parse(%q) = %q", s, got)
		}
	})
}
