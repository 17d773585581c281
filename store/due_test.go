package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

// dueIndex is the due index as ScanDue gives it: id to due time.
func dueIndex(t *testing.T, s *store.Store) map[store.ID]time.Time {
	t.Helper()
	out := map[store.ID]time.Time{}
	if _, err := s.ScanDue(context.Background(), store.DueQuery{Through: t0.Add(1000 * time.Hour)}, func(sc store.Schedule) error {
		if _, dup := out[sc.ID]; dup {
			t.Fatalf("%s twice", sc.ID)
		}
		out[sc.ID] = store.DueAt(sc.ID, sc.Next)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// dropDue deletes the due index and its marker, as a store an older
// build wrote has neither.
func dropDue(t *testing.T, s *store.Store) {
	t.Helper()
	var keys []store.Key
	if err := s.KV().View(context.Background(), func(tx store.Tx) error {
		return tx.Scan(store.Range{Prefix: store.Key{Fam: store.FamDue}, KeysOnly: true}, func(k store.Key, _ []byte) (bool, error) {
			keys = append(keys, k)
			return true, nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	raw(t, s, func(tx store.Tx) {
		for _, k := range append(keys, store.Key{Fam: store.FamMarker, Name: "due"}) {
			tx.Delete(k)
		}
	})
}

// A store an older build wrote has no due index: Open indexes its
// pending rows (over more than one batch; an entry of the oldest layout,
// which carries no schedule, from its row), leaving out the settled and
// the held-aside ones, and writes the marker, after which a later Open
// indexes nothing again.
func TestOpenBackfillsTheDueIndex(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	ctx := context.Background()
	ids := newIDs()
	want := map[store.ID]time.Time{}
	for i := range 1500 {
		w := pendingWatch(t, ids, "a", t0)
		if i%3 == 0 {
			w.NextCheck = t0.Add(time.Duration(i) * time.Second)
		}
		if err := s.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		want[w.ID] = store.DueAt(w.ID, w.NextCheck)
	}
	old := createdWatch(t, s, ids, "a", t0.Add(time.Minute))
	want[old.ID] = old.ID.Time()
	raw(t, s, func(tx store.Tx) { tx.Put(store.Key{Fam: store.FamState, Sub: "pending", ID: old.ID}, nil) })
	gone := createdWatch(t, s, ids, "a", t0)
	if _, err := s.Settle(ctx, gone.ID, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0}); err != nil {
		t.Fatal(err)
	}
	holdAside(t, s, pendingWatch(t, ids, "a", t0))
	dropDue(t, s)
	if got := dueIndex(t, s); len(got) != 0 {
		t.Fatalf("dropped: %d", len(got))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openTest(t, dir)
	got := dueIndex(t, s)
	if len(got) != len(want) {
		t.Fatalf("backfilled %d entries, want %d", len(got), len(want))
	}
	for id, at := range want {
		if !got[id].Equal(at) {
			t.Fatalf("%s backfilled at %v, want %v", id, got[id], at)
		}
	}
	// The marker is written: an entry lost now is not rebuilt by a second
	// Open, which walks nothing.
	raw(t, s, func(tx store.Tx) {
		tx.Delete(store.Key{Fam: store.FamDue, At: old.ID.Time().UnixNano(), ID: old.ID})
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir)
	if got := dueIndex(t, s); len(got) != len(want)-1 {
		t.Fatalf("a second Open walked again: %d entries", len(got))
	}
}

// A copy derives the destination's due index from the pending entries it
// writes: the index itself is not a record a copy carries.
func TestImportDerivesTheDueIndex(t *testing.T) {
	ctx := context.Background()
	var stores [2]*store.Store
	for i := range stores {
		s, err := badger.OpenStore(t.TempDir(), badger.Options{}) // with its copier
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		stores[i] = s
	}
	src, dst := stores[0], stores[1]
	ids := newIDs()
	want := map[store.ID]time.Time{}
	for i := range 20 {
		w := pendingWatch(t, ids, "a", t0)
		if i%2 == 0 {
			w.NextCheck = t0.Add(time.Duration(i) * time.Hour)
		}
		if err := src.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		want[w.ID] = store.DueAt(w.ID, w.NextCheck)
	}
	var recs []store.KeyValue
	if err := src.ExportRecords(ctx, func(kv store.KeyValue) error {
		if kv.Key.Fam == store.FamDue {
			t.Fatalf("the export carries a due entry: %+v", kv.Key)
		}
		recs = append(recs, kv)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := dst.ImportRecords(ctx, recs); err != nil {
		t.Fatal(err)
	}
	got := dueIndex(t, dst)
	if len(got) != len(want) {
		t.Fatalf("imported %d entries, want %d", len(got), len(want))
	}
	for id, at := range want {
		if !got[id].Equal(at) {
			t.Fatalf("%s at %v, want %v", id, got[id], at)
		}
	}
}

// The retention's start-time backstop runs once in a store's life: it
// prunes what settled before the cutoff, even a row with no time index,
// and then, its marker written, reads nothing more; an import, which may
// bring an older build's records, makes it run again.
func TestPruneUnindexedRunsOnce(t *testing.T) {
	ctx := context.Background()
	s, err := badger.OpenStore(t.TempDir(), badger.Options{}) // with its copier
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ids := newIDs()
	unindexed := func() store.Watch {
		w := createdWatch(t, s, ids, "a", t0)
		if _, err := s.Settle(ctx, w.ID, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0}); err != nil {
			t.Fatal(err)
		}
		raw(t, s, func(tx store.Tx) { tx.Delete(store.Key{Fam: store.FamSettledAt, At: t0.UnixNano(), ID: w.ID}) })
		return w
	}
	first := unindexed()
	cutoff := t0.Add(time.Hour)
	if n, err := s.PruneUnindexed(ctx, cutoff); err != nil || n != 1 {
		t.Fatalf("the first backstop pruned %d, %v", n, err)
	}
	if _, err := s.Get(ctx, first.ID); err == nil {
		t.Fatal("the unindexed row is still there")
	}
	second := unindexed()
	if n, err := s.PruneUnindexed(ctx, cutoff); err != nil || n != 0 {
		t.Fatalf("the second backstop pruned %d, %v: it read the rows again", n, err)
	}
	if _, err := s.Get(ctx, second.ID); err != nil {
		t.Fatalf("the second backstop read the rows: %v", err)
	}
	// An import (here of a key the store holds already) runs it again.
	if err := s.ImportRecords(ctx, []store.KeyValue{{Key: store.Key{Fam: store.FamState, Sub: string(store.Cancelled), ID: second.ID}}}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PruneUnindexed(ctx, cutoff); err != nil || n != 1 {
		t.Fatalf("after an import the backstop pruned %d, %v", n, err)
	}
}
