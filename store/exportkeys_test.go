package store

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

// genRecord draws a record of any family with the parts its key holds.
func genRecord(t *rapid.T) Record {
	fam := rapid.SampledFrom(Families).Draw(t, "family")
	r := Record{Family: fam}
	name := rapid.StringN(0, 40, -1).Filter(func(s string) bool {
		for i := 0; i < len(s); i++ {
			if s[i] == 0 {
				return false
			}
		}
		return true
	})
	var id ID
	copy(id[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "id"))
	switch fam {
	case FamRow, FamWork:
		r.ID = id
	case FamState:
		r.Sub, r.ID = rapid.SampledFrom([]string{"pending", "fired", "snoozed"}).Draw(t, "state"), id
	case FamRecipientIndex, FamPendingKind:
		r.Name, r.ID = name.Draw(t, "name"), id
	case FamSubject, FamMailSeq, FamEventSeq, FamWorkOwner, FamRouter, FamRecipient:
		r.Name = name.Draw(t, "name")
	case FamMessage, FamPush, FamLivePush, FamEvent:
		r.Name, r.Seq = name.Draw(t, "name"), rapid.Uint64().Draw(t, "seq")
	case FamSettledAt:
		r.At, r.ID = rapid.Int64().Draw(t, "at"), id
	case FamMessageAt, FamPushAt:
		r.At, r.Name, r.Seq = rapid.Int64().Draw(t, "at"), name.Draw(t, "name"), rapid.Uint64().Draw(t, "seq")
	case FamEventKey:
		r.Name, r.Sub = name.Draw(t, "stream"), rapid.String().Draw(t, "key")
	case FamIdem, FamIdemAt:
		r.Name, r.Sub = name.Draw(t, "principal"), rapid.StringMatching(`[!-~]{1,40}`).Draw(t, "key")
		if fam == FamIdemAt {
			r.At = rapid.Int64().Draw(t, "at")
		}
	case FamWorkInput:
		r.ID, r.Seq = id, uint64(rapid.Uint32().Draw(t, "n"))
	case FamWorkScope:
		r.Name, r.Sub, r.ID = name.Draw(t, "scope"), rapid.SampledFrom([]string{"open", "done"}).Draw(t, "state"), id
	}
	return r
}

// Every family's key reads back as the record it was made of.
func TestBadgerRecordKeysRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := genRecord(t)
		k, err := badgerKey(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := parseBadgerKey(k)
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("key %q reads as %+v %v, want %+v", k, got, err, r)
		}
	})
}

// Any key at all parses as a record or is refused as of no known family;
// it never panics.
func TestBadgerRecordKeysParseAnything(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := rapid.SliceOfN(rapid.Byte(), 0, 60).Draw(t, "key")
		if pfx := rapid.SampledFrom([]string{"", "w/", "s/", "r/", "pk/", "mb/", "ma/", "ek/", "wi/", "wsc/"}).Draw(t, "prefix"); pfx != "" {
			k = append([]byte(pfx), k...)
		}
		if _, err := parseBadgerKey(k); err != nil && !errors.Is(err, ErrUnknownRecord) {
			t.Fatalf("key %q: %v", k, err)
		}
	})
}

func TestImportRefusesAnUnknownFamily(t *testing.T) {
	if _, err := badgerKey(Record{Family: "bogus"}); !errors.Is(err, ErrUnknownRecord) {
		t.Fatalf("a record of no family: %v", err)
	}
}

// An import too large for one transaction is written in parts.
func TestImportSplitsATooLargeBatch(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	big := make([]byte, 64<<10)
	recs := make([]Record, 100) // 6.4 MB, past badger's transaction limit at a 16 MB memtable
	for i := range recs {
		recs[i] = Record{Family: FamRecipient, Name: string(rune('a'+i%26)) + string(rune('a'+i/26)), Value: big}
	}
	if err := s.ImportRecords(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := s.ExportRecords(context.Background(), func(Record) error { n++; return nil }); err != nil || n != len(recs) {
		t.Fatalf("exported %d of %d: %v", n, len(recs), err)
	}
}
