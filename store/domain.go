package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"
)

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
}

// New is the store over kv. It indexes, once, the pending rows an older
// build wrote without their pending-by-kind entry, where the adapter's
// layout may hold some (Plan.Backfill).
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
	return s, nil
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

// tx is a transaction of the domain: the adapter's, and the store it
// belongs to (its plan).
type tx struct {
	Tx
	s *Store
}

// update runs fn in a transaction of the adapter; a write the context
// marks as a client's (ClientWrite) is told as one.
func (s *Store) update(ctx context.Context, o TxOptions, fn func(t tx) error) error {
	o.Client = o.Client || IsClientWrite(ctx)
	return s.kv.Update(ctx, o, func(t Tx) error { return fn(tx{t, s}) })
}

func (s *Store) view(ctx context.Context, fn func(t tx) error) error {
	return s.kv.View(ctx, func(t Tx) error { return fn(tx{t, s}) })
}

// batch is how many records one transaction of a batched transition
// (a prune, a recovery) takes: each writes at most four keys.
func (s *Store) batch() int { return s.plan.MaxWrites / 4 }

// The serialisation hints (Tx.Serialise): a recipient's commits that
// move its mailbox's sequence or its count of pending rows, an event
// stream's appends. One transaction moves one recipient's, or one
// stream's, never two.
func recipientHint(rid string) string { return "r\x00" + rid }
func streamHint(stream string) string { return "e\x00" + stream }

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
