package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
)

// Retained names a class of records the store keeps for a retention and
// can read and prune oldest first: Oldest says when the oldest one was
// written, PruneOldest deletes a bounded batch of those older than a
// cutoff. What the retention is, and when to prune, is the caller's.
type Retained string

// The retained classes. Each is ordered by one time: settled rows by
// settled_at, mailbox messages by at, final outbox records by updated_at
// (when they became final), an event stream by occurred_at, idempotency
// records (RetainedIdem, idem.go) by when their request came.
const (
	RetainedSettled  Retained = "settled"
	RetainedMessages Retained = "messages"
	RetainedPushes   Retained = "pushes"
)

const retainedEventsPfx = "events:"

// RetainedEvents is the class of one event stream's events.
func RetainedEvents(stream string) Retained { return Retained(retainedEventsPfx + stream) }

// Stream is the event stream of an events class, if c is one.
func (c Retained) Stream() (string, bool) {
	return strings.CutPrefix(string(c), retainedEventsPfx)
}

// ErrUnknownClass: Oldest or PruneOldest was given a class the store does
// not keep in time order.
var ErrUnknownClass = errors.New("store: unknown retained class")

var (
	minNanos = time.Unix(0, math.MinInt64).UTC()
	maxNanos = time.Unix(0, math.MaxInt64).UTC()
)

// atNanos is t as nanoseconds since the epoch, clamped to what an int64
// holds (a zero time sorts first).
func atNanos(t time.Time) int64 {
	switch {
	case t.Before(minNanos):
		return math.MinInt64
	case t.After(maxNanos):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// floors make the oldest of a class one seek. Badger keeps a deleted
// key's tombstone until compaction reaches the last level, so an iterator
// from the start of an index steps over every entry pruned since: a
// backlog pruned batch by batch would cost each batch all the batches
// before it. Each class's floor is the time (an event stream's: the seq)
// before which this process has pruned everything; Oldest and PruneOldest
// seek there. A record written below a floor (settled_at is a probe's
// start, so a little in the past) lowers it in noteRetained, which every
// writer of an index entry calls after its commit, and a prune raises its
// floor only to the earliest time written while it ran. A floor lives in
// memory only: a restart seeks from the start once.
type floors struct {
	// mu guards at and low.
	mu sync.Mutex
	// at is each class's floor, in nanoseconds (events: the next seq);
	// absent, no floor.
	at map[Retained]int64
	// low is the earliest time noted since the class's running prune
	// began.
	low map[Retained]int64
	// pruning serialises the prunes of each class.
	pruning map[Retained]*sync.Mutex
	pmu     sync.Mutex
}

func newFloors() floors {
	return floors{at: map[Retained]int64{}, low: map[Retained]int64{}, pruning: map[Retained]*sync.Mutex{}}
}

// seek is where a class's live records begin.
func (f *floors) seek(c Retained) (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	at, ok := f.at[c]
	return at, ok
}

// lower moves c's floor down to at, if it is above it, and remembers at
// for a prune running meanwhile.
func (f *floors) lower(c Retained, at int64) {
	if _, events := c.Stream(); events {
		return // a new event's seq is always above the floor
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if cur, ok := f.at[c]; ok && at < cur {
		f.at[c] = at
	}
	if low, ok := f.low[c]; ok && at < low {
		f.low[c] = at
	}
}

// begin starts a prune of c: it holds c's prune lock until end and
// returns where to seek from.
func (f *floors) begin(c Retained) (from int64, ok bool) {
	f.pmu.Lock()
	m, have := f.pruning[c]
	if !have {
		m = &sync.Mutex{}
		f.pruning[c] = m
	}
	f.pmu.Unlock()
	m.Lock()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.low[c] = math.MaxInt64
	from, ok = f.at[c]
	return from, ok
}

// end finishes a prune of c. When it committed, raise is how far the
// prune emptied the class (the last pruned time, or an event stream's next
// seq); the floor rises to it, or only to the earliest time written
// meanwhile.
func (f *floors) end(c Retained, raise int64, committed bool) {
	f.mu.Lock()
	if committed {
		if _, events := c.Stream(); !events {
			raise = min(raise, f.low[c])
		}
		if cur, ok := f.at[c]; !ok || raise > cur {
			f.at[c] = raise
		}
	}
	delete(f.low, c)
	f.mu.Unlock()
	f.pmu.Lock()
	m := f.pruning[c]
	f.pmu.Unlock()
	m.Unlock()
}

// OnRetained sets fn to be told, after each commit of this process that
// wrote a retained record, its class and the time it is ordered by
// (several records of one commit may be told as one, by the earliest).
// fn runs on the writer's goroutine after the commit and must not block;
// nil stops the calls. The store decides nothing with it: it is how a
// component that prunes learns that a class which read empty has a
// record again. Other processes' commits are told by a feed (Feeds).
func (s *Store) OnRetained(fn func(c Retained, at time.Time)) {
	if fn == nil {
		s.retained.Store(nil)
		return
	}
	s.retained.Store(&fn)
}

// noteRetained tells OnRetained's fn of a committed record, after
// lowering the class's floor to it.
func (s *Store) noteRetained(c Retained, at time.Time) {
	if s.plan.Floors {
		s.floors.lower(c, atNanos(at))
	}
	if fn := s.retained.Load(); fn != nil {
		(*fn)(c, at)
	}
}

// floor is where class c's live records begin as far as this process
// has pruned it, where the plan keeps floors.
func (s *Store) floor(c Retained) (int64, bool) {
	if !s.plan.Floors {
		return 0, false
	}
	return s.floors.seek(c)
}

// classFamily is the time index of a class not keyed by time.
func classFamily(c Retained) (Family, error) {
	switch c {
	case RetainedSettled:
		return FamSettledAt, nil
	case RetainedMessages:
		return FamMessageAt, nil
	case RetainedPushes:
		return FamPushAt, nil
	case RetainedIdem:
		return FamIdemAt, nil
	}
	return "", fmt.Errorf("%w: %q", ErrUnknownClass, c)
}

// Oldest returns the time of c's oldest record, or ok false when c holds
// none. It reads one index entry (an event stream: its first readable
// event) from the class's floor, never the whole class where the adapter
// seeks.
func (s *Store) Oldest(ctx context.Context, c Retained) (at time.Time, ok bool, err error) {
	from, floored := s.floor(c)
	err = s.view(ctx, func(t tx) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if stream, isEvents := c.Stream(); isEvents {
			after := uint64(0)
			if floored && from > 0 {
				after = uint64(from) - 1
			}
			evs, err := t.readEvents(ctx, stream, after, 1, nil)
			if err != nil || len(evs) == 0 {
				return err
			}
			at, ok = evs[0].OccurredAt, true
			return nil
		}
		fam, err := classFamily(c)
		if err != nil {
			return err
		}
		r := Range{Prefix: Key{Fam: fam}, KeysOnly: true, Want: 1}
		if floored {
			r = r.FromKey(Key{Fam: fam, At: from})
		}
		return t.Scan(r, func(k Key, _ []byte) (bool, error) {
			at, ok = time.Unix(0, k.At).UTC(), true
			return false, nil
		})
	})
	return at, ok, err
}

// PruneOldest deletes up to limit of c's records older than cutoff,
// oldest first, in one transaction, and returns how many entries it took
// off c's order: records deleted with their index entries, and index
// entries whose record had gone or moved, dropped alone. A pending row, a
// push that is not final and a held-aside record are never deleted. It
// stops at the first record at or after cutoff, so a batch costs what it
// deletes, not what the class holds, and takes no serialisation the
// appends take. limit is held to what one transaction of the adapter
// takes.
func (s *Store) PruneOldest(ctx context.Context, c Retained, cutoff time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, fmt.Errorf("store: prune a batch of %d", limit)
	}
	limit = min(limit, s.batch())
	var fam Family
	stream, isEvents := c.Stream()
	if !isEvents {
		var err error
		if fam, err = classFamily(c); err != nil {
			return 0, err
		}
	}
	from, floored := int64(0), false
	if s.plan.Floors {
		from, floored = s.floors.begin(c)
	}
	committed := false
	var raise int64
	if s.plan.Floors {
		defer func() { s.floors.end(c, raise, committed) }()
	}
	if isEvents {
		seq := uint64(0)
		if floored {
			seq = uint64(from)
		}
		n, next, err := s.pruneEventBatch(ctx, stream, seq, cutoff, limit)
		if err != nil {
			return 0, err
		}
		committed, raise = n > 0, int64(next)
		return n, nil
	}
	n := 0
	cut := atNanos(cutoff)
	err := s.update(ctx, TxOptions{Name: "prune-oldest"}, func(t tx) error {
		n, raise = 0, 0
		r := Range{Prefix: Key{Fam: fam}, KeysOnly: true, Want: limit}
		if floored {
			r = r.FromKey(Key{Fam: fam, At: from})
		} else {
			r = r.FromKey(Key{Fam: fam, At: math.MinInt64})
		}
		var victims []Key
		if err := t.Scan(r, func(k Key, _ []byte) (bool, error) {
			if k.At >= cut {
				return false, nil
			}
			victims = append(victims, k)
			return len(victims) < limit, nil
		}); err != nil {
			return err
		}
		for _, k := range victims {
			if err := t.dropRetained(c, k); err != nil {
				return err
			}
			t.Delete(k)
		}
		if len(victims) > 0 {
			n, raise = len(victims), victims[len(victims)-1].At
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	committed = n > 0
	return n, nil
}

// dropRetained deletes the record a time index entry k names, if it is
// still the record the entry names (carries the entry's time) and may be
// deleted: never a pending row, a live push or a held-aside record.
func (t tx) dropRetained(c Retained, k Key) error {
	switch c {
	case RetainedSettled:
		w, err := t.getRow(k.ID)
		if errors.Is(err, ErrNotFound) {
			return nil // gone, or held aside: never ours to delete
		}
		if err != nil {
			return err
		}
		if w.State != Pending && w.SettledAt != nil && atNanos(*w.SettledAt) == k.At {
			t.deleteRow(w)
		}
	case RetainedMessages:
		m, err := t.getMessage(k.Name, k.Seq)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if atNanos(m.At) == k.At {
			t.Delete(Key{Fam: FamMessage, Name: k.Name, Seq: k.Seq, OneWay: k.OneWay})
		}
	case RetainedPushes:
		p, err := t.getPush(k.Name, k.Seq)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if p.State.Final() && atNanos(p.UpdatedAt) == k.At {
			t.Delete(Key{Fam: FamPush, Name: k.Name, Seq: k.Seq, OneWay: k.OneWay})
		}
	case RetainedIdem:
		rec := Key{Fam: FamIdem, Name: k.Name, Sub: k.Sub, OneWay: k.OneWay}
		v, ok, err := t.Get(rec)
		if err != nil || !ok {
			return err
		}
		r, err := DecodeIdem(v)
		if err != nil || atNanos(r.At) != k.At {
			return nil // unreadable or rewritten since: not this entry's
		}
		t.Delete(rec)
	}
	return nil
}

// Prune deletes rows settled before cutoff, and mailbox messages and
// final outbox records older than it, and returns how many. It deletes in
// batches, each its own transaction, but it decodes every settled row,
// message and push to find them: it is the start-time backstop for
// records an older build wrote without their time index. While the host
// runs, PruneOldest keeps each class by its index instead. Pending rows
// and held-aside rows are never pruned.
func (s *Store) Prune(ctx context.Context, cutoff time.Time) (int, error) {
	total, err := s.pruneScan(ctx, "prune-messages", Key{Fam: FamMessage}, func(_ Key, v []byte) bool {
		var sm storedMessage
		return json.Unmarshal(v, &sm) == nil && sm.V == rowVersion && sm.At.Before(cutoff)
	}, func(t tx, k Key) (bool, error) {
		v, ok, err := t.Get(k)
		if err != nil || !ok {
			return false, err
		}
		m, err := t.messageOf(k, v)
		if err != nil || !m.At.Before(cutoff) {
			return false, nil
		}
		t.Delete(k)
		t.Delete(Key{Fam: FamMessageAt, At: atNanos(m.At), Name: k.Name, Seq: k.Seq, OneWay: k.OneWay})
		return true, nil
	})
	if err != nil {
		return total, err
	}
	pushes, err := s.PrunePushes(ctx, cutoff)
	total += pushes
	if err != nil {
		return total, err
	}
	old := func(w Watch) bool { return w.State != Pending && w.SettledAt != nil && w.SettledAt.Before(cutoff) }
	rows, err := s.pruneScan(ctx, "prune-rows", Key{Fam: FamRow}, func(k Key, v []byte) bool {
		w, err := DecodeRow(k.ID[:], v)
		return err == nil && old(w)
	}, func(t tx, k Key) (bool, error) {
		w, err := t.getRow(k.ID)
		if err != nil || !old(w) {
			return false, nil
		}
		t.deleteRow(w)
		return true, nil
	})
	return total + rows, err
}

// indexedMarkerName is the marker that says every retained record of
// the store has its time index: the start-time backstop (Prune) has run
// once over it, and this build writes every record with its index.
const indexedMarkerName = "tix"

// PruneUnindexed is the start-time backstop of the retention, run once
// in a store's life: while the marker "tix" is absent it prunes as Prune
// does (decoding every settled row, message and push, for the records an
// older build wrote without their time index) and then writes the
// marker; once it is there, it reads nothing else and returns 0, and the
// time indexes (PruneOldest) keep every class. So a restart decodes no
// row to prune.
func (s *Store) PruneUnindexed(ctx context.Context, cutoff time.Time) (int, error) {
	done := false
	if err := s.view(ctx, func(t tx) error {
		_, ok, err := t.Get(kMarker(indexedMarkerName))
		done = ok
		return err
	}); err != nil || done {
		return 0, err
	}
	n, err := s.Prune(ctx, cutoff)
	if err != nil {
		return n, err
	}
	return n, s.update(ctx, TxOptions{Name: "mark-indexed"}, func(t tx) error {
		t.Put(kMarker(indexedMarkerName), nil)
		return nil
	})
}
