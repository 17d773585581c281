package natsstore

import (
	"context"
	"sync"
	"testing"

	"github.com/vigilhq/vigil/store"
)

// TestAMissingPendingCountIsListedThenKept: a recipient whose count key
// is missing (pending rows a build before the counts wrote, or an
// import) is counted from its pending index, and the next commit that
// moves its pending rows writes the exact count, which later reads take
// as it is.
func TestAMissingPendingCountIsListedThenKept(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, Config{}, runServer(t))
	ids := newIDs()
	for range 3 {
		createdWatch(t, s, ids, "r", t0)
	}
	countKey, err := keyOf(store.Key{Fam: store.FamPendingCount, Name: "r"})
	if err != nil {
		t.Fatal(err)
	}
	count := func() string {
		t.Helper()
		e, err := s.last(ctx, countKey)
		if err != nil {
			t.Fatal(err)
		}
		if !e.exists {
			return "none"
		}
		return string(e.val)
	}
	if got := count(); got != "3" {
		t.Fatalf("the count key after three registrations: %s, want 3", got)
	}
	if err := s.kv.Delete(ctx, countKey); err != nil {
		t.Fatal(err)
	}
	if n, err := s.CountPending(ctx, "r", 0); err != nil || n != 3 {
		t.Fatalf("CountPending without its key: %d %v, want 3 from the index", n, err)
	}
	w := createdWatch(t, s, ids, "r", t0)
	if got := count(); got != "4" {
		t.Fatalf("the count key after a registration that listed it: %s, want 4", got)
	}
	if _, err := s.Settle(ctx, w.ID, fired(t0)); err != nil {
		t.Fatal(err)
	}
	// A count key that says something else is what CountPending answers:
	// it reads the key, not the index.
	if _, err := s.kv.Put(ctx, countKey, []byte("7")); err != nil {
		t.Fatal(err)
	}
	if n, err := s.CountPending(ctx, "r", 0); err != nil || n != 7 {
		t.Fatalf("CountPending with its key at 7: %d %v, want the key's 7", n, err)
	}
}

// TestAPendingCountWrittenOnAStaleReadIsRefused: a registration that
// read the count before another Store's registration for the same
// recipient committed is refused and runs again, so neither is lost.
func TestAPendingCountWrittenOnAStaleReadIsRefused(t *testing.T) {
	ctx := context.Background()
	srv := runServer(t)
	a, b := openStore(t, Config{}, srv), openStore(t, Config{}, srv)
	ids := newIDs()
	createdWatch(t, a, ids, "r", t0)
	other := pendingWatch(t, ids, "r", t0)
	runs := 0
	a.failpoint = func(kind string) error {
		if kind == "create" {
			runs++
			if runs == 1 {
				if err := b.Create(ctx, other); err != nil {
					t.Error(err)
				}
			}
		}
		return nil
	}
	createdWatch(t, a, ids, "r", t0)
	a.failpoint = nil
	if runs != 2 {
		t.Errorf("the registration ran %d times, want 2 (refused once)", runs)
	}
	for _, s := range []testStore{a, b} {
		if n, err := s.CountPending(ctx, "r", 0); err != nil || n != 3 {
			t.Fatalf("CountPending: %d %v, want 3", n, err)
		}
	}
	if _, err := a.Settle(ctx, other.ID, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0}); err != nil {
		t.Fatal(err)
	}
	if n, err := b.CountPending(ctx, "r", 0); err != nil || n != 2 {
		t.Fatalf("CountPending after a cancel: %d %v, want 2", n, err)
	}
}

// TestABurstForOneRecipientAllLands: 64 registrations for one recipient
// at once through one Store each rewrite its count key; under the
// recipient's stripe they land one after another, none refused 16
// times, and the count is exact.
func TestABurstForOneRecipientAllLands(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, Config{}, runServer(t))
	runningFor(t, s, "r", "")
	ids := newIDs()
	const n = 64
	ws := make([]store.Watch, n)
	for i := range ws {
		ws[i] = pendingWatch(t, ids, "r", t0)
	}
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() { errs <- s.CreateIfRunning(ctx, w, 0) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a registration in the burst: %v", err)
		}
	}
	if got, err := s.CountPending(ctx, "r", 0); err != nil || got != n {
		t.Fatalf("CountPending after the burst: %d %v, want %d", got, err, n)
	}
}

// TestAnImportResetsTheCountsItTouches: rows imported beside a
// recipient's own pending rows make its count key stale, so the import
// deletes it, and the count is listed again: exact.
func TestAnImportResetsTheCountsItTouches(t *testing.T) {
	ctx := context.Background()
	srv := runServer(t)
	from := openStore(t, Config{Bucket: "from"}, srv)
	to := openStore(t, Config{Bucket: "to"}, srv)
	ids := newIDs()
	for range 2 {
		createdWatch(t, from, ids, "r", t0)
	}
	createdWatch(t, to, ids, "r", t0)
	var recs []store.KeyValue
	if err := from.ExportRecords(ctx, func(r store.KeyValue) error {
		if r.Key.Fam == store.FamRow || r.Key.Fam == store.FamState || r.Key.Fam == store.FamRecipientIndex {
			recs = append(recs, r)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := to.ImportRecords(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if n, err := to.CountPending(ctx, "r", 0); err != nil || n != 3 {
		t.Fatalf("CountPending after the import: %d %v, want its own 1 and the 2 imported", n, err)
	}
}
