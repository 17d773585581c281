package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Version is the store version this build writes and reads.
const Version = 1

// Options configure Open.
type Options struct {
	// SyncWrites acknowledges a commit only once it is on stable storage
	// (fsync): power-loss durability. Concurrent commits share one fsync
	// (group commit); a lone commit waits for its own. See the package doc.
	SyncWrites bool
	// SyncEachCommit, with SyncWrites, syncs through badger's own
	// SyncWrites instead: one fsync per commit, none shared. It is there
	// to be compared with (the benchmarks), not to be chosen.
	SyncEachCommit bool
	// Logger receives badger's warnings and errors. Nil discards them.
	Logger *slog.Logger

	// syncer, set only by this package's tests, replaces (or wraps) the
	// group sync's real syncer, which it is given.
	syncer func(real syncer) syncer
	// fs and now, set only by this package's tests, replace the disk
	// guard's measurements of the filesystem and its clock.
	fs  fsProbe
	now func() time.Time
}

// Badger is the Store on badger v4.
type Badger struct {
	db *badger.DB
	// appendMu serialises mailbox appends: each reads and bumps its
	// recipient's sequence, and one process owns the store, so a lock is
	// cheaper than transactions retrying on the shared key.
	appendMu sync.Mutex
	// eventMu does the same for event appends, whose sequence is per
	// stream; apart from appendMu so facts never queue behind mail.
	eventMu sync.Mutex
	// mailTail, guarded by appendMu, is closed when the then of the last
	// ordered mail commit has returned (updateInOrder); nil before any.
	mailTail chan struct{}
	// group is the group sync every commit waits on, nil when commits
	// are not synced by the store (SyncWrites off, or SyncEachCommit).
	group *groupSync
	// failpoint, set only by this package's tests, is called inside the
	// transactions that write several things at once, between the writes;
	// an error from it aborts the transaction.
	failpoint func(at string) error
	// retained is OnRetained's fn, or nil.
	retained atomic.Pointer[func(Retained, time.Time)]
	// floors says where each retained class's live records begin, as far
	// as this process has pruned it (see retention.go).
	floors floors
	// pending caches each recipient's pending count (pendingcount.go).
	pending *pendingCounts
	// disk admits each commit by the data directory's free space
	// (diskspace.go).
	disk *diskGuard
}

// Key layout. Row keys and index keys carry the raw 16-byte id.
var (
	versionKey   = []byte("v")
	rowPrefix    = []byte("w/")
	statePrefix  = []byte("s/") // s/<state>/<id>
	recipientPfx = []byte("r/") // r/<recipient>\x00<id>
	// pendingKindPfx indexes the pending rows by kind: pk/<kind>/<id>,
	// key only (pendingkind.go).
	pendingKindPfx = []byte("pk/")
)

func rowKey(id ID) []byte { return append(append([]byte{}, rowPrefix...), id[:]...) }

func stateKey(s State, id ID) []byte {
	k := append(append([]byte{}, statePrefix...), s...)
	k = append(k, '/')
	return append(k, id[:]...)
}

func recipientKey(r string, id ID) []byte {
	k := append(append([]byte{}, recipientPfx...), r...)
	k = append(k, 0)
	return append(k, id[:]...)
}

// Open opens (or creates) the store in dir. It refuses, with a
// *StorageFullError naming dir and its free space, a filesystem without
// the room opening the store writes (see "A full disk" in the package
// doc); a store that opens on a disk too full for clients' writes
// refuses them until space is freed, and says so in the log.
func Open(dir string, opt Options) (*Badger, error) {
	fs, now, log := opt.fs, opt.now, opt.Logger
	if fs == nil {
		fs = realProbe()
	}
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := checkOpenRoom(dir, fs); err != nil {
		return nil, err
	}
	bo := badger.DefaultOptions(dir).
		WithSyncWrites(opt.SyncWrites && opt.SyncEachCommit).
		WithLogger(badgerLogger{opt.Logger}).
		// Rows are small; keep memory modest for a host that mostly waits.
		WithMemTableSize(16 << 20).
		WithNumMemtables(3).
		WithBlockCacheSize(32 << 20).
		WithIndexCacheSize(16 << 20).
		WithNumCompactors(2)
	db, err := badger.Open(bo)
	if err != nil {
		return nil, classifyOpenError(dir, err)
	}
	s := &Badger{db: db, floors: newFloors(), pending: newPendingCounts(), disk: newDiskGuard(dir, fs, now, log.With("component", "store"))}
	s.disk.tables = db.Tables
	s.disk.measure(nil) // says now, once, if clients' writes are refused
	if opt.SyncWrites && !opt.SyncEachCommit {
		var sy syncer = newBadgerSyncer(db, dir)
		if opt.syncer != nil {
			sy = opt.syncer(sy)
		}
		s.group = newGroupSync(sy)
	}
	if err := s.checkVersion(); err != nil {
		_ = s.Close()
		return nil, err
	}
	if err := s.backfillPendingKinds(context.Background()); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

func classifyOpenError(dir string, err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "Another process is using this Badger database"):
		return fmt.Errorf("%w: %s (is another vigil serve running?)", ErrInUse, dir)
	case errors.Is(err, badger.ErrTruncateNeeded),
		strings.Contains(msg, "MANIFEST"), strings.Contains(msg, "checksum"),
		strings.Contains(msg, "corrupt"), strings.Contains(msg, "magic"):
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, dir, err)
	}
	return fmt.Errorf("store: opening %s: %w", dir, err)
}

// checkVersion reads the store version, writing it into a new store.
func (s *Badger) checkVersion() error {
	return s.update(context.Background(), func(txn *badger.Txn) error {
		item, err := txn.Get(versionKey)
		if errors.Is(err, badger.ErrKeyNotFound) {
			if nonEmpty(txn) {
				return fmt.Errorf("%w: rows without a store version", ErrCorrupt)
			}
			return txn.Set(versionKey, []byte(strconv.Itoa(Version)))
		}
		if err != nil {
			return err
		}
		v, err := item.ValueCopy(nil)
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(string(v))
		switch {
		case err != nil:
			return fmt.Errorf("%w: store version %q", ErrCorrupt, v)
		case n > Version:
			return fmt.Errorf("%w: store version %d, this build reads up to %d", ErrStoreTooNew, n, Version)
		}
		return nil
	})
}

func nonEmpty(txn *badger.Txn) bool {
	it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false})
	defer it.Close()
	it.Rewind()
	return it.Valid()
}

// DiskSpace is the data directory's free space and what the store needs
// there, as last measured (measured again when a second old, or a tenth
// of one while clients' writes are refused); false on a platform where
// the store cannot measure it.
func (s *Badger) DiskSpace() (DiskSpace, bool) { return s.disk.space() }

// Close implements Store. Writers waiting for a sync get it first; a
// commit that waits after Close has begun gets ErrClosed.
func (s *Badger) Close() error {
	if s.group != nil {
		s.group.close()
	}
	return s.db.Close()
}

// update runs f in a read-write transaction, retrying on a write conflict
// (two transitions of the same row at once: the loser re-reads), and
// returns once the commit is durable as Options ask: with SyncWrites, once
// a sync that started after the commit has finished. Every write of the
// store goes through it (or updateLocked).
func (s *Badger) update(ctx context.Context, f func(txn *badger.Txn) error) error {
	return s.updateLocked(ctx, nil, f)
}

// durableRead returns once what a read that has just finished saw is
// durable as Options ask (see "What a reader sees" in the package doc).
func (s *Badger) durableRead() error {
	if s.group == nil {
		return nil
	}
	return s.group.barrier()
}

// updateLocked is update with mu held around the transaction, not around
// the wait for its sync: writers serialised by mu (mailbox and event
// appends, which bump a shared sequence) still share syncs.
func (s *Badger) updateLocked(ctx context.Context, mu *sync.Mutex, f func(txn *badger.Txn) error) error {
	return s.updateInOrder(ctx, mu, f, nil)
}

// updateInOrder is updateLocked that, when then is not nil and the write
// succeeds, calls then once the commit is durable, after the then of
// every earlier commit under mu has returned: in commit order, although
// the commits' syncs are shared and their writers wake in any order. mu
// is appendMu whenever then is set.
func (s *Badger) updateInOrder(ctx context.Context, mu *sync.Mutex, f func(txn *badger.Txn) error, then func()) error {
	if err := s.disk.admit(ctx); err != nil {
		return err
	}
	var prev, mine chan struct{}
	if s.group != nil {
		s.group.begin()
	}
	err := s.commit(ctx, mu, f, func() {
		if then != nil {
			prev, mine = s.mailTail, make(chan struct{})
			s.mailTail = mine
		}
	})
	if s.group != nil {
		s.group.end()
		if err == nil {
			err = s.group.wait()
		}
	}
	if mine != nil {
		defer close(mine) // even if then panics: the next must not hang
		if prev != nil {
			<-prev
		}
		if err == nil {
			then()
		}
	}
	return err
}

// maxCommitAttempts bounds how often commit runs a transaction that
// lost a conflict; past it the commit is ErrBusy.
const maxCommitAttempts = 9

// commit runs f in a read-write transaction and commits it, with mu held
// when it is not nil, and then calls committed, mu still held, if the
// commit succeeded.
func (s *Badger) commit(ctx context.Context, mu *sync.Mutex, f func(txn *badger.Txn) error, committed func()) error {
	if mu != nil {
		mu.Lock()
		defer mu.Unlock()
	}
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := s.db.Update(f)
		if errors.Is(err, badger.ErrConflict) {
			if attempt < maxCommitAttempts-1 {
				continue
			}
			err = fmt.Errorf("%w (%d attempts): %w", ErrBusy, maxCommitAttempts, err)
		}
		if err == nil && committed != nil {
			committed()
		}
		return err
	}
}

// readRow reads and decodes a row: badger.ErrKeyNotFound when it is
// absent, an *UnreadableError when this build cannot read it.
func readRow(txn *badger.Txn, id ID) (Watch, error) {
	item, err := txn.Get(rowKey(id))
	if err != nil {
		return Watch{}, err
	}
	var w Watch
	err = item.Value(func(v []byte) error {
		var derr error
		w, derr = DecodeRow(item.KeyCopy(nil), v)
		return derr
	})
	return w, err
}

// getRow is readRow with a pending row's durable next check from its
// index entry, and an absent or unreadable row ErrNotFound.
func getRow(txn *badger.Txn, id ID) (Watch, error) {
	w, err := readRow(txn, id)
	var ue *UnreadableError
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		return Watch{}, ErrNotFound
	case errors.As(err, &ue):
		return Watch{}, fmt.Errorf("%w (%v)", ErrNotFound, ue)
	}
	if err != nil || w.State != Pending {
		return w, err
	}
	// A pending row's durable next check lives in its index entry.
	sc, _, err := readSchedule(txn, id)
	if err != nil && !errors.Is(err, ErrNotPending) {
		return Watch{}, err
	}
	w.NextCheck = sc.Next
	return w, nil
}

// readSchedule decodes id's pending index entry; ok is false for an
// entry of an older layout that carries no schedule. ErrNotPending if id
// has no pending index entry.
func readSchedule(txn *badger.Txn, id ID) (sc Schedule, ok bool, err error) {
	item, err := txn.Get(stateKey(Pending, id))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return Schedule{}, false, ErrNotPending
	}
	if err != nil {
		return Schedule{}, false, err
	}
	sc.ID = id
	err = item.Value(func(v []byte) error {
		ok = decodeSchedule(v, &sc)
		return nil
	})
	return sc, ok, err
}

func putRow(txn *badger.Txn, w Watch) error {
	b, err := EncodeRow(w)
	if err != nil {
		return err
	}
	return txn.Set(rowKey(w.ID), b)
}

// Create implements Store.
func (s *Badger) Create(ctx context.Context, w Watch) error {
	if !w.State.Valid() || !w.Receipt.Valid() {
		return fmt.Errorf("store: create: state %q receipt %q", w.State, w.Receipt)
	}
	idem := IdemOf(ctx)
	err := s.update(ctx, func(txn *badger.Txn) error {
		if err := checkIdem(txn, idem); err != nil {
			return err
		}
		if err := createRow(txn, w); err != nil {
			return err
		}
		return keepIdem(txn, idem, w)
	})
	if err == nil {
		s.noteIdem(idem)
	}
	if err == nil && w.State != Pending && w.SettledAt != nil {
		s.noteRetained(RetainedSettled, *w.SettledAt)
	}
	if err == nil && w.State == Pending {
		s.pending.add(w.Recipient.ID, 1)
	}
	return err
}

// createRow writes a new row and its indexes inside txn.
func createRow(txn *badger.Txn, w Watch) error {
	if _, err := txn.Get(rowKey(w.ID)); err == nil {
		return ErrExists
	} else if !errors.Is(err, badger.ErrKeyNotFound) {
		return err
	}
	if err := putRow(txn, w); err != nil {
		return err
	}
	if err := txn.Set(stateKey(w.State, w.ID), scheduleValue(w)); err != nil {
		return err
	}
	if err := indexPendingKind(txn, w, true); err != nil {
		return err
	}
	if err := indexSettled(txn, w); err != nil {
		return err
	}
	if w.Subject != "" && w.State == Pending {
		if err := editSubject(txn, w.Subject, w.ID, true); err != nil {
			return err
		}
	}
	return txn.Set(recipientKey(w.Recipient.ID, w.ID), nil)
}

// Get implements Store.
func (s *Badger) Get(ctx context.Context, id ID) (Watch, error) {
	var w Watch
	err := s.db.View(func(txn *badger.Txn) error {
		var err error
		w, err = getRow(txn, id)
		return err
	})
	return w, err
}

// transition rewrites a row and moves its state index in one transaction.
func (s *Badger) transition(ctx context.Context, id ID, f func(w *Watch) error) (Watch, error) {
	var out Watch
	var from State
	err := s.update(ctx, func(txn *badger.Txn) error {
		w, err := getRow(txn, id)
		if err != nil {
			return err
		}
		from = w.State
		if err := f(&w); err != nil {
			return err
		}
		if err := rewriteRow(txn, from, w); err != nil {
			return err
		}
		out = w
		return nil
	})
	if err == nil && from == Pending && out.State != Pending && out.SettledAt != nil {
		s.noteRetained(RetainedSettled, *out.SettledAt)
	}
	if err == nil && from == Pending && out.State != Pending {
		s.pending.add(out.Recipient.ID, -1)
	}
	return out, err
}

// rewriteRow writes w, which was in state from, and moves its indexes,
// inside txn.
func rewriteRow(txn *badger.Txn, from State, w Watch) error {
	if err := putRow(txn, w); err != nil {
		return err
	}
	id := w.ID
	switch {
	case w.State != from:
		if err := txn.Delete(stateKey(from, id)); err != nil {
			return err
		}
		if err := txn.Set(stateKey(w.State, id), scheduleValue(w)); err != nil {
			return err
		}
		if from == Pending || w.State == Pending {
			if err := indexPendingKind(txn, w, w.State == Pending); err != nil {
				return err
			}
		}
		if err := indexSettled(txn, w); err != nil {
			return err
		}
		if from == Pending && w.Subject != "" {
			if err := editSubject(txn, w.Subject, id, false); err != nil {
				return err
			}
		}
	case w.State == Pending:
		// The pending index carries the schedule; keep it current.
		if err := txn.Set(stateKey(w.State, id), scheduleValue(w)); err != nil {
			return err
		}
	}
	return nil
}

// subjectKey holds the pending watches of a subject: sj/<subject> ->
// their ids, 16 bytes each. One key per subject rather than one per watch:
// a Work's thread may be waited on thousands of times in turn, and a
// prefix scan would step over every settled wait's deleted key until
// badger compacts it, where one key is one read.
func subjectKey(subject string) []byte {
	return append(append([]byte{}, subjectPfx...), subject...)
}

var subjectPfx = []byte("sj/")

// subjectIDs reads a subject's pending ids.
func subjectIDs(txn *badger.Txn, subject string) ([]ID, error) {
	item, err := txn.Get(subjectKey(subject))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []ID
	err = item.Value(func(v []byte) error {
		if len(v)%len(ID{}) != 0 {
			return fmt.Errorf("%w: subject index of %q", ErrCorrupt, subject)
		}
		for ; len(v) > 0; v = v[len(ID{}):] {
			out = append(out, ID(v[:len(ID{})]))
		}
		return nil
	})
	return out, err
}

// editSubject adds id to, or removes it from, subject's pending ids.
func editSubject(txn *badger.Txn, subject string, id ID, add bool) error {
	ids, err := subjectIDs(txn, subject)
	if err != nil {
		return err
	}
	ids = slices.DeleteFunc(ids, func(x ID) bool { return x == id })
	if add {
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return txn.Delete(subjectKey(subject))
	}
	v := make([]byte, 0, len(ids)*len(ID{}))
	for _, x := range ids {
		v = append(v, x[:]...)
	}
	return txn.Set(subjectKey(subject), v)
}

// PendingBySubject implements Store.
func (s *Badger) PendingBySubject(ctx context.Context, subject string) ([]ID, error) {
	var out []ID
	err := s.db.View(func(txn *badger.Txn) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		var err error
		out, err = subjectIDs(txn, subject)
		return err
	})
	return out, err
}

// Settle implements Store.
func (s *Badger) Settle(ctx context.Context, id ID, st Settlement) (Watch, error) {
	if st.State == Pending || !st.State.Valid() || !st.Receipt.Valid() {
		return Watch{}, fmt.Errorf("store: settle to %q/%q", st.State, st.Receipt)
	}
	return s.transition(ctx, id, func(w *Watch) error {
		if w.State != Pending {
			return ErrNotPending
		}
		st.ApplyTo(w)
		return nil
	})
}

// ApplyTo writes the settlement onto w, a pending row, in one place for
// every backend's Settle and SettleAndMail.
func (st Settlement) ApplyTo(w *Watch) {
	at := st.SettledAt.UTC()
	w.State, w.Receipt, w.Outcome, w.SettledAt = st.State, st.Receipt, st.Outcome, &at
	w.Attempts, w.LastNote, w.LastFault = st.Attempts, st.LastNote, st.LastFault
	w.NextCheck = time.Time{} // a next check is a pending row's only
}

// SetReceipt implements Store.
func (s *Badger) SetReceipt(ctx context.Context, id ID, r Receipt) (Watch, error) {
	if !r.Valid() {
		return Watch{}, fmt.Errorf("store: receipt %q", r)
	}
	return s.transition(ctx, id, func(w *Watch) error {
		if w.State == Pending {
			return fmt.Errorf("store: receipt for a pending watch %s", id)
		}
		w.Receipt = r
		if r == ReceiptRejected && (w.State == Fired || w.State == Expired || w.State == Unwatchable) {
			// The recipient was not live: neither success nor failure of
			// the watch.
			w.State = Undeliverable
		}
		return nil
	})
}

// CarryBaseline implements Store.
func (s *Badger) CarryBaseline(ctx context.Context, id ID, baseline json.RawMessage, attempts int, note string) error {
	_, err := s.transition(ctx, id, func(w *Watch) error {
		if w.State != Pending {
			return ErrNotPending
		}
		carry(w, baseline, attempts, note)
		return nil
	})
	return err
}

// carry writes a standing row's new baseline and what its probes saw onto
// w, in one place for CarryBaseline and CarryAndMail.
func carry(w *Watch, baseline json.RawMessage, attempts int, note string) {
	w.Baseline, w.Attempts, w.LastNote, w.LastFault = baseline, attempts, note, nil
}

// SetNextCheck implements Store: it rewrites the pending index entry
// alone, not the row.
func (s *Badger) SetNextCheck(ctx context.Context, id ID, next time.Time) error {
	return s.update(ctx, func(txn *badger.Txn) error {
		sc, ok, err := readSchedule(txn, id)
		if err != nil {
			return err
		}
		var w Watch
		if !ok {
			// An older layout's empty entry: the row has the schedule.
			if w, err = getRow(txn, id); err != nil {
				return err
			}
			if w.State != Pending {
				return ErrNotPending
			}
		} else {
			w = Watch{State: Pending, Every: Duration(sc.Every), Attempts: sc.Attempts}
			if !sc.Expires.IsZero() {
				w.ExpiresAt = &sc.Expires
			}
		}
		w.NextCheck = next
		return txn.Set(stateKey(Pending, id), scheduleValue(w))
	})
}

// RecordProbe implements Store.
func (s *Badger) RecordProbe(ctx context.Context, id ID, p Probe) error {
	_, err := s.transition(ctx, id, func(w *Watch) error {
		if w.State != Pending {
			return ErrNotPending
		}
		w.Attempts, w.LastNote, w.LastFault, w.NextCheck = p.Attempts, p.Note, p.Fault, p.NextCheck
		return nil
	})
	return err
}

// List implements Store.
func (s *Badger) List(ctx context.Context, f Filter) ([]Watch, int, error) {
	var out []Watch
	held, err := s.ForEach(ctx, f, func(w Watch) error {
		out = append(out, w)
		return nil
	})
	return out, held, err
}

// ForEach calls fn with each readable row matching f, oldest first, without
// holding them all in memory, and returns how many rows it skipped because
// they are held aside. An error from fn stops the walk and is returned.
func (s *Badger) ForEach(ctx context.Context, f Filter, fn func(Watch) error) (int, error) {
	held := 0
	err := s.db.View(func(txn *badger.Txn) error {
		var prefix []byte
		switch {
		case f.Recipient != "":
			prefix = append(append(append([]byte{}, recipientPfx...), f.Recipient...), 0)
		case f.State != "":
			prefix = append(append(append([]byte{}, statePrefix...), f.State...), '/')
		default:
			prefix = rowPrefix
		}
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: prefix[0] == 'w'})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			key := it.Item().Key()
			var id ID
			copy(id[:], key[len(key)-16:])
			w, err := getRow(txn, id)
			if errors.Is(err, ErrNotFound) {
				held++
				continue
			}
			if err != nil {
				return err
			}
			if (f.State != "" && w.State != f.State) || (f.Kind != "" && w.Kind != f.Kind) || (f.RegisteredBy != "" && w.RegisteredBy != f.RegisteredBy) {
				continue
			}
			if err := fn(w); err != nil {
				return err
			}
		}
		return nil
	})
	return held, err
}

// Prune implements Store: settled rows, mailbox messages and final
// outbox records older than the cutoff. It deletes in batches, each its
// own transaction, so a large prune never exceeds badger's transaction
// size, but it decodes every settled row and message to find them: it is
// the start-time backstop for records an older build wrote without their
// time index. While the host runs, PruneOldest keeps each class by its
// index instead.
func (s *Badger) Prune(ctx context.Context, cutoff time.Time) (int, error) {
	total, err := s.pruneMessages(ctx, cutoff)
	if err != nil {
		return total, err
	}
	pushes, err := s.PrunePushes(ctx, cutoff)
	total += pushes
	if err != nil {
		return total, err
	}
	for _, st := range States() {
		if st == Pending {
			continue
		}
		for {
			var victims []Watch
			err := s.db.View(func(txn *badger.Txn) error {
				prefix := append(append(append([]byte{}, statePrefix...), st...), '/')
				it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
				defer it.Close()
				for it.Rewind(); it.Valid() && len(victims) < pruneBatch; it.Next() {
					key := it.Item().Key()
					var id ID
					copy(id[:], key[len(key)-16:])
					w, err := getRow(txn, id)
					if err != nil {
						continue // held aside, or a dangling index: leave it
					}
					if w.SettledAt != nil && w.SettledAt.Before(cutoff) {
						victims = append(victims, w)
					}
				}
				return nil
			})
			if err != nil {
				return total, err
			}
			if len(victims) == 0 {
				break
			}
			err = s.update(ctx, func(txn *badger.Txn) error {
				for _, w := range victims {
					if err := deleteRow(txn, w); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return total, err
			}
			total += len(victims)
			if len(victims) < pruneBatch {
				break
			}
		}
	}
	return total, nil
}

const pruneBatch = 1000

// badgerLogger sends badger's warnings and errors to slog; its chatty info
// and debug lines are dropped.
type badgerLogger struct{ l *slog.Logger }

func (b badgerLogger) Errorf(f string, a ...any) {
	if b.l != nil {
		b.l.Error(strings.TrimSpace(fmt.Sprintf(f, a...)), "component", "badger")
	}
}

func (b badgerLogger) Warningf(f string, a ...any) {
	if b.l != nil {
		b.l.Warn(strings.TrimSpace(fmt.Sprintf(f, a...)), "component", "badger")
	}
}

func (badgerLogger) Infof(string, ...any)  {}
func (badgerLogger) Debugf(string, ...any) {}

// CountByState counts readable and held-aside rows by the state index,
// reading keys only.
func (s *Badger) CountByState(ctx context.Context) (map[State]int, error) {
	out := map[State]int{}
	err := s.db.View(func(txn *badger.Txn) error {
		for _, st := range States() {
			prefix := append(append(append([]byte{}, statePrefix...), st...), '/')
			it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
			for it.Rewind(); it.Valid(); it.Next() {
				out[st]++
			}
			it.Close()
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// scheduleValue is the value of a pending row's state-index key: what the
// scheduler needs to arm the row (every, deadline, attempts, and the
// durable next check when it has one), so a restart reads the index alone
// instead of decoding every row. 20 bytes, 28 with a next check; rows in
// other states index with no value.
func scheduleValue(w Watch) []byte {
	if w.State != Pending {
		return nil
	}
	b := make([]byte, 0, scheduleLenNext)
	b = binary.BigEndian.AppendUint64(b, uint64(w.Every))
	var exp int64
	if w.ExpiresAt != nil {
		exp = w.ExpiresAt.UnixNano()
	}
	b = binary.BigEndian.AppendUint64(b, uint64(exp))
	b = binary.BigEndian.AppendUint32(b, uint32(w.Attempts))
	if !w.NextCheck.IsZero() {
		b = binary.BigEndian.AppendUint64(b, uint64(w.NextCheck.UnixNano()))
	}
	return b
}

// The pending index's layouts: every, deadline and attempts; then, when
// the row has a durable next check, its unix nanoseconds.
const (
	scheduleLen     = 20
	scheduleLenNext = 28
)

// decodeSchedule reads an index value into sc; false when v carries no
// schedule (an older layout, with no value).
func decodeSchedule(v []byte, sc *Schedule) bool {
	if len(v) != scheduleLen && len(v) != scheduleLenNext {
		return false
	}
	sc.Every = time.Duration(binary.BigEndian.Uint64(v[0:8]))
	if exp := int64(binary.BigEndian.Uint64(v[8:16])); exp != 0 {
		sc.Expires = time.Unix(0, exp).UTC()
	}
	sc.Attempts = int(binary.BigEndian.Uint32(v[16:20]))
	if len(v) == scheduleLenNext {
		sc.Next = time.Unix(0, int64(binary.BigEndian.Uint64(v[20:28]))).UTC()
	}
	return true
}

// Schedule is what arming a pending watch needs.
type Schedule struct {
	ID       ID
	Every    time.Duration
	Expires  time.Time // zero: no deadline (standing)
	Attempts int
	// Next is the durable next check (zero: none): the scheduler arms the
	// watch there instead of at a random point of its interval.
	Next time.Time
}

// ForEachPending calls fn with the schedule of every pending watch, read
// from the pending index alone (a row whose index entry carries no
// schedule is read whole). It returns how many it skipped as held aside.
func (s *Badger) ForEachPending(ctx context.Context, fn func(Schedule) error) (int, error) {
	held := 0
	err := s.db.View(func(txn *badger.Txn) error {
		prefix := append(append(append([]byte{}, statePrefix...), Pending...), '/')
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true, PrefetchSize: 256})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			key := it.Item().Key()
			var sc Schedule
			copy(sc.ID[:], key[len(key)-16:])
			var ok bool
			if err := it.Item().Value(func(v []byte) error {
				ok = decodeSchedule(v, &sc)
				return nil
			}); err != nil {
				return err
			}
			if !ok {
				w, err := getRow(txn, sc.ID)
				if err != nil || w.State != Pending {
					held++
					continue
				}
				sc.Every, sc.Attempts = time.Duration(w.Every), w.Attempts
				if w.ExpiresAt != nil {
					sc.Expires = *w.ExpiresAt
				}
			}
			if err := fn(sc); err != nil {
				return err
			}
		}
		return nil
	})
	return held, err
}
