package api

import (
	"errors"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestParseIdempotencyKey(t *testing.T) {
	long := strings.Repeat("k", MaxIdempotencyKey)
	for _, tt := range []struct {
		in, want string
		ok       bool
	}{
		{"8e03978e-40d5-43e8-bc93-6894a57f9324", "8e03978e-40d5-43e8-bc93-6894a57f9324", true},
		{`"8e03978e-40d5-43e8-bc93-6894a57f9324"`, "8e03978e-40d5-43e8-bc93-6894a57f9324", true},
		{`  "k"  `, "k", true},
		{`"a\"b\\c"`, `a"b\c`, true},
		{long, long, true},
		{`"` + long + `"`, long, true},
		{"", "", false},
		{`""`, "", false},
		{"a b", "", false},      // a space is not visible
		{`"a b"`, "", false},    // not inside quotes either
		{long + "k", "", false}, // over the bound
		{"k\x7f", "", false},
		{"kä", "", false},
		{`"k`, "", false},    // unclosed
		{`"k"x`, "", false},  // after the closing quote
		{`"k\n"`, "", false}, // an escape of another byte
		{`"k\`, "", false},
	} {
		got, err := ParseIdempotencyKey(tt.in)
		if tt.ok && (err != nil || got != tt.want) {
			t.Errorf("%q: %q %v, want %q", tt.in, got, err, tt.want)
		}
		if !tt.ok && !errors.Is(err, ErrIdempotencyKey) {
			t.Errorf("%q: %q %v, want ErrIdempotencyKey", tt.in, got, err)
		}
	}
}

// A key, bare or formatted as the header's quoted string, reads back as
// itself; whatever is read is a valid key.
func TestIdempotencyKeyRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := rapid.StringMatching(`[!-~]{1,255}`).Draw(t, "key")
		for _, v := range []string{FormatIdempotencyKey(k), " " + FormatIdempotencyKey(k) + "\t"} {
			if got, err := ParseIdempotencyKey(v); err != nil || got != k {
				t.Fatalf("%q reads as %q %v, want %q", v, got, err, k)
			}
		}
		if !strings.HasPrefix(k, `"`) {
			if got, err := ParseIdempotencyKey(k); err != nil || got != k {
				t.Fatalf("bare %q reads as %q %v", k, got, err)
			}
		}
	})
}

// Any header value is read as a valid key or refused as ErrIdempotencyKey.
func FuzzParseIdempotencyKey(f *testing.F) {
	for _, s := range []string{"k", `"k"`, `"a\"b"`, `"`, `\`, `"k"x`, strings.Repeat("k", 256), "a b", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		k, err := ParseIdempotencyKey(v)
		switch {
		case err == nil && !ValidIdempotencyKey(k):
			t.Fatalf("%q read as the invalid key %q", v, k)
		case err != nil && !errors.Is(err, ErrIdempotencyKey):
			t.Fatalf("%q: %v", v, err)
		case err == nil:
			if again, err := ParseIdempotencyKey(FormatIdempotencyKey(k)); err != nil || again != k {
				t.Fatalf("%q formatted reads as %q %v", k, again, err)
			}
		}
	})
}
