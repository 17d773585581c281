package natsstore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestAFenceWithoutACarrierRewritesItsKey: a transition that fences a
// key and writes only keys it read (no blind write to carry the fence)
// rewrites the fenced key as read, expected at its revision; a change to
// it in between refuses the commit, and without one the key keeps its
// value.
func TestAFenceWithoutACarrierRewritesItsKey(t *testing.T) {
	ctx := context.Background()
	srv := runServer(t)
	a, b := openStore(t, Config{}, srv), openStore(t, Config{}, srv)
	put := func(s testStore, key, val string) {
		t.Helper()
		if err := s.update(ctx, "test", func(tx *txn) error {
			if _, err := tx.get(key); err != nil {
				return err
			}
			tx.put(key, []byte(val))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	put(a, "x.fenced", "1")
	put(a, "x.written", "1")
	for _, changed := range []bool{false, true} {
		tx := a.newTxn(ctx)
		if _, err := tx.get("x.fenced"); err != nil {
			t.Fatal(err)
		}
		tx.fence("x.fenced")
		if _, err := tx.get("x.written"); err != nil {
			t.Fatal(err)
		}
		tx.put("x.written", []byte("2"))
		if changed {
			put(b, "x.fenced", "changed")
		}
		err := tx.commit("test")
		if changed != errors.Is(err, errConflict) || (!changed && err != nil) {
			t.Fatalf("changed %v: commit %v", changed, err)
		}
	}
	e, err := b.last(ctx, "x.fenced")
	if err != nil || string(e.val) != "changed" {
		t.Fatalf("the fenced key holds %q: %v", e.val, err)
	}
}

// TestTokensAreKeyTokens: a free-form string becomes one subject token
// of the characters a key may hold, and a long one stays short.
func TestTokensAreKeyTokens(t *testing.T) {
	for _, s := range []string{"", "a", "a.b c*>", "ünïcode/\x00", string(make([]byte, 4096))} {
		tk := tok(s)
		if len(tk) == 0 || len(tk) > 160 {
			t.Fatalf("tok(%q) is %d long", s, len(tk))
		}
		for _, c := range tk {
			ok := c == '-' || c == '_' || c == '=' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
			if !ok {
				t.Fatalf("tok(%q) = %q holds %q", s, tk, c)
			}
		}
	}
	if tok("a") == tok("b") || tok(string(make([]byte, 4096))) == tok(string(make([]byte, 4097))) {
		t.Fatal("two strings share a token")
	}
}

// TestKeyPartsRoundTripAndSort: the time and sequence tokens keys are
// built of parse back to what made them and sort as their values do,
// and tokens of distinct strings differ.
func TestKeyPartsRoundTripAndSort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b := rapid.Int64().Draw(t, "a"), rapid.Int64().Draw(t, "b")
		ta, tb := timeTok(a), timeTok(b)
		if n, ok := parseTimeTok(ta); !ok || n != a {
			t.Fatalf("time %d: %q parses to %d %v", a, ta, n, ok)
		}
		if (a < b) != (ta < tb) {
			t.Fatalf("%d < %d is %v, their tokens %v", a, b, a < b, ta < tb)
		}
		u := rapid.Uint64().Draw(t, "u")
		if n, ok := parseHex16(hex16(u)); !ok || n != u {
			t.Fatalf("seq %d round-trips to %d %v", u, n, ok)
		}
		s1, s2 := rapid.String().Draw(t, "s1"), rapid.String().Draw(t, "s2")
		if s1 != s2 && tok(s1) == tok(s2) {
			t.Fatalf("%q and %q share a token", s1, s2)
		}
	})
}

// FuzzKeyParts: whatever another process left in a key, the parsers
// answer without panicking, and a sequence they accept prints back.
func FuzzKeyParts(f *testing.F) {
	f.Add("00000000000000ff")
	f.Add("w.01m8p570g04nwpgd1jr6zwa9a5")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		if n, ok := parseHex16(s); ok && hex16(n) != strings.ToLower(s) {
			t.Fatalf("%q parses to %d", s, n)
		}
		_, _ = parseTimeTok(s)
		_, _ = parseKey(s, nil)
	})
}
