package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
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

// The time-ordered indexes of the classes whose records are not keyed by
// time, each written in the transaction that makes its record retained
// and deleted with it. An index entry whose record has gone, or no longer
// carries the entry's time, is dropped by the next prune that reaches it.
var (
	settledAtPfx = []byte("sa/") // sa/<settled_at><id>
	messageAtPfx = []byte("ma/") // ma/<at><recipient>\x00<seq>
	pushAtPfx    = []byte("pa/") // pa/<updated_at><recipient>\x00<seq>, final pushes only
)

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

// timeKey is pfx, t as 8 bytes that sort as the times do, then rest.
func timeKey(pfx []byte, t time.Time, rest []byte) []byte {
	k := make([]byte, 0, len(pfx)+8+len(rest))
	k = append(k, pfx...)
	k = binary.BigEndian.AppendUint64(k, uint64(atNanos(t))^(1<<63))
	return append(k, rest...)
}

// splitTimeKey undoes timeKey.
func splitTimeKey(pfx, k []byte) (int64, []byte, bool) {
	if !bytes.HasPrefix(k, pfx) || len(k) < len(pfx)+8 {
		return 0, nil, false
	}
	k = k[len(pfx):]
	return int64(binary.BigEndian.Uint64(k[:8]) ^ (1 << 63)), k[8:], true
}

func settledAtKey(t time.Time, id ID) []byte { return timeKey(settledAtPfx, t, id[:]) }

func messageAtKey(t time.Time, rid string, seq uint64) []byte {
	return timeKey(messageAtPfx, t, pushKeyOf(nil, rid, seq))
}

func pushAtKey(t time.Time, rid string, seq uint64) []byte {
	return timeKey(pushAtPfx, t, pushKeyOf(nil, rid, seq))
}

// indexSettled writes a settled row's settled_at entry inside txn.
func indexSettled(txn *badger.Txn, w Watch) error {
	if w.State == Pending || w.SettledAt == nil {
		return nil
	}
	return txn.Set(settledAtKey(*w.SettledAt, w.ID), nil)
}

// OnRetained sets fn to be told, after each commit that wrote a retained
// record, its class and the time it is ordered by (several records of one
// commit may be told as one, by the earliest). fn runs on the writer's
// goroutine after the commit and must not block; nil stops the calls.
// The store decides nothing with it: it is how a component that prunes
// learns that a class which read empty has a record again.
func (s *Badger) OnRetained(fn func(c Retained, at time.Time)) {
	if fn == nil {
		s.retained.Store(nil)
		return
	}
	s.retained.Store(&fn)
}

// noteRetained tells OnRetained's fn of a committed record, after
// lowering the class's floor to it.
func (s *Badger) noteRetained(c Retained, at time.Time) {
	s.floors.lower(c, atNanos(at))
	if fn := s.retained.Load(); fn != nil {
		(*fn)(c, at)
	}
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

// Oldest returns the time of c's oldest record, or ok false when c holds
// none. It reads one index entry (an event stream: its first readable
// event), never the whole class.
func (s *Badger) Oldest(ctx context.Context, c Retained) (at time.Time, ok bool, err error) {
	err = s.db.View(func(txn *badger.Txn) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		from, floored := s.floors.seek(c)
		if stream, isEvents := c.Stream(); isEvents {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: eventStreamPrefix(stream), PrefetchValues: false})
			defer it.Close()
			for it.Seek(eventKey(stream, uint64(max(from, 0)))); it.Valid(); it.Next() {
				var se storedEvent
				if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &se) }); err != nil || se.V != rowVersion {
					continue // held aside: PruneOldest skips it too
				}
				at, ok = se.OccurredAt, true
				return nil
			}
			return nil
		}
		pfx, err := classIndex(c)
		if err != nil {
			return err
		}
		it := txn.NewIterator(badger.IteratorOptions{Prefix: pfx, PrefetchValues: false})
		defer it.Close()
		if floored {
			it.Seek(timeKey(pfx, time.Unix(0, from), nil))
		} else {
			it.Rewind()
		}
		if !it.Valid() {
			return nil
		}
		n, _, valid := splitTimeKey(pfx, it.Item().Key())
		if !valid {
			return fmt.Errorf("%w: index key %q", ErrCorrupt, it.Item().Key())
		}
		at, ok = time.Unix(0, n).UTC(), true
		return nil
	})
	return at, ok, err
}

func classIndex(c Retained) ([]byte, error) {
	switch c {
	case RetainedSettled:
		return settledAtPfx, nil
	case RetainedMessages:
		return messageAtPfx, nil
	case RetainedPushes:
		return pushAtPfx, nil
	case RetainedIdem:
		return idemAtPfx, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownClass, c)
}

// PruneOldest deletes up to limit of c's records older than cutoff,
// oldest first, in one transaction, and returns how many entries it took
// off c's order: records deleted with their index entries, and index
// entries whose record had gone or moved, dropped alone. A pending row, a
// push that is not final and a held-aside record are never deleted. It
// stops at the first record at or after cutoff, so a batch costs what it
// deletes, not what the class holds.
func (s *Badger) PruneOldest(ctx context.Context, c Retained, cutoff time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, fmt.Errorf("store: prune a batch of %d", limit)
	}
	from, floored := s.floors.begin(c)
	committed := false
	var raise int64
	defer func() { s.floors.end(c, raise, committed) }()
	var prune func(txn *badger.Txn) (int, int64, error)
	if stream, ok := c.Stream(); ok {
		seq := uint64(0)
		if floored {
			seq = uint64(from)
		}
		prune = func(txn *badger.Txn) (int, int64, error) { return pruneEventBatch(txn, stream, seq, cutoff, limit) }
	} else {
		pfx, err := classIndex(c)
		if err != nil {
			return 0, err
		}
		var drop func(txn *badger.Txn, at int64, rest []byte) error
		switch c {
		case RetainedSettled:
			drop = dropSettled
		case RetainedMessages:
			drop = dropMessage
		case RetainedPushes:
			drop = dropPush
		case RetainedIdem:
			drop = dropIdem
		}
		start := int64(math.MinInt64)
		if floored {
			start = from
		}
		prune = func(txn *badger.Txn) (int, int64, error) {
			return pruneIndexBatch(txn, pfx, start, cutoff, limit, drop)
		}
	}
	n := 0
	err := s.update(ctx, func(txn *badger.Txn) error {
		var err error
		n, raise, err = prune(txn)
		if err == nil && n > 0 {
			err = s.fail("pruning")
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	committed = n > 0
	return n, nil
}

// pruneIndexBatch walks the time index pfx from the time from, and for
// each of up to limit entries before cutoff calls drop (which deletes the
// record if it still carries the entry's time) and deletes the entry. It
// returns how many, and the last one's time.
func pruneIndexBatch(txn *badger.Txn, pfx []byte, from int64, cutoff time.Time, limit int, drop func(txn *badger.Txn, at int64, rest []byte) error) (int, int64, error) {
	type victim struct {
		key  []byte
		at   int64
		rest []byte
	}
	var victims []victim
	cut := atNanos(cutoff)
	it := txn.NewIterator(badger.IteratorOptions{Prefix: pfx, PrefetchValues: false})
	for it.Seek(timeKey(pfx, time.Unix(0, from), nil)); it.Valid() && len(victims) < limit; it.Next() {
		k := it.Item().KeyCopy(nil)
		at, rest, ok := splitTimeKey(pfx, k)
		if !ok {
			it.Close()
			return 0, 0, fmt.Errorf("%w: index key %q", ErrCorrupt, k)
		}
		if at >= cut {
			break
		}
		victims = append(victims, victim{k, at, rest})
	}
	it.Close()
	for _, v := range victims {
		if err := drop(txn, v.at, v.rest); err != nil {
			return 0, 0, err
		}
		if err := txn.Delete(v.key); err != nil {
			return 0, 0, err
		}
	}
	if len(victims) == 0 {
		return 0, 0, nil
	}
	return len(victims), victims[len(victims)-1].at, nil
}

// dropSettled deletes a settled row with its indexes, if it is still the
// settled row the entry names.
func dropSettled(txn *badger.Txn, at int64, rest []byte) error {
	if len(rest) != len(ID{}) {
		return fmt.Errorf("%w: settled index entry", ErrCorrupt)
	}
	w, err := getRow(txn, ID(rest))
	if errors.Is(err, ErrNotFound) {
		return nil // gone, or held aside: never ours to delete
	}
	if err != nil {
		return err
	}
	if w.State == Pending || w.SettledAt == nil || atNanos(*w.SettledAt) != at {
		return nil
	}
	return deleteRow(txn, w)
}

// deleteRow deletes a settled row and its index entries inside txn.
func deleteRow(txn *badger.Txn, w Watch) error {
	keys := [][]byte{rowKey(w.ID), stateKey(w.State, w.ID), recipientKey(w.Recipient.ID, w.ID)}
	if w.SettledAt != nil {
		keys = append(keys, settledAtKey(*w.SettledAt, w.ID))
	}
	for _, k := range keys {
		if err := txn.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// dropMessage deletes a mailbox message if it is still the one the entry
// names.
func dropMessage(txn *badger.Txn, at int64, rest []byte) error {
	rid, seq, ok := splitPushKey(rest)
	if !ok {
		return fmt.Errorf("%w: message index entry", ErrCorrupt)
	}
	m, err := getMessage(txn, rid, seq)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if atNanos(m.At) != at {
		return nil
	}
	return txn.Delete(mailKey(rid, seq))
}

// dropPush deletes a final outbox record if it is still the one the entry
// names.
func dropPush(txn *badger.Txn, at int64, rest []byte) error {
	rid, seq, ok := splitPushKey(rest)
	if !ok {
		return fmt.Errorf("%w: push index entry", ErrCorrupt)
	}
	p, err := getPush(txn, rid, seq)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if !p.State.Final() || atNanos(p.UpdatedAt) != at {
		return nil
	}
	return txn.Delete(pushKeyOf(pushPfx, rid, seq))
}

// pruneEventBatch deletes up to limit of stream's events that occurred
// before cutoff, oldest first from the seq from, with their idempotency
// keys. Held-aside events are stepped over and kept. It returns how many,
// and the seq after the last one.
func pruneEventBatch(txn *badger.Txn, stream string, from uint64, cutoff time.Time, limit int) (int, int64, error) {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: eventStreamPrefix(stream), PrefetchValues: true})
	var dels [][]byte
	n := 0
	var next uint64
	for it.Seek(eventKey(stream, from)); it.Valid() && n < limit; it.Next() {
		var se storedEvent
		if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &se) }); err != nil || se.V != rowVersion {
			continue // held aside: not ours to delete
		}
		if !se.OccurredAt.Before(cutoff) {
			break
		}
		dels = append(dels, it.Item().KeyCopy(nil), eventIndexKey(stream, se.Key))
		next = se.Seq + 1
		n++
	}
	it.Close()
	for _, k := range dels {
		if err := txn.Delete(k); err != nil {
			return 0, 0, err
		}
	}
	return n, int64(next), nil
}
