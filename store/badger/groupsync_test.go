package badger

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/vigilhq/vigil/store"
)

// recorder is a syncer that records, in one log, the order of writes,
// syncs and acknowledgements. A write is a key the store has committed:
// each sync, as it starts, records every key committed so far (all of
// them are in badger's log before they can be read, so that sync covers
// them). An acknowledgement is a write call returning to its caller with
// the key it wrote. check fails when an acknowledgement comes before a
// finished sync that covers its key.
type recorder struct {
	st    atomic.Pointer[KV]
	delay time.Duration // each sync takes this long
	fail  atomic.Bool   // Sync fails while set

	mu    sync.Mutex // guards log and syncs
	log   []record
	syncs int
}

type record struct {
	what string // "sync" (started), "synced" (finished) or "ack"
	n    int    // the sync's number
	keys map[string]bool
	key  string
}

func (r *recorder) Sync() error {
	keys := map[string]bool{}
	if st := r.st.Load(); st != nil {
		_ = st.db.View(func(txn *badgerdb.Txn) error {
			it := txn.NewIterator(badgerdb.IteratorOptions{})
			defer it.Close()
			for it.Rewind(); it.Valid(); it.Next() {
				keys[string(it.Item().KeyCopy(nil))] = true
			}
			return nil
		})
	}
	r.mu.Lock()
	r.syncs++
	n := r.syncs
	r.log = append(r.log, record{what: "sync", n: n, keys: keys})
	r.mu.Unlock()
	time.Sleep(r.delay)
	r.mu.Lock()
	r.log = append(r.log, record{what: "synced", n: n})
	r.mu.Unlock()
	if r.fail.Load() {
		return errors.New("disk on fire")
	}
	return nil
}

func (r *recorder) ack(key []byte) {
	r.mu.Lock()
	r.log = append(r.log, record{what: "ack", key: string(key)})
	r.mu.Unlock()
}

func (r *recorder) syncCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.syncs
}

// check fails t for every acknowledgement not preceded by a finished sync
// that covers it, and returns how many acknowledgements it checked.
func (r *recorder) check(t *testing.T) int {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	started := map[int]map[string]bool{}
	durable := map[string]bool{}
	acks, bad := 0, 0
	for _, rec := range r.log {
		switch rec.what {
		case "sync":
			started[rec.n] = rec.keys
		case "synced":
			for k := range started[rec.n] {
				durable[k] = true
			}
		case "ack":
			acks++
			if !durable[rec.key] && bad < 5 {
				bad++
				t.Errorf("%q acknowledged before a sync covered it", rec.key)
			}
		}
	}
	return acks
}

// openRecorded opens a store with SyncWrites over a recorder.
func openRecorded(t *testing.T, delay time.Duration) (*store.Store, *recorder) {
	t.Helper()
	r := &recorder{delay: delay}
	s, kv := openStore(t, t.TempDir(), Options{SyncWrites: true, syncer: func(syncer) syncer { return r }})
	r.st.Store(kv)
	return s, r
}

// Every write path acknowledges only after a sync that started after its
// commit, and concurrent writers share syncs, on the plain path and on the
// paths serialised by a lock (mailbox appends, settle-and-mail).
func TestAckComesAfterTheSyncThatCoversIt(t *testing.T) {
	const writers, each = 8, 12
	cases := []struct {
		name string
		// setup runs once; write makes writer w's i-th write and
		// returns the key it wrote.
		setup func(t *testing.T, s *store.Store) func(ctx context.Context, w, i int) ([]byte, error)
	}{
		{"create", func(t *testing.T, s *store.Store) func(context.Context, int, int) ([]byte, error) {
			rows := makeRows(t, writers*each)
			return func(ctx context.Context, w, i int) ([]byte, error) {
				row := rows[w*each+i]
				return rawKey(store.Key{Fam: store.FamRow, ID: row.ID}), s.Create(ctx, row)
			}
		}},
		{"append", func(t *testing.T, s *store.Store) func(context.Context, int, int) ([]byte, error) {
			for w := range writers {
				runningRecipientFor(t, s, fmt.Sprintf("r%d", w%2), "")
			}
			return func(ctx context.Context, w, i int) ([]byte, error) {
				rid := fmt.Sprintf("r%d", w%2)
				m, _, err := s.AppendIfRunning(ctx, rid, store.Message{Kind: "k", Type: store.MessageFired, At: t0})
				return rawKey(store.Key{Fam: store.FamMessage, Name: rid, Seq: m.Seq}), err
			}
		}},
		{"settle and mail", func(t *testing.T, s *store.Store) func(context.Context, int, int) ([]byte, error) {
			runningRecipientFor(t, s, "agent-1", "")
			rows := makeRows(t, writers*each)
			for _, row := range rows {
				if err := s.Create(context.Background(), row); err != nil {
					t.Fatal(err)
				}
			}
			return func(ctx context.Context, w, i int) ([]byte, error) {
				id := rows[w*each+i].ID
				_, mailed, err := s.SettleAndMail(ctx, id, store.Settlement{State: store.Fired, Receipt: store.ReceiptNone, SettledAt: t0}, store.Message{Kind: "timer", Type: store.MessageFired, At: t0})
				if err != nil {
					return nil, err
				}
				return rawKey(store.Key{Fam: store.FamMessage, Name: "agent-1", Seq: mailed.Message.Seq}), nil
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, r := openRecorded(t, time.Millisecond)
			write := c.setup(t, s)
			before := r.syncCount()
			ctx := context.Background()
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for i := range each {
						key, err := write(ctx, w, i)
						if err != nil {
							t.Error(err)
							return
						}
						r.ack(key)
					}
				})
			}
			wg.Wait()
			if n := r.check(t); n != writers*each {
				t.Fatalf("%d acknowledgements checked, want %d", n, writers*each)
			}
			if syncs := r.syncCount() - before; syncs >= writers*each {
				t.Errorf("%d syncs for %d concurrent writes: none shared", syncs, writers*each)
			} else {
				t.Logf("%d syncs for %d writes from %d writers", syncs, writers*each, writers)
			}
		})
	}
}

// A lone writer gets a sync of its own for every commit: none skipped.
func TestLoneWriterSyncsEachCommit(t *testing.T) {
	s, r := openRecorded(t, 0)
	before := r.syncCount()
	for _, row := range makeRows(t, 5) {
		if err := s.Create(context.Background(), row); err != nil {
			t.Fatal(err)
		}
		r.ack(rawKey(store.Key{Fam: store.FamRow, ID: row.ID}))
	}
	r.check(t)
	if got := r.syncCount() - before; got != 5 {
		t.Fatalf("%d syncs for 5 sequential commits", got)
	}
}

// A failed sync fails the commits it covers, and every later one: after
// a failed fsync the disk's state is unknown.
func TestSyncFailureIsSticky(t *testing.T) {
	s, r := openRecorded(t, 0)
	rows := makeRows(t, 2)
	r.fail.Store(true)
	if err := s.Create(context.Background(), rows[0]); !errors.Is(err, ErrSync) {
		t.Fatalf("create over a failing sync: %v", err)
	}
	r.fail.Store(false)
	if err := s.Create(context.Background(), rows[1]); !errors.Is(err, ErrSync) {
		t.Fatalf("create after a failed sync: %v", err)
	}
}

// Close with writers waiting on a slow sync returns, and so do they: each
// with success, or, once Close has begun, an error (ErrClosed, or
// badger's own for a transaction that came late).
func TestCloseWithWaitersReturns(t *testing.T) {
	r := &recorder{delay: 5 * time.Millisecond}
	kv, err := Open(t.TempDir(), Options{SyncWrites: true, syncer: func(syncer) syncer { return r }})
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.New(context.Background(), kv)
	if err != nil {
		t.Fatal(err)
	}
	rows := makeRows(t, 64)
	var closing atomic.Bool
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for _, row := range rows[i*8 : i*8+8] {
				if err := s.Create(context.Background(), row); err != nil && !closing.Load() {
					t.Errorf("create before close: %v", err)
				}
			}
		})
	}
	time.Sleep(8 * time.Millisecond)
	done := make(chan struct{})
	go func() {
		defer close(done)
		closing.Store(true)
		if err := s.Close(); err != nil {
			t.Error(err)
		}
		wg.Wait()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close or a writer hung")
	}
}

// countingSyncer counts the real syncer's syncs.
type countingSyncer struct {
	real syncer
	n    atomic.Int64
}

func (c *countingSyncer) Sync() error { c.n.Add(1); return c.real.Sync() }

// On disk, with the real syncer: concurrent writers share fsyncs, and
// every acknowledged row is there after a reopen.
func TestGroupCommitOnDisk(t *testing.T) {
	dir := t.TempDir()
	var c *countingSyncer
	s, _ := openStore(t, dir, Options{SyncWrites: true, syncer: func(real syncer) syncer {
		c = &countingSyncer{real: real}
		return c
	}})
	rows := makeRows(t, 256)
	before := c.n.Load()
	var wg sync.WaitGroup
	for w := range 32 {
		wg.Go(func() {
			for _, row := range rows[w*8 : w*8+8] {
				if err := s.Create(context.Background(), row); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	syncs := c.n.Load() - before
	t.Logf("%d fsyncs for %d commits from 32 writers", syncs, len(rows))
	if syncs >= int64(len(rows)) {
		t.Errorf("%d fsyncs for %d concurrent commits: none shared", syncs, len(rows))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir)
	for _, row := range rows {
		if _, err := s.Get(context.Background(), row.ID); err != nil {
			t.Fatalf("row %s after reopen: %v", row.ID, err)
		}
	}
}

// A mailbox read returns only messages a finished sync covers, even
// while appends are committed and not yet synced.
func TestMailboxReadReturnsOnlySyncedMessages(t *testing.T) {
	s, r := openRecorded(t, time.Millisecond)
	runningRecipientFor(t, s, "a", "")
	ctx := context.Background()
	const writers, each = 4, 15
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range each {
				if _, _, err := s.AppendIfRunning(ctx, "a", store.Message{Kind: "k", Type: store.MessageFired, At: t0}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	var cur uint64
	for cur < writers*each {
		msgs, err := s.ReadMailbox(ctx, "a", cur, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			r.ack(rawKey(store.Key{Fam: store.FamMessage, Name: "a", Seq: m.Seq}))
			cur = m.Seq
		}
	}
	wg.Wait()
	r.check(t)
}

// With nothing written since the last sync, a read does not wait for one.
func TestQuietReadDoesNotSync(t *testing.T) {
	s, r := openRecorded(t, 0)
	runningRecipientFor(t, s, "a", "")
	if _, _, err := s.AppendIfRunning(context.Background(), "a", store.Message{Kind: "k", Type: store.MessageFired, At: t0}); err != nil {
		t.Fatal(err)
	}
	before := r.syncCount()
	for range 3 {
		if msgs, err := s.ReadMailbox(context.Background(), "a", 0, 10); err != nil || len(msgs) != 1 {
			t.Fatalf("read: %d messages, %v", len(msgs), err)
		}
	}
	if got := r.syncCount() - before; got != 0 {
		t.Fatalf("%d syncs for 3 reads of a quiet store", got)
	}
}

// After badger switches to a new write-ahead log, the previous one is
// fsynced once (db.Sync covers the newest only), and the directory once
// per new log file.
func TestSyncerFsyncsLogsBadgerSwitchedAwayFrom(t *testing.T) {
	dir := t.TempDir()
	var got []string
	b := newBadgerSyncer(nil, dir)
	b.fsync = func(path string) error {
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		got = append(got, rel)
		return nil
	}
	touch := func(name string) {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name  string
		setup func()
		want  []string
		// remembered are the old logs the syncer keeps as fsynced: a log
		// flushed and deleted is forgotten.
		remembered []int
	}{
		{"first: the directory", func() { touch("00001.mem"); touch("000001.vlog") }, []string{"."}, nil},
		{"nothing new", func() {}, nil, nil},
		{"a switch: the old log and the directory", func() { touch("00002.mem") }, []string{"00001.mem", "."}, []int{1}},
		{"the old log only once", func() {}, nil, []int{1}},
		{"flushed and deleted", func() {
			if err := os.Remove(filepath.Join(dir, "00001.mem")); err != nil {
				t.Fatal(err)
			}
		}, nil, nil},
		{"two switches", func() { touch("00003.mem"); touch("00004.mem") }, []string{"00002.mem", "00003.mem", "."}, []int{2, 3}},
	}
	for _, st := range steps {
		got = nil
		st.setup()
		if err := b.syncLogs(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		slices.Sort(got)
		want := slices.Clone(st.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: fsynced %q, want %q", st.name, got, want)
		}
		if kept := slices.Sorted(maps.Keys(b.synced)); !slices.Equal(kept, st.remembered) {
			t.Errorf("%s: remembers %v as fsynced, want %v", st.name, kept, st.remembered)
		}
	}
}

// SettleAndMailThen's then runs once the commit is durable and in mailbox
// order, while the settlements share syncs.
func TestSettleAndMailThenRunsInMailboxOrder(t *testing.T) {
	s, r := openRecorded(t, time.Millisecond)
	runningRecipientFor(t, s, "agent-1", "")
	const writers, each = 8, 12
	rows := makeRows(t, writers*each)
	for _, row := range rows {
		if err := s.Create(context.Background(), row); err != nil {
			t.Fatal(err)
		}
	}
	before := r.syncCount()
	var mu sync.Mutex
	var seqs []uint64
	then := func(m store.Mailed) {
		r.ack(rawKey(store.Key{Fam: store.FamMessage, Name: "agent-1", Seq: m.Message.Seq}))
		// A then that dawdles must still not be overtaken by a later one.
		time.Sleep(time.Duration(m.Message.Seq%3) * 100 * time.Microsecond)
		mu.Lock()
		seqs = append(seqs, m.Message.Seq)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				_, _, err := s.SettleAndMailThen(context.Background(), rows[w*each+i].ID,
					store.Settlement{State: store.Fired, Receipt: store.ReceiptNone, SettledAt: t0}, store.Message{Kind: "timer", Type: store.MessageFired, At: t0}, then)
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	r.check(t)
	if len(seqs) != writers*each || !slices.IsSorted(seqs) {
		t.Fatalf("then saw seqs %v, want 1…%d in order", seqs, writers*each)
	}
	if syncs := r.syncCount() - before; syncs >= writers*each {
		t.Errorf("%d syncs for %d settlements: none shared", syncs, writers*each)
	}
}

// Close while commits are being sent neither panics nor hangs: the
// transactions in flight finish and later ones are refused (ErrClosed).
// Badger's own Close, reached while a commit is sending, closes the
// channel the commit sends on.
func TestCloseDuringCommitsNeverPanics(t *testing.T) {
	for round := range 20 {
		kv, err := Open(t.TempDir(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := store.New(context.Background(), kv)
		if err != nil {
			t.Fatal(err)
		}
		rows := makeRows(t, 400)
		var wg sync.WaitGroup
		var started sync.WaitGroup
		for i := range 4 {
			started.Add(1)
			wg.Go(func() {
				started.Done()
				for _, row := range rows[i*100 : i*100+100] {
					if err := s.Create(context.Background(), row); err != nil {
						if !errors.Is(err, ErrClosed) && !errors.Is(err, badgerdb.ErrDBClosed) && !errors.Is(err, badgerdb.ErrBlockedWrites) {
							t.Errorf("round %d: create during close: %v", round, err)
						}
						return
					}
				}
			})
		}
		started.Wait()
		time.Sleep(time.Duration(round%5) * 100 * time.Microsecond)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
	}
}
