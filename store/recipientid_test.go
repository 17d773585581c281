package store

import (
	"regexp"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestValidRecipientID(t *testing.T) {
	for _, tt := range []struct {
		name string
		id   string
		want bool
	}{
		{"letters and digits", "agent7", true},
		{"every punctuation allowed", "a.b_c-d:e@f", true},
		{"at the bound", strings.Repeat("a", 128), true},
		{"empty", "", false},
		{"past the bound", strings.Repeat("a", 129), false},
		{"a space", "a b", false},
		{"a slash", "a/b", false},
		{"non-ASCII", "agént", false},
		{"a NUL", "a\x00", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := ValidRecipientID(tt.id); got != tt.want {
				t.Fatalf("ValidRecipientID(%q) = %v, want %v", tt.id, got, tt.want)
			}
		})
	}
}

// The grammar is exactly RecipientIDGrammar's: 1 to 128 of letters,
// digits and . _ - : @, for any string.
func TestValidRecipientIDIsItsGrammar(t *testing.T) {
	grammar := regexp.MustCompile(`^[A-Za-z0-9._:@-]{1,128}$`)
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(
			rapid.String(),
			rapid.StringMatching(`[A-Za-z0-9._:@-]{0,130}`),
		).Draw(t, "id")
		if got, want := ValidRecipientID(s), grammar.MatchString(s); got != want {
			t.Fatalf("ValidRecipientID(%q) = %v, the grammar says %v", s, got, want)
		}
	})
}

func FuzzValidRecipientID(f *testing.F) {
	grammar := regexp.MustCompile(`^[A-Za-z0-9._:@-]{1,128}$`)
	for _, s := range []string{"", "a", "a.b_c-d:e@f", strings.Repeat("z", 129), "a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ValidRecipientID(s), grammar.MatchString(s); got != want {
			t.Fatalf("ValidRecipientID(%q) = %v, the grammar says %v", s, got, want)
		}
	})
}
