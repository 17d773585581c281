package store

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

type seqReader struct{ r *rand.ChaCha8 }

func (s seqReader) Read(p []byte) (int, error) { return s.r.Read(p) }

func newIDs() seqReader { return seqReader{rand.NewChaCha8([32]byte{1})} }

func TestIDRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var id ID
		copy(id[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "id"))
		s := id.String()
		if len(s) != 26 {
			t.Fatalf("%q", s)
		}
		back, err := ParseID(s)
		if err != nil || back != id {
			t.Fatalf("%x -> %s -> %x %v", id, s, back, err)
		}
		if upper, err := ParseID(strings.ToUpper(s)); err != nil || upper != id {
			t.Fatalf("upper case: %v", err)
		}
	})
}

func TestIDsSortByTime(t *testing.T) {
	ids := newIDs()
	a, _ := NewID(t0, ids)
	b, _ := NewID(t0.Add(time.Millisecond), ids)
	if !(a.String() < b.String()) || bytes.Compare(a[:], b[:]) >= 0 || !a.Time().Equal(t0) {
		t.Fatalf("%s %s %v", a, b, a.Time())
	}
}

func FuzzParseID(f *testing.F) {
	f.Add("01jdx3m5z8a8w0q6v4f1r2n3p4")
	f.Add("zzzzzzzzzzzzzzzzzzzzzzzzzz")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseID(s)
		if err != nil {
			return
		}
		if !strings.EqualFold(id.String(), s) {
			t.Fatalf("%q parsed to %s", s, id)
		}
	})
}

// A row of a newer schema version is held aside even when every field it
// has is one this build knows: the same field may mean something else.
func TestNewerRowVersionIsHeldAside(t *testing.T) {
	id, err := NewID(t0, newIDs())
	if err != nil {
		t.Fatal(err)
	}
	exp := t0.Add(time.Minute)
	w := Watch{ID: id, Kind: "timer", Params: []byte(`{}`), Recipient: Recipient{ID: "a"}, State: Pending, Receipt: ReceiptNone, CreatedAt: t0, ExpiresAt: &exp}
	b, err := EncodeRow(w)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte(`{"v":1,`), []byte(`{"v":2,`), 1)
	if _, err := DecodeRow(w.ID[:], b); err == nil {
		t.Fatalf("decoded a v2 row: %s", b)
	}
	var ue *UnreadableError
	if _, err := DecodeRow(w.ID[:], b); !errors.As(err, &ue) || !strings.Contains(err.Error(), "version 2") {
		t.Fatalf("err = %v", err)
	}
}
