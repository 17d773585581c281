package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/vigilhq/vigil/store"
)

// dropPendingKinds deletes the pending-by-kind index and its marker, as
// a store an older build wrote has neither.
func dropPendingKinds(t *testing.T, s *store.Store) {
	t.Helper()
	var keys []store.Key
	if err := s.KV().View(context.Background(), func(tx store.Tx) error {
		return tx.Scan(store.Range{Prefix: store.Key{Fam: store.FamPendingKind}, KeysOnly: true}, func(k store.Key, _ []byte) (bool, error) {
			keys = append(keys, k)
			return true, nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	raw(t, s, func(tx store.Tx) {
		for _, k := range append(keys, store.Key{Fam: store.FamMarker, Name: "pkv"}) {
			tx.Delete(k)
		}
	})
}

func countKinds(t *testing.T, s *store.Store) map[string]int {
	t.Helper()
	got, err := s.CountPendingByKind(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// A store an older build wrote has no pending-by-kind entries: Open
// indexes its pending rows, over more than one batch, leaving out the
// settled and the held-aside ones, and writes the marker, after which a
// later Open indexes nothing again.
func TestOpenBackfillsThePendingByKindIndex(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	ctx := context.Background()
	ids := newIDs()
	timers := 1000 + 500 // more than one batch of the backfill
	for range timers {
		createdWatch(t, s, ids, "a", t0)
	}
	pr := pendingWatch(t, ids, "a", t0)
	pr.Kind = "github_pr"
	if err := s.Create(ctx, pr); err != nil {
		t.Fatal(err)
	}
	gone := createdWatch(t, s, ids, "a", t0)
	if _, err := s.Settle(ctx, gone.ID, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0}); err != nil {
		t.Fatal(err)
	}
	holdAside(t, s, pendingWatch(t, ids, "a", t0))
	want := map[string]int{"timer": timers, "github_pr": 1}
	if got := countKinds(t, s); got["timer"] != timers || got["github_pr"] != 1 || len(got) != 2 {
		t.Fatalf("as written: %v, want %v", got, want)
	}
	dropPendingKinds(t, s)
	if got := countKinds(t, s); len(got) != 0 {
		t.Fatalf("dropped: %v", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openTest(t, dir)
	if got := countKinds(t, s); got["timer"] != timers || got["github_pr"] != 1 || len(got) != 2 {
		t.Fatalf("backfilled: %v, want %v", got, want)
	}
	// The marker is written: an entry lost now is not rebuilt by a
	// second Open, which walks nothing.
	raw(t, s, func(tx store.Tx) { tx.Delete(store.Key{Fam: store.FamPendingKind, Name: pr.Kind, ID: pr.ID}) })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir)
	if got := countKinds(t, s); got["github_pr"] != 0 || got["timer"] != timers {
		t.Fatalf("a second Open walked again: %v", got)
	}
}

// A kind holding any bytes, a '/' included, is counted whole: the id is
// the key's last 16 bytes.
func TestPendingByKindReadsTheKindWhole(t *testing.T) {
	s := openTest(t, t.TempDir())
	ids := newIDs()
	for _, k := range []string{"a", "a/b", "a/"} {
		w := pendingWatch(t, ids, "r", t0.Add(time.Second))
		w.Kind = k
		if err := s.Create(context.Background(), w); err != nil {
			t.Fatal(err)
		}
	}
	if got := countKinds(t, s); len(got) != 3 || got["a"] != 1 || got["a/b"] != 1 || got["a/"] != 1 {
		t.Fatalf("%v", got)
	}
}
