package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// The due index (FamDue): every pending row, keyed by when it is due,
// so the scheduler holds in memory only what is due within a window
// ahead of now and reads the next slice by time as the window advances,
// and a restart reads the first window, never every pending row.
//
// A row's key is its due time as the store knows it, written in the
// transactions that write the row's pending state entry (create, each
// rewrite of a pending row, SetNextCheck) and deleted in the one that
// moves it out of pending; so the index is written when the schedule
// changes, never as time passes:
//
//   - a row with a durable next check (Watch.NextCheck: a kind's hint, a
//     first check, a timer's instant, or a re-arm the scheduler wrote
//     because it fell beyond its window) is due then;
//   - a row with none is due by its cadence from when it was last armed,
//     which the store does not know and is not told at each probe: its
//     key is its registration instant (its id's time), a bound its due
//     time is never before. Such a row is read with the overdue slice of
//     a restart's first window and armed within its cadence from then,
//     as Prime always armed it; while the host runs it is in memory,
//     since the scheduler writes a next check for any re-arm beyond its
//     window.
//
// The key is never after the row's due time, so a window that reads the
// keys up to its edge holds every watch due before the edge.
//
// The value is the row's schedule, the bytes of its pending state entry,
// so a window's scan reads the index alone.

// dueMarkerName is the marker that says the due index covers every
// pending row: New indexes the pending rows of a store an older build
// wrote while it is absent.
const dueMarkerName = "due"

// dueBatch bounds how many pending rows one backfill transaction indexes.
const dueBatch = 1000

// DueKey is a position in the due index: a due time (unix nanoseconds)
// and an id. The zero DueKey is before every key.
type DueKey struct {
	At int64
	ID ID
}

// Less orders two positions as the index does.
func (a DueKey) Less(b DueKey) bool {
	if a.At != b.At {
		return a.At < b.At
	}
	return string(a.ID[:]) < string(b.ID[:])
}

// DueAt is the due index's time of a pending row whose durable next check
// is next (zero: none): next, else its registration instant.
func DueAt(id ID, next time.Time) time.Time {
	if !next.IsZero() {
		return next
	}
	return id.Time()
}

// bucket is the due index's bucket of unix nanoseconds at (Plan.DueBucket).
func (s *Store) bucket(at int64) uint64 {
	w := int64(s.plan.DueBucket)
	if w <= 0 || at < 0 {
		return 0
	}
	return uint64(at / w)
}

// dueKey is the due index's key of a pending row whose durable next check
// is next.
func (s *Store) dueKey(id ID, next time.Time) Key {
	at := atNanos(DueAt(id, next))
	return Key{Fam: FamDue, Seq: s.bucket(at), At: at, ID: id}
}

// putDue writes a pending row's due entry, its value the schedule v; old,
// when set, is the entry's key before this write, deleted when it moves.
func (t tx) putDue(id ID, next time.Time, v []byte, old *Key) {
	k := t.s.dueKey(id, next)
	if old != nil && Compare(*old, k) != 0 {
		t.Delete(*old)
	}
	t.Put(k, v)
}

// DueQuery selects a slice of the due index.
type DueQuery struct {
	// After is where the slice starts, exclusive; the zero DueKey, from
	// the first key.
	After DueKey
	// Through is the last due time the slice holds (inclusive).
	Through time.Time
	// Limit bounds how many schedules the slice gives (0: none).
	Limit int
	// Keep, when set, gives only the rows whose id it keeps (a cluster
	// node's partitions); the others cost their key.
	Keep func(ID) bool
}

// DueSlice is what a ScanDue read: the position of its last key, to
// start the next slice after (the query's After if none); whether it
// stopped at the query's Limit with more keys through Through possibly
// left (Full); and whether a key after Through is there (Beyond): known
// where the index is one ordered range, and said true where the plan
// buckets it (a later bucket is not listed).
type DueSlice struct {
	Last   DueKey
	Full   bool
	Beyond bool
}

// ScanDue calls fn with the schedule of each pending row in the due index
// after q.After and due at or before q.Through, in due order, at most
// q.Limit of them, from the index alone (no row is read). Where the plan
// buckets the index (Plan.DueBucket), a slice from the zero DueKey lists
// every key of the family once (the overdue slice may start anywhere);
// one after a key lists its buckets through q.Through.
func (s *Store) ScanDue(ctx context.Context, q DueQuery, fn func(Schedule) error) (DueSlice, error) {
	through := atNanos(q.Through)
	last, full, beyond := q.After, false, false
	err := s.view(ctx, func(t tx) error {
		last, full, beyond = q.After, false, s.plan.DueBucket > 0
		n := 0
		each := func(k Key, v []byte) (bool, error) {
			if n%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return false, err
				}
			}
			if k.At > through {
				beyond = true
				return false, nil
			}
			pos := DueKey{At: k.At, ID: k.ID}
			if !q.After.Less(pos) {
				return true, nil // the cursor itself, or a bucket's keys before it
			}
			if q.Limit > 0 && n == q.Limit {
				full = true
				return false, nil
			}
			last = pos
			if q.Keep != nil && !q.Keep(k.ID) {
				return true, nil
			}
			sc := Schedule{ID: k.ID}
			if !decodeSchedule(v, &sc) {
				return true, nil // only this build writes the index: never
			}
			n++
			return true, fn(sc)
		}
		want := 0
		if q.Limit > 0 {
			want = q.Limit + 1
		}
		from := Key{Fam: FamDue, Seq: s.bucket(q.After.At), At: q.After.At, ID: q.After.ID}
		if s.plan.DueBucket <= 0 {
			return t.Scan(Range{Prefix: Key{Fam: FamDue}, Fixed: 1, Want: want}.FromKey(from), each)
		}
		if q.After == (DueKey{}) {
			// Anywhere: the family once, in key order.
			return t.Scan(Range{Prefix: Key{Fam: FamDue}, Want: want}, each)
		}
		stop := errors.New("stop")
		for b := from.Seq; b <= s.bucket(through); b++ {
			more := true
			err := t.Scan(Range{Prefix: Key{Fam: FamDue, Seq: b}, Fixed: 1, Want: want}, func(k Key, v []byte) (bool, error) {
				more, err := each(k, v)
				if !more && err == nil {
					err = stop
				}
				return more, err
			})
			switch {
			case errors.Is(err, stop):
				more = false
			case err != nil:
				return err
			}
			if !more || b == math.MaxUint64 {
				return nil
			}
		}
		return nil
	})
	return DueSlice{Last: last, Full: full, Beyond: beyond || full}, err
}

// backfillDue indexes, once, the pending rows of a store written before
// the due index: while the marker "due" is absent, every pending state
// entry's schedule (its row's, for an older layout's entry that carries
// none) becomes its due entry, a bounded batch a transaction, then the
// marker is written. A new store writes the marker at its first open.
func (s *Store) backfillDue(ctx context.Context) error {
	batch := min(dueBatch, s.batch())
	var after *ID
	for {
		done := false
		var last ID
		err := s.update(ctx, TxOptions{Name: "backfill-due"}, func(t tx) error {
			done = false
			if _, ok, err := t.Get(kMarker(dueMarkerName)); err != nil || ok {
				done = ok
				return err
			}
			r := Range{Prefix: kState(Pending, ID{}), Fixed: 1, Want: batch + 1}
			if after != nil {
				r = r.FromKey(kState(Pending, *after))
			}
			type ent struct {
				id ID
				v  []byte
			}
			var got []ent
			if err := t.Scan(r, func(k Key, v []byte) (bool, error) {
				if after != nil && k.ID == *after {
					return true, nil
				}
				got = append(got, ent{k.ID, append([]byte(nil), v...)})
				return len(got) < batch, nil
			}); err != nil {
				return err
			}
			for _, e := range got {
				sc, err := t.scheduleOf(e.id, e.v)
				if err != nil {
					continue // held aside, or gone: no entry
				}
				w := Watch{State: Pending, Every: Duration(sc.Every), Attempts: sc.Attempts, NextCheck: sc.Next}
				if !sc.Expires.IsZero() {
					w.ExpiresAt = &sc.Expires
				}
				t.putDue(e.id, sc.Next, scheduleValue(w), nil)
			}
			if len(got) < batch {
				done = true
				t.Put(kMarker(dueMarkerName), nil)
				return nil
			}
			last = got[len(got)-1].id
			return nil
		})
		if err != nil {
			return fmt.Errorf("store: indexing pending rows by due time: %w", err)
		}
		if done {
			return nil
		}
		after = &last
	}
}
