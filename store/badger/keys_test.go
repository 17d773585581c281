package badger

import (
	"bytes"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/kvtest"
)

// goldenKeys reads testdata/keys.tsv: a key of each family as the
// release before the seam wrote it, from its own key functions.
func goldenKeys(t *testing.T) ([]store.Key, [][]byte) {
	t.Helper()
	keys, written := kvtest.Golden(t, "testdata/keys.tsv")
	raw := make([][]byte, len(written))
	for i, w := range written {
		b, err := hex.DecodeString(w)
		if err != nil {
			t.Fatal(err)
		}
		raw[i] = b
	}
	return keys, raw
}

// Every family's key is the bytes the release before the seam wrote, and
// those bytes read back as the key: a data directory written then opens
// and reads as before, with no migration.
func TestTheLayoutIsTheOneWrittenBefore(t *testing.T) {
	keys, raw := goldenKeys(t)
	if len(keys) != len(store.Families) {
		t.Fatalf("%d golden keys for %d families", len(keys), len(store.Families))
	}
	for i, k := range keys {
		got, err := keyOf(k)
		if err != nil || !bytes.Equal(got, raw[i]) {
			t.Errorf("%s: %x %v, written before as %x", k.Fam, got, err, raw[i])
		}
		p, ok := parseKey(raw[i])
		if !ok || store.Compare(p.key(), k) != 0 || p.key() != k {
			t.Errorf("%s: %x reads as %+v %v, want %+v", k.Fam, raw[i], p.key(), ok, k)
		}
	}
}

// Every key reads back as the key it was made of, and a prefix of its
// first parts is a prefix of its bytes.
func TestKeysRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := kvtest.AnyKey(t, false)
		b, err := keyOf(k)
		if p, ok := parseKey(b); err != nil || !ok || p.key() != k {
			t.Fatalf("key %q (%v) reads as %+v %v, want %+v", b, err, p.key(), ok, k)
		}
		for n := range len(k.Fam.Parts()) {
			pfx, err := appendKey(nil, k, n)
			if err != nil || !bytes.HasPrefix(b, pfx) {
				t.Fatalf("the prefix of %d parts %q is not %q's", n, pfx, b)
			}
		}
	})
}

// Any key at all reads back as a key or is refused; it never panics.
func FuzzParseKey(f *testing.F) {
	b, err := os.ReadFile("testdata/keys.tsv")
	if err != nil {
		f.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		raw, err := hex.DecodeString(line[strings.LastIndexByte(line, '\t')+1:])
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Add([]byte("v"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if p, ok := parseKey(b); ok {
			if again, err := keyOf(p.key()); err != nil || !bytes.Equal(again, b) {
				t.Fatalf("%q reads as %+v, which is %q", b, p.key(), again)
			}
		}
	})
}

// No family's prefix begins another's, nor a marker or the version's key:
// a scan reads every key under a family's prefix as that family's.
func TestNoPrefixBeginsAnother(t *testing.T) {
	var all []string
	for _, l := range layouts {
		if l.pfx != "" {
			all = append(all, l.pfx)
		}
	}
	others := []string{string(versionKey)}
	others = append(others, store.Markers()...)
	for i, a := range all {
		for j, b := range all {
			if i != j && strings.HasPrefix(b, a) {
				t.Errorf("%q begins %q", a, b)
			}
		}
		for _, o := range others {
			if strings.HasPrefix(o, a) {
				t.Errorf("%q begins %q", a, o)
			}
		}
	}
}
