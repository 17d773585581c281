package natsstore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/vigilhq/vigil/store"
)

// Every family's key reads back as the record it was made of, a hashed
// name through the names learnt.
func TestRecordKeysRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		fam := rapid.SampledFrom(store.Families).Draw(t, "family")
		name := rapid.OneOf(rapid.StringN(0, 30, -1), rapid.Just(strings.Repeat("n", 200))).Draw(t, "name")
		var id store.ID
		copy(id[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "id"))
		r := store.Record{Family: fam}
		switch fam {
		case store.FamRow, store.FamWork:
			r.ID = id
		case store.FamState:
			r.Sub, r.ID = "pending", id
		case store.FamRecipientIndex, store.FamPendingKind:
			r.Name, r.ID = name, id
		case store.FamSubject, store.FamMailSeq, store.FamEventSeq, store.FamWorkOwner, store.FamRouter, store.FamRecipient:
			r.Name = name
		case store.FamMessage, store.FamPush, store.FamLivePush, store.FamEvent:
			r.Name, r.Seq = name, rapid.Uint64().Draw(t, "seq")
		case store.FamSettledAt:
			r.At, r.ID = rapid.Int64().Draw(t, "at"), id
		case store.FamMessageAt, store.FamPushAt:
			r.At, r.Name, r.Seq = rapid.Int64().Draw(t, "at"), name, rapid.Uint64().Draw(t, "seq")
		case store.FamEventKey:
			r.Name, r.Sub = name, rapid.String().Draw(t, "key")
		case store.FamIdem, store.FamIdemAt:
			r.Name, r.Sub = name, rapid.StringMatching(`[!-~]{1,255}`).Draw(t, "key")
			if fam == store.FamIdemAt {
				r.At = rapid.Int64().Draw(t, "at")
			}
		case store.FamWorkInput:
			r.ID, r.Seq = id, uint64(rapid.Uint32().Draw(t, "n"))
		case store.FamWorkScope:
			r.Name, r.Sub, r.ID = name, "open", id
		}
		k, err := natsKey(r)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]string{}
		for _, n := range []string{r.Name, r.Sub} {
			if tk := tok(n); strings.HasPrefix(tk, "=h") {
				names[tk] = n
			}
		}
		got, err := parseNatsKey(k, names)
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("key %q reads as %+v %v, want %+v", k, got, err, r)
		}
		if strings.Contains(k, "=h") {
			if _, err := parseNatsKey(k, nil); !errors.Is(err, ErrUntranslatable) {
				t.Fatalf("key %q with no names: %v, want ErrUntranslatable", k, err)
			}
		}
	})
}

// Any key parses as a record or is refused as of no known family or
// untranslatable; it never panics.
func TestRecordKeysParseAnything(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOfN(rapid.StringMatching(`[A-Za-z0-9=_-]{0,20}`), 0, 4).Draw(t, "parts")
		fam := rapid.SampledFrom([]string{"w", "s", "r", "pk", "mb", "ma", "ek", "wi", "wsc", "ik", "ia", "zz"}).Draw(t, "family")
		k := strings.Join(append([]string{fam}, parts...), ".")
		if _, err := parseNatsKey(k, nil); err != nil && !errors.Is(err, store.ErrUnknownRecord) && !errors.Is(err, ErrUntranslatable) {
			t.Fatalf("key %q: %v", k, err)
		}
	})
}

// One import of more records than a batch holds is split into batches
// the server takes.
func TestImportSplitsIntoBatches(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, Config{}, runServer(t))
	recs := make([]store.Record, 2*maxBatch+1)
	for i := range recs {
		recs[i] = store.Record{Family: store.FamRecipient, Name: fmt.Sprint("r", i), Value: []byte(`{}`)}
	}
	if err := s.ImportRecords(ctx, recs); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := s.ExportRecords(ctx, func(store.Record) error { n++; return nil }); err != nil || n != len(recs) {
		t.Fatalf("exported %d of %d: %v", n, len(recs), err)
	}
}
