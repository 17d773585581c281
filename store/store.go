package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Sentinel errors.
var (
	// ErrNotFound: no such watch or recipient (or it is held aside).
	ErrNotFound = errors.New("not found")
	// ErrNotPending: the transition needs a pending row and the row has
	// already settled (or was cancelled).
	ErrNotPending = errors.New("store: watch is not pending")
	// ErrExists: Create with an id already used.
	ErrExists = errors.New("store: watch id already exists")
	// ErrInUse: another process holds the data directory.
	ErrInUse = errors.New("store: data directory is in use by another process")
	// ErrStoreTooNew: the store was written by a newer release.
	ErrStoreTooNew = errors.New("store: written by a newer release of vigil")
	// ErrCorrupt: the store's files cannot be read.
	ErrCorrupt = errors.New("store: files are corrupt")
	// ErrBusy: a transition lost the race for its records to other
	// writers more times in a row than the backend retries (badger's
	// conflict retry, JetStream's revision fence); nothing of it was
	// written, and the same call may succeed a moment later. Both
	// backends wrap it with %w; the API answers it 503 store_busy with
	// Retry-After.
	ErrBusy = errors.New("store: busy: the records kept changing under the transition")
	// ErrNotOwner: an owner's transition (a probe's record, a settlement,
	// a baseline) refused because the partition of its row has passed to
	// another node since this one gained it (a cluster backend's fence);
	// nothing of it was written. The caller has lost the partition: it
	// drops the watch and does not retry. A single host never returns it.
	ErrNotOwner = errors.New("store: the partition has another owner now")
	// ErrUnavailable: the store could not be reached (no server answered,
	// the cluster has no leader or no quorum), or a commit was sent and
	// no answer came back. The error is an *UnavailableError, which says
	// whether the write may have happened; the API answers it 503
	// store_unavailable with Retry-After. A write sent again with its
	// idempotency key is safe either way.
	ErrUnavailable = errors.New("store: unavailable")
)

// UnavailableError is ErrUnavailable with what is known of the write:
// MayHaveWritten when a commit was sent and its answer never came (a
// timeout, a leader lost mid-commit), so it may have been stored; false
// when nothing was sent or the servers refused it (a read failed, no
// responders, a cluster that said it is unavailable).
type UnavailableError struct {
	Op             string
	MayHaveWritten bool
	Err            error
}

func (e *UnavailableError) Error() string {
	if e.MayHaveWritten {
		return fmt.Sprintf("store: unavailable: %s: no answer to a commit, which may have been written: %v", e.Op, e.Err)
	}
	return fmt.Sprintf("store: unavailable: %s: nothing was written: %v", e.Op, e.Err)
}

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

func (e *UnavailableError) Unwrap() error { return e.Err }

// Settlement is a pending row's final transition.
type Settlement struct {
	State     State // anything but Pending
	Receipt   Receipt
	Outcome   *Outcome
	SettledAt time.Time
	Attempts  int
	LastNote  string
	// LastFault is the final probe's fault, if it had one.
	LastFault *Fault
}

// Probe is what a pending row's probes have seen, as RecordProbe keeps
// it. The scheduler records it only when the note, the fault or the next
// check changes, so writes follow changes, not probes.
type Probe struct {
	Attempts  int
	Note      string
	Fault     *Fault
	NextCheck time.Time // zero: none
}

// Filter selects rows for List. Empty fields select all.
type Filter struct {
	Recipient string
	State     State
	Kind      string
	// RegisteredBy keeps the rows that principal registered. Like Kind,
	// it has no index; it is checked on the decoded row.
	RegisteredBy string
}

// Store is vigil's store: the records and every transition of them,
// written once over a KV (an adapter: store/badger, store/natsstore).
// What each method guarantees is in its comment and the package doc;
// store/storetest holds every adapter to them.
type Store struct {
	kv   KV
	plan Plan
	// retained is OnRetained's fn, or nil.
	retained atomic.Pointer[func(Retained, time.Time)]
	// floors say where each retained class's live records begin, as far
	// as this process has pruned it (Plan.Floors; retention).
	floors floors
	// counts are the recipients' counts of pending rows this process's
	// commits wrote (Plan.Exclusive).
	counts counts
}

// counts are the counts of pending rows this process's own commits wrote,
// by recipient, where the plan lets the domain keep them (Plan.Exclusive):
// each is set in its commit's Committed, under the recipient's
// serialisation, so the next commit of the recipient reads what the last
// one wrote.
type counts struct {
	mu sync.Mutex // guards n
	n  map[string]int
}

func (c *counts) get(rid string) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.n[rid]
	return n, ok
}

func (c *counts) forget(rid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.n, rid)
}

func (c *counts) set(rid string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[rid] = n
}

// run is what one Update's current run wrote that the process keeps
// once it commits.
type run struct {
	s      *Store
	counts []countSet
}

type countSet struct {
	rid string
	n   int
}

// committed keeps what the run wrote (TxOptions.Committed).
func (r *run) committed() {
	for _, c := range r.counts {
		r.s.counts.set(c.rid, c.n)
	}
}

// New is the store over kv. It indexes, once, the pending rows an older
// build wrote without their pending-by-kind entry, where the adapter's
// layout may hold some (Plan.Backfill), and without their due entry
// (due.go).
func New(ctx context.Context, kv KV) (*Store, error) {
	s := &Store{kv: kv, plan: kv.Plan(), floors: newFloors()}
	if s.plan.MaxWrites < 40 {
		return nil, fmt.Errorf("store: an adapter whose transactions write at most %d keys", s.plan.MaxWrites)
	}
	if s.plan.Backfill {
		if err := s.backfillPendingKinds(ctx); err != nil {
			return nil, err
		}
	}
	if err := s.backfillDue(ctx); err != nil {
		return nil, err
	}
	if s.plan.Exclusive {
		if err := s.dropUnkeptCounts(ctx); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// countsMarkerName is the marker that says every commit of this store
// that moves a row in or out of pending writes its recipient's count
// key. An exclusive store written by a build that kept the counts in
// memory alone may hold keys older than its rows.
const countsMarkerName = "pck"

// dropUnkeptCounts deletes, once in a store's life, the count keys an
// exclusive store holds from before its commits kept them (each
// recipient is counted from its index at its next use, and kept from
// then on), then writes the marker: a read of one key on every later
// open, and at most one key a recipient the once.
func (s *Store) dropUnkeptCounts(ctx context.Context) error {
	batch := s.batch()
	for {
		done := false
		var dropped []string
		err := s.update(ctx, TxOptions{Name: "drop-unkept-counts"}, func(t tx) error {
			done, dropped = false, dropped[:0]
			if _, ok, err := t.Get(kMarker(countsMarkerName)); err != nil || ok {
				done = ok
				return err
			}
			if err := t.Scan(Range{Prefix: Key{Fam: FamPendingCount}, KeysOnly: true, Want: batch}, func(k Key, _ []byte) (bool, error) {
				dropped = append(dropped, k.Name)
				return len(dropped) < batch, nil
			}); err != nil {
				return err
			}
			for _, rid := range dropped {
				t.Delete(kPendingCount(rid))
			}
			if len(dropped) < batch {
				t.Put(kMarker(countsMarkerName), nil)
				done = true
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("store: dropping the counts of pending rows kept in memory alone: %w", err)
		}
		if done {
			return nil
		}
	}
}

// KV is the adapter the store is over.
func (s *Store) KV() KV { return s.kv }

// Close closes the adapter.
func (s *Store) Close() error { return s.kv.Close() }

// DiskSpace is the adapter's report of its disk (DiskReporter), false
// when it keeps none of its own.
func (s *Store) DiskSpace() (DiskSpace, bool) {
	if d, ok := s.kv.(DiskReporter); ok {
		return d.DiskSpace()
	}
	return DiskSpace{}, false
}

// tx is a transaction of the domain: the adapter's, the store it
// belongs to (its plan), in an Update of an exclusive store what the
// run wrote that the process keeps, and the first value it wrote over
// the store's bound (Put).
type tx struct {
	Tx
	s    *Store
	r    *run
	over *error
}

// update runs fn in a transaction of the adapter; a write the context
// marks as a client's (ClientWrite) is told as one. A run that wrote a
// value over the store's bound (maxValue) commits nothing: it ends with
// a *ValueTooLargeError.
func (s *Store) update(ctx context.Context, o TxOptions, fn func(t tx) error) error {
	o.Client = o.Client || IsClientWrite(ctx)
	var r *run
	if s.plan.Exclusive {
		r = &run{s: s}
		o.Committed = r.committed
	}
	return s.kv.Update(ctx, o, func(t Tx) error {
		if r != nil {
			r.counts = r.counts[:0]
		}
		var over error
		if err := fn(tx{t, s, r, &over}); err != nil {
			return err
		}
		return over
	})
}

func (s *Store) view(ctx context.Context, fn func(t tx) error) error {
	return s.kv.View(ctx, func(t Tx) error { return fn(tx{t, s, nil, nil}) })
}

// MaxValue bounds every value the domain writes under one key, in
// bytes: below the smallest any adapter takes (a JetStream message is
// 1 MiB by default, its subject and headers included; this leaves them
// 64 KiB), so a transition never fails in the adapter for a value's
// size, where a settlement would be tried again forever. An adapter
// that takes less says so (Plan.MaxValue). The records that can grow
// with what clients send are bounded below it where they are made (a
// mailed message's outcome, a kept answer); Put refuses any other.
const MaxValue = 1<<20 - 64<<10

// maxValue is the bound on a value this store writes: MaxValue, or the
// adapter's own, if it is less.
func (s *Store) maxValue() int {
	if m := s.plan.MaxValue; m > 0 && m < MaxValue {
		return m
	}
	return MaxValue
}

// MaxValue is the bound on a value this store writes (the package's
// MaxValue, or less where the adapter takes less), for a caller that
// bounds what it hands the store.
func (s *Store) MaxValue() int { return s.maxValue() }

// ErrValueTooLarge: a transition would have written a value over the
// store's bound (Store.MaxValue); nothing of it was written. The records
// a client's input can grow are bounded before they get here, so this
// is a bug's answer, told at once instead of a commit the adapter
// refuses. The error is a *ValueTooLargeError.
var ErrValueTooLarge = errors.New("store: a value over the store's bound")

// ValueTooLargeError is ErrValueTooLarge naming the record's family,
// its size and the bound.
type ValueTooLargeError struct {
	Fam         Family
	Size, Limit int
}

func (e *ValueTooLargeError) Error() string {
	return fmt.Sprintf("store: a value of %s of %d bytes, over the store's bound of %d: nothing was written", e.Fam, e.Size, e.Limit)
}

// Is makes errors.Is(err, ErrValueTooLarge) true.
func (e *ValueTooLargeError) Is(target error) bool { return target == ErrValueTooLarge }

// Put writes v under k, unless v is over the store's bound: the run then
// ends with a *ValueTooLargeError and writes nothing.
func (t tx) Put(k Key, v []byte) {
	if limit := t.s.maxValue(); len(v) > limit {
		if t.over != nil && *t.over == nil {
			*t.over = &ValueTooLargeError{Fam: k.Fam, Size: len(v), Limit: limit}
		}
		return
	}
	t.Tx.Put(k, v)
}

// batch is how many records one transaction of a batched transition
// (a prune, a recovery) takes: each writes at most four keys.
func (s *Store) batch() int { return s.plan.MaxWrites / 4 }

// The serialisation hints (Tx.Serialise): a recipient's commits that
// move its mailbox's sequence or its count of pending rows (the hint is
// its id), an event stream's appends (its name). One transaction moves
// one recipient's, or one stream's, never two; a recipient and a stream
// of one name share a hint, which only serialises them.
func recipientHint(rid string) string { return rid }
func streamHint(stream string) string { return stream }

// prefetch reads keys a transaction will Get at once, where the adapter's
// reads are requests (Plan.Remote); a local adapter's Gets need none.
func (t tx) prefetch(ks ...Key) error {
	if !t.s.plan.Remote {
		return nil
	}
	return t.Prefetch(ks...)
}

// The keys of each family, by their parts.
func kRow(id ID) Key                   { return Key{Fam: FamRow, ID: id} }
func kState(st State, id ID) Key       { return Key{Fam: FamState, Sub: string(st), ID: id} }
func kRecipient(rid string, id ID) Key { return Key{Fam: FamRecipientIndex, Name: rid, ID: id} }
func kRecipientPending(rid string, id ID) Key {
	return Key{Fam: FamRecipientPending, Name: rid, ID: id}
}
func kPendingCount(rid string) Key        { return Key{Fam: FamPendingCount, Name: rid} }
func kPendingKind(kind string, id ID) Key { return Key{Fam: FamPendingKind, Name: kind, ID: id} }
func kSubject(subject string) Key         { return Key{Fam: FamSubject, Name: subject} }
func kMessage(rid string, seq uint64) Key { return Key{Fam: FamMessage, Name: rid, Seq: seq} }
func kMailSeq(rid string) Key             { return Key{Fam: FamMailSeq, Name: rid} }
func kPush(rid string, seq uint64) Key    { return Key{Fam: FamPush, Name: rid, Seq: seq} }
func kLivePush(rid string, seq uint64) Key {
	return Key{Fam: FamLivePush, Name: rid, Seq: seq}
}
func kSettledAt(at time.Time, id ID) Key { return Key{Fam: FamSettledAt, At: atNanos(at), ID: id} }
func kMessageAt(at time.Time, rid string, seq uint64) Key {
	return Key{Fam: FamMessageAt, At: atNanos(at), Name: rid, Seq: seq}
}
func kPushAt(at time.Time, rid string, seq uint64) Key {
	return Key{Fam: FamPushAt, At: atNanos(at), Name: rid, Seq: seq}
}
func kEvent(stream string, seq uint64) Key { return Key{Fam: FamEvent, Name: stream, Seq: seq} }
func kEventKey(stream, key string) Key     { return Key{Fam: FamEventKey, Name: stream, Sub: key} }
func kEventSeq(stream string) Key          { return Key{Fam: FamEventSeq, Name: stream} }
func kWork(id ID) Key                      { return Key{Fam: FamWork, ID: id} }
func kWorkInput(id ID, n int) Key          { return Key{Fam: FamWorkInput, ID: id, Seq: uint64(uint32(n))} }
func kWorkOwner(thread string) Key         { return Key{Fam: FamWorkOwner, Name: thread} }
func kWorkScope(scope string, st WorkState, id ID) Key {
	return Key{Fam: FamWorkScope, Name: scope, Sub: string(st), ID: id}
}
func kRouter(name string) Key         { return Key{Fam: FamRouter, Name: name} }
func kRecipientRec(rid string) Key    { return Key{Fam: FamRecipient, Name: rid} }
func kIdem(principal, key string) Key { return Key{Fam: FamIdem, Name: principal, Sub: key} }
func kMarker(name string) Key         { return Key{Fam: FamMarker, Name: name} }
func kIdemAt(i *Idem) Key {
	return Key{Fam: FamIdemAt, At: atNanos(i.At), Name: i.Principal, Sub: i.Key}
}

// seqOf reads a sequence (8 bytes, big-endian) under k: found false when
// k is absent.
func (t tx) seqOf(k Key) (seq uint64, found bool, err error) {
	v, ok, err := t.Get(k)
	if err != nil || !ok {
		return 0, false, err
	}
	if len(v) != 8 {
		return 0, true, fmt.Errorf("%w: sequence under %s %q", ErrCorrupt, k.Fam, k.Name)
	}
	return binary.BigEndian.Uint64(v), true, nil
}

func seqBytes(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

// seqsAfter is the seqs above after, up to last and limit of them, that
// a dense sequence of keys (a mailbox's, a stream's) still holds, in
// order. A local adapter scans for them from after (its scan seeks); a
// remote one reads them by key while they are there, and lists the
// range once to step over a gap (pruned ones).
func (t tx) seqsAfter(r Range, key func(seq uint64) Key, after, last uint64, limit int) ([]uint64, error) {
	if after >= last || limit <= 0 {
		return nil, nil
	}
	if t.s.plan.Remote {
		if _, ok, err := t.Get(key(after + 1)); err != nil {
			return nil, err
		} else if ok {
			var out []uint64
			for seq := after + 1; seq <= last && len(out) < limit; seq++ {
				out = append(out, seq)
			}
			return out, nil
		}
	}
	var out []uint64
	r.KeysOnly, r.Want = true, limit
	err := t.Scan(r.FromKey(key(after+1)), func(k Key, _ []byte) (bool, error) {
		if k.Seq > last {
			return false, nil
		}
		out = append(out, k.Seq)
		return len(out) < limit, nil
	})
	return out, err
}
