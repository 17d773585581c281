package natsstore

import (
	"context"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/kvtest"
)

// Every family's key is the subject the release before the seam wrote,
// and reads back as its key (a long name as its hash, marked one way):
// a bucket written then opens and reads as before, with no migration.
func TestTheLayoutIsTheOneWrittenBefore(t *testing.T) {
	keys, raw := kvtest.Golden(t, "testdata/keys.tsv")
	for i, k := range keys {
		got, err := keyOf(k)
		if err != nil || got != raw[i] {
			t.Errorf("%s: %q %v, written before as %q", k.Fam, got, err, raw[i])
		}
		back, ok := parseKey(raw[i], valueOf(k, nil))
		want := k
		if t, oneWay := (&Store{}).OneWay(k.Name); oneWay {
			want.Name, want.OneWay = t, store.OneWayName
		}
		if !ok || back != want {
			t.Errorf("%s: %q reads as %+v %v, want %+v", k.Fam, raw[i], back, ok, want)
		}
	}
}

// Every key reads back as the key it was made of: a long name as its
// hash, marked one way, or as itself where the value carries it (the
// families of keys alone); the hash names the same key again.
func TestKeysRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := kvtest.AnyKey(t, true)
		key, err := keyOf(k)
		if err != nil {
			t.Fatal(err)
		}
		back, ok := parseKey(key, valueOf(k, nil))
		if !ok {
			t.Fatalf("key %q reads as nothing", key)
		}
		if back.OneWay == 0 && back != k {
			t.Fatalf("key %q reads as %+v, want %+v", key, back, k)
		}
		if again, err := keyOf(back); err != nil || again != key {
			t.Fatalf("key %q reads as %+v, whose key is %q %v", key, back, again, err)
		}
	})
}

// Any key reads back as a key or as none; it never panics.
func FuzzParseKey(f *testing.F) {
	f.Add("w.01m8p570g04nwpgd1jr6zwa9a5", []byte(nil))
	f.Add("ma.7ffffffffffffffb.cg.0000000000000002", []byte("r"))
	f.Add("ik.=hG-Y8wL3mvUXcuyBblqfmmRWTSP0bE2DhPCfhJ3VhisQ.a2V5LTE", []byte(nil))
	f.Fuzz(func(t *testing.T, key string, val []byte) {
		if k, ok := parseKey(key, val); ok {
			if _, err := keyOf(k); err != nil {
				t.Fatalf("%q reads as %+v, which has no key: %v", key, k, err)
			}
		}
	})
}

// One import of more keys than a batch holds is split into batches the
// server takes.
func TestImportSplitsIntoBatches(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, Config{}, runServer(t))
	kvs := make([]store.KeyValue, 2*maxBatch+1)
	for i := range kvs {
		kvs[i] = store.KeyValue{Key: store.Key{Fam: store.FamRecipient, Name: fmt.Sprint("r", i)}, Value: []byte(`{}`)}
	}
	if err := s.ImportKeys(ctx, kvs); err != nil {
		t.Fatal(err)
	}
	n := 0
	count := func(k store.Key, _ []byte) error {
		if k.Fam != store.FamMarker { // the store's own ("due", written at its open)
			n++
		}
		return nil
	}
	if err := s.ExportKeys(ctx, count); err != nil || n != len(kvs) {
		t.Fatalf("exported %d of %d: %v", n, len(kvs), err)
	}
}
