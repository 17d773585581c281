package scheduler

import (
	"container/heap"
	"context"
	"fmt"
	"time"

	"github.com/vigilhq/vigil/store"
)

// Ownership says which partitions of the watches this scheduler probes:
// on a cluster, the partitions its node holds leases on (internal/cluster).
// Config.Ownership nil is one host, which owns every watch.
type Ownership interface {
	// Partitions is the cluster's partition count, fixed when its store
	// was created.
	Partitions() int
	// Holds says whether this node may act on partition p now. It is
	// asked before each probe and before each probe's write, and must be
	// cheap.
	Holds(p int) bool
}

// Gate is an Ownership that may refuse registrations: a cluster node
// whose plugin set is not the cluster's takes none, since the node owning
// the watch might lack its kind and settle it unwatchable. Admits answers
// nil or the refusal (an *Error); Register asks it before it reads or
// writes anything.
type Gate interface {
	Admits() error
}

// admits is the Ownership's refusal of registrations now, if it is a Gate.
func (s *Scheduler) admits() error {
	if g, ok := s.cfg.Ownership.(Gate); ok {
		return g.Admits()
	}
	return nil
}

// owns says whether the scheduler may act on the watch id now.
func (s *Scheduler) owns(id store.ID) bool {
	o := s.cfg.Ownership
	return o == nil || o.Holds(id.Partition(o.Partitions()))
}

// holdsAny says whether the scheduler owns any partition now; one host
// owns them all.
func (s *Scheduler) holdsAny() bool {
	o := s.cfg.Ownership
	if o == nil {
		return true
	}
	for p := range o.Partitions() {
		if o.Holds(p) {
			return true
		}
	}
	return false
}

// Gain arms partition p's pending watches of the window, as Prime arms
// a host's first window: the scheduler's node has just taken p's lease.
// Only p's first window is read (its watches due by the window's end,
// the overdue among them); the loader reads the later ones with the
// other partitions'. Watches already armed are left as they are. It
// returns how many it armed.
func (s *Scheduler) Gain(ctx context.Context, p int) (int, error) {
	o := s.cfg.Ownership
	if o == nil {
		return 0, nil
	}
	n := o.Partitions()
	now := s.cfg.Clock.Now().UnixNano()
	s.mu.Lock()
	through := s.windowEnd(now)
	if !s.windowed {
		through = now + int64(s.cfg.Horizon)
	}
	s.mu.Unlock()
	var found []store.Schedule
	_, err := s.cfg.Store.ScanDue(ctx, store.DueQuery{
		Through: time.Unix(0, through),
		Keep:    func(id store.ID) bool { return id.Partition(n) == p },
	}, func(sc store.Schedule) error {
		found = append(found, sc)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("scheduler: load partition %d: %w", p, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	armed := s.admit(found, now)
	s.signal()
	return armed, nil
}

// Drop forgets partition p's watches: the scheduler's node has lost p's
// lease, and another node probes them now. A probe in flight writes
// nothing (it asks owns before it writes, and the backend refuses a
// stale write besides). It returns how many it dropped.
func (s *Scheduler) Drop(p int) int {
	o := s.cfg.Ownership
	if o == nil {
		return 0
	}
	n := o.Partitions()
	s.mu.Lock()
	defer s.mu.Unlock()
	dropped := 0
	for id, e := range s.byID {
		if id.Partition(n) != p {
			continue
		}
		s.forget(e)
		dropped++
	}
	return dropped
}

// Adopt arms a pending watch another node registered, when this
// scheduler owns its partition: how an owner learns of a registration made
// elsewhere (the backend tells it). A watch already armed, or one this
// scheduler does not own, is left alone.
func (s *Scheduler) Adopt(sc store.Schedule) bool {
	if !s.owns(sc.ID) {
		return false
	}
	now := s.cfg.Clock.Now().UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byID[sc.ID]; ok {
		return false
	}
	e := s.recovered(sc, now)
	if e.due > s.windowEnd(now) {
		// Beyond the window: the loader reads it from the index.
		delete(s.byID, sc.ID)
		delete(s.pokedAt, sc.ID)
		s.markBeyond()
		return false
	}
	heap.Push(&s.h, e)
	if e.index == 0 {
		s.signal()
	}
	return true
}
