package scheduler

import (
	"container/heap"
	"context"
	"errors"
	"time"

	"github.com/vigilhq/vigil/store"
)

// The window. The store keeps every pending watch in its due index
// (store.ScanDue), keyed by a time never after the watch is due; the
// scheduler holds in memory only the watches due within a window ahead
// of now. Prime reads the first window (the overdue slice with it); the
// loader reads the next slice by a range scan as the window advances,
// running Config.Lead ahead of the window's edge, so a watch loaded at the
// edge is in the heap before it is due. A registration or re-arm due
// beyond the window is written to the index only (its row's durable next
// check) and leaves memory.
//
// The edge: every watch whose index key is at or before it has been read
// into memory (or was handled since). A watch due at or before the
// window's end, the later of the edge and now + Config.Horizon, stays in
// memory; one due after it leaves. One load reads at most
// Config.WindowMax watches; the edge is then where it stopped, and the
// next load waits until the heap holds fewer than that.

// The window's defaults.
const (
	DefaultHorizon   = 15 * time.Minute
	DefaultWindowMax = 100_000
)

// maxID is the greatest id: a DueKey at a time with it is after every key
// of that time.
var maxID = func() (id store.ID) {
	for i := range id {
		id[i] = 0xff
	}
	return id
}()

// leaving marks an entry whose re-arm falls beyond the window: its
// durable next check is being written, and it leaves memory once it is.
const leaving = -4

// windowEnd is the latest due time a watch may have and stay in memory:
// the later of the edge and now + the horizon. Without a window (before
// Prime) every watch stays. The caller holds mu.
func (s *Scheduler) windowEnd(now int64) int64 {
	if !s.windowed {
		return 1<<63 - 1
	}
	return max(s.edge.At, now+int64(s.cfg.Horizon))
}

// loadDue says whether the loader should read the next slice now: the
// window is on, the index may hold a key after the edge, no load is
// running, now is within Lead of the edge, and the heap has room. The
// caller holds mu.
func (s *Scheduler) loadDue(now int64) bool {
	return s.windowed && s.beyond && !s.loading && now >= s.edge.At-int64(s.cfg.Lead) && len(s.h) < s.cfg.WindowMax
}

// loadAt is when the loader is next due (false: not while nothing
// changes): Lead before the edge. The caller holds mu.
func (s *Scheduler) loadAt() (int64, bool) {
	if !s.windowed || !s.beyond || s.loading || len(s.h) >= s.cfg.WindowMax {
		return 0, false
	}
	return s.edge.At - int64(s.cfg.Lead), true
}

// load reads the window's next slice from the index into the heap: the
// watches after the edge and due by now + the horizon, at most
// Config.WindowMax, each not already held. first is Prime's read, from
// the index's first key (the overdue slice with it). It returns how many
// it armed.
func (s *Scheduler) load(ctx context.Context, first bool) (int, error) {
	now := s.cfg.Clock.Now().UnixNano()
	s.mu.Lock()
	if !first && s.loading {
		s.mu.Unlock()
		return 0, nil
	}
	s.loading = true
	after, marks := s.edge, s.marks
	s.mu.Unlock()
	q := store.DueQuery{After: after, Through: time.Unix(0, now+int64(s.cfg.Horizon)), Limit: s.cfg.WindowMax}
	if s.cfg.Ownership != nil {
		q.Keep = s.owns
	}
	var got []store.Schedule
	sl, err := s.cfg.Store.ScanDue(ctx, q, func(sc store.Schedule) error {
		got = append(got, sc)
		return nil
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loading = false
	if err != nil {
		return 0, err
	}
	armed := s.admit(got, now)
	edge := sl.Last
	if !sl.Full {
		edge = store.DueKey{At: q.Through.UnixNano(), ID: maxID}
	}
	if s.edge.Less(edge) {
		s.edge = edge
	}
	// A watch written beyond the window while the scan ran may be one it
	// did not see.
	s.beyond = sl.Beyond || s.marks != marks
	s.signal()
	return armed, nil
}

// admit arms the schedules a load read that the scheduler does not hold
// yet: the overdue spread from now at the workers' capacity, the others
// at their due time. The caller holds mu.
func (s *Scheduler) admit(got []store.Schedule, now int64) int {
	var overdue []*entry
	armed := 0
	for _, sc := range got {
		if _, ok := s.byID[sc.ID]; ok {
			continue
		}
		e := s.recovered(sc, now)
		armed++
		if e.due <= now {
			overdue = append(overdue, e)
			continue
		}
		e.index = int32(len(s.h))
		s.h = append(s.h, e)
	}
	s.spread(overdue, now)
	heap.Init(&s.h)
	return armed
}

// armOrLeave arms e at next, as arm does, unless next falls beyond the
// window: then e is marked leaving and the caller, having released mu,
// calls leave. The caller holds mu.
func (s *Scheduler) armOrLeave(e *entry, next, probed time.Time) bool {
	due := next.UnixNano()
	if e.index == pokedWhileProbed || due <= s.windowEnd(s.cfg.Clock.Now().UnixNano()) {
		s.arm(e, next, probed)
		return false
	}
	e.setDue(due)
	if !probed.IsZero() {
		e.probedAt(probed)
	}
	e.index = leaving
	return true
}

// leave writes a leaving entry's due time as its row's durable next check
// (its key in the due index), then forgets it, unless meanwhile the
// loader's edge passed that time (it would not read it again), it was
// poked, or the write failed (it stays, at its due time); a row no
// longer pending or no longer this node's is forgotten.
func (s *Scheduler) leave(ctx context.Context, e *entry) {
	err := s.cfg.Store.SetNextCheck(ctx, e.id, time.Unix(0, e.due).UTC())
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID[e.id] != e {
		return // cancelled meanwhile
	}
	switch {
	case errors.Is(err, store.ErrNotPending), errors.Is(err, store.ErrNotOwner):
		delete(s.byID, e.id)
		delete(s.pokedAt, e.id)
	case e.index == pokedWhileProbed:
		s.arm(e, time.Unix(0, e.due), time.Time{}) // due at once
	case err != nil, e.due <= s.edge.At:
		if err != nil && ctx.Err() == nil {
			s.storeFailed("writing a watch's next check beyond the window", e.id, err)
		}
		e.index = leaving
		s.arm(e, time.Unix(0, e.due), time.Time{})
	default:
		delete(s.byID, e.id)
		delete(s.pokedAt, e.id)
		s.markBeyond()
	}
}

// markBeyond notes a watch written to the due index beyond the window:
// the loader has a key after the edge to read. The caller holds mu.
func (s *Scheduler) markBeyond() {
	s.beyond = true
	s.marks++
	s.signal()
}

// loader is Run's goroutine that reads the window's next slices when the
// loop asks (loadWake), until ctx ends.
func (s *Scheduler) loader(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.loadWake:
		}
		if _, err := s.load(ctx, false); err != nil && ctx.Err() == nil {
			s.log.Error("loading the next window of due watches", "err", err)
			// Asked again by the loop at its next turn: a register, a
			// probe's end or the timer.
		}
	}
}

// askLoad wakes the loader, without waiting.
func (s *Scheduler) askLoad() {
	select {
	case s.loadWake <- struct{}{}:
	default:
	}
}

// Edge is the window's edge (every watch whose due-index key is at or
// before it has been read into memory) and whether the window is on.
func (s *Scheduler) Edge() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Unix(0, s.edge.At), s.windowed
}
