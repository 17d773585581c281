package store

import (
	"context"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// dropPendingKinds deletes the pending-by-kind index and its marker, as
// a store an older build wrote has neither.
func dropPendingKinds(t *testing.T, s *Badger) {
	t.Helper()
	err := s.db.Update(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: pendingKindPfx})
		var keys [][]byte
		for it.Rewind(); it.Valid(); it.Next() {
			keys = append(keys, it.Item().KeyCopy(nil))
		}
		it.Close()
		for _, k := range append(keys, pendingKindsMarker) {
			if err := txn.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func countKinds(t *testing.T, s *Badger) map[string]int {
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
	timers := pendingKindsBatch + pendingKindsBatch/2
	for range timers {
		createdWatch(t, s, ids, "a", t0)
	}
	pr := pendingWatch(t, ids, "a", t0)
	pr.Kind = "github_pr"
	if err := s.Create(ctx, pr); err != nil {
		t.Fatal(err)
	}
	gone := createdWatch(t, s, ids, "a", t0)
	if _, err := s.Settle(ctx, gone.ID, Settlement{State: Cancelled, Receipt: ReceiptNone, SettledAt: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := HoldAsideForTest(s, pendingWatch(t, ids, "a", t0)); err != nil {
		t.Fatal(err)
	}
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
	err := s.db.Update(func(txn *badger.Txn) error { return txn.Delete(pendingKindKey(pr.Kind, pr.ID)) })
	if err != nil {
		t.Fatal(err)
	}
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
