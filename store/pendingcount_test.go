package store_test

import (
	"context"
	"github.com/vigilhq/vigil/store/badger"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"

	"github.com/vigilhq/vigil/store"
)

// idsOf is a seeded source of ids of its own.
func idsOf(seed byte) seqReader { return seqReader{rand.NewChaCha8([32]byte{seed, 'p'})} }

// pendingOf is the exact count: the recipient's pending rows, listed.
func pendingOf(t testing.TB, s *store.Store, rid string) int {
	t.Helper()
	ws, _, err := s.List(context.Background(), store.Filter{Recipient: rid, State: store.Pending})
	if err != nil {
		t.Fatal(err)
	}
	return len(ws)
}

// The count each recipient's commits keep agrees with its pending rows
// after any mix of registrations, settlements and cancels.
func TestPendingCountFollowsTheCommits(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	ids := newIDs()
	recipients := []string{"agent-a", "agent-b"}
	for _, r := range recipients { // running, so a settlement can mail
		if _, err := s.EnsureRecipient(ctx, r, t0); err != nil {
			t.Fatal(err)
		}
	}
	var pending []store.Watch
	rapid.Check(t, func(rt *rapid.T) {
		for range rapid.IntRange(1, 40).Draw(rt, "ops") {
			switch op := rapid.IntRange(0, 3).Draw(rt, "op"); {
			case op == 0 || len(pending) == 0:
				w := pendingWatch(t, ids, rapid.SampledFrom(recipients).Draw(rt, "recipient"), t0)
				if err := s.CreateIfRunning(ctx, w, 0); err != nil {
					rt.Fatal(err)
				}
				pending = append(pending, w)
			case op == 3: // settled with its message, as the scheduler settles
				i := rapid.IntRange(0, len(pending)-1).Draw(rt, "which")
				out := store.Outcome{Result: "done"}
				if _, _, err := s.SettleAndMail(ctx, pending[i].ID, store.Settlement{State: store.Fired, Outcome: &out, SettledAt: t0}, store.Message{Kind: "timer", Type: store.MessageFired, Outcome: out}); err != nil {
					rt.Fatal(err)
				}
				pending = append(pending[:i], pending[i+1:]...)
			default:
				i := rapid.IntRange(0, len(pending)-1).Draw(rt, "which")
				state := map[int]store.State{1: store.Fired, 2: store.Cancelled}[op]
				if _, err := s.Settle(ctx, pending[i].ID, store.Settlement{State: state, Receipt: store.ReceiptNone, SettledAt: t0}); err != nil {
					rt.Fatal(err)
				}
				pending = append(pending[:i], pending[i+1:]...)
			}
			for _, r := range recipients {
				got, err := s.CountPending(ctx, r, 0)
				if err != nil {
					rt.Fatal(err)
				}
				if want := pendingOf(t, s, r); got != want {
					rt.Fatalf("%s: the kept count is %d, the rows count %d", r, got, want)
				}
			}
		}
	})
}

// keyedCounts is an adapter whose plan keeps the counts of pending rows
// in keys (JetStream's), for badger here: its Exclusive off.
type keyedCounts struct{ store.KV }

func (k keyedCounts) Plan() store.Plan {
	p := k.KV.Plan()
	p.Exclusive = false
	return p
}

// A recipient with no count key (its rows written by a build before the
// count, or brought by an import) is counted from its index, and the
// next commit that moves one of its rows writes the count, which the
// commits keep from then on.
func TestAMissingPendingCountIsCountedThenKept(t *testing.T) {
	ctx := context.Background()
	kv, err := badger.Open(t.TempDir(), badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.New(ctx, keyedCounts{kv})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ids := newIDs()
	var ws []store.Watch
	for range 5 {
		ws = append(ws, createdWatch(t, s, ids, "a", t0))
	}
	count := store.Key{Fam: store.FamPendingCount, Name: "a"}
	if got := countKey(t, s); got != "5" {
		t.Fatalf("the count the creates wrote: %q, want 5", got)
	}
	raw(t, s, func(tx store.Tx) { tx.Delete(count) })
	if n, err := s.CountPending(ctx, "a", 0); err != nil || n != 5 {
		t.Fatalf("counted from the index: %d %v, want 5", n, err)
	}
	if _, err := s.Settle(ctx, ws[0].ID, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0}); err != nil {
		t.Fatal(err)
	}
	if got := countKey(t, s); got != "4" {
		t.Fatalf("the count a cancel wrote: %q, want 4", got)
	}
	if n, err := s.CountPending(ctx, "a", 3); err != nil || n != 3 {
		t.Fatalf("up to 3: %d %v", n, err)
	}
}

// countKey is recipient a's count key's value, "" when it has none.
func countKey(t *testing.T, s *store.Store) string {
	t.Helper()
	var v []byte
	if err := s.KV().View(context.Background(), func(tx store.Tx) error {
		var err error
		v, _, err = tx.Get(store.Key{Fam: store.FamPendingCount, Name: "a"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return string(v)
}

// recipientScans is a badger KV that counts the scans of the
// recipients' index (a recipient counted from its rows).
type recipientScans struct {
	store.KV
	scans *atomic.Int32
}

func (k recipientScans) View(ctx context.Context, fn func(store.Tx) error) error {
	return k.KV.View(ctx, func(t store.Tx) error { return fn(scanCounting{t, k.scans}) })
}

func (k recipientScans) Update(ctx context.Context, o store.TxOptions, fn func(store.Tx) error) error {
	return k.KV.Update(ctx, o, func(t store.Tx) error { return fn(scanCounting{t, k.scans}) })
}

type scanCounting struct {
	store.Tx
	scans *atomic.Int32
}

func (t scanCounting) Scan(r store.Range, fn func(store.Key, []byte) (bool, error)) error {
	if r.Prefix.Fam == store.FamRecipientIndex {
		t.scans.Add(1)
	}
	return t.Tx.Scan(r, fn)
}

// openScanCounting opens the badger store in dir with its recipients'
// index scans counted.
func openScanCounting(t *testing.T, dir string) (*store.Store, *atomic.Int32) {
	t.Helper()
	kv, err := badger.Open(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	scans := &atomic.Int32{}
	s, err := store.New(context.Background(), recipientScans{kv, scans})
	if err != nil {
		_ = kv.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, scans
}

// On badger (its plan exclusive) a process keeps the counts its commits
// wrote in memory as well as in their keys: a store opened again reads
// a recipient's count from its key, and counts nobody's rows, so a
// restart beside millions of pending watches pays nothing for them.
func TestAnExclusiveStoreReadsItsCountsAfterARestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, _ := openScanCounting(t, dir)
	ids := newIDs()
	var ws []store.Watch
	for range 5 {
		ws = append(ws, createdWatch(t, s, ids, "a", t0))
	}
	if got := countKey(t, s); got != "5" {
		t.Fatalf("the count key: %q, want 5", got)
	}
	_ = s.Close()
	s, scans := openScanCounting(t, dir)
	if _, err := s.Settle(ctx, ws[0].ID, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0}); err != nil {
		t.Fatal(err)
	}
	createdWatch(t, s, ids, "a", t0)
	createdWatch(t, s, ids, "a", t0)
	if n, err := s.CountPending(ctx, "a", 0); err != nil || n != 6 {
		t.Fatalf("read from the key, then moved: %d %v, want 6", n, err)
	}
	if n := scans.Load(); n != 0 {
		t.Fatalf("the restarted store counted the recipient's rows %d times, want 0", n)
	}
	if got := countKey(t, s); got != "6" {
		t.Fatalf("the count key: %q, want 6", got)
	}
}

// A store an older build kept exclusive counts in memory for may hold
// count keys older than its rows: its first open by this build drops
// them (the marker "pck" written), so a recipient is counted from its
// rows once, never read from a stale key.
func TestAnExclusiveStoreDropsItsUnkeptCountsOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTest(t, dir)
	ids := newIDs()
	for range 3 {
		createdWatch(t, s, ids, "a", t0)
	}
	// As such a store: a stale key, and no marker.
	raw(t, s, func(tx store.Tx) {
		tx.Put(store.Key{Fam: store.FamPendingCount, Name: "a"}, []byte("99"))
		tx.Delete(store.Key{Fam: store.FamMarker, Name: "pck"})
	})
	_ = s.Close()
	s, scans := openScanCounting(t, dir)
	if n, err := s.CountPending(ctx, "a", 0); err != nil || n != 3 {
		t.Fatalf("after the first open: %d %v, want 3 (the stale key said 99)", n, err)
	}
	if n := scans.Load(); n != 1 {
		t.Fatalf("the recipient was counted from its rows %d times, want once", n)
	}
}

// Registrations and cancels of one recipient at once all land, each on
// the count the one before it wrote: the count ends exact.
func TestConcurrentCommitsOfOneRecipientKeepItsCount(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	runningRecipientFor(t, s, "a", "")
	const writers, each = 8, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			ids := idsOf(byte(w))
			for i := range each {
				row := pendingWatch(t, ids, "a", t0)
				if err := s.CreateIfRunning(ctx, row, 0); err != nil {
					t.Error(err)
					return
				}
				if i%4 == 0 {
					if _, err := s.Settle(ctx, row.ID, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0}); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	n, err := s.CountPending(ctx, "a", 0)
	if want := pendingOf(t, s, "a"); err != nil || n != want || want != writers*each*3/4 {
		t.Fatalf("the count %d (%v), the rows %d, want %d", n, err, want, writers*each*3/4)
	}
}

// An import that brings a recipient pending rows drops its count, here
// and where the process keeps it in memory: the next count is of every
// pending row, the imported ones too.
func TestImportRecordsDropsTheCountKeptInMemory(t *testing.T) {
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
	for range 3 {
		createdWatch(t, src, ids, "a", t0)
	}
	for range 2 {
		createdWatch(t, dst, ids, "a", t0)
	}
	if n, err := dst.CountPending(ctx, "a", 0); err != nil || n != 2 {
		t.Fatalf("before: %d %v", n, err)
	}
	var recs []store.KeyValue
	if err := src.ExportRecords(ctx, func(kv store.KeyValue) error {
		recs = append(recs, kv)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := dst.ImportRecords(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if n, err := dst.CountPending(ctx, "a", 0); err != nil || n != 5 {
		t.Fatalf("after the import: %d %v, want 5", n, err)
	}
}
