package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/hosttest"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// A watch whose row the store could not read when it came due, or whose
// settlement the store did not take, is tried again after the least
// interval, not after its cadence (30 s for ci): an election on the
// store's servers is over in seconds.
func TestAStoreThatDidNotAnswerIsTriedAgainSoon(t *testing.T) {
	for _, tt := range []struct {
		name string
		fail func(h *harness)
	}{
		{"the read of a due watch", func(h *harness) {
			h.counted.mu.Lock()
			h.counted.failGets = 1
			h.counted.mu.Unlock()
		}},
		{"its settlement", func(h *harness) {
			h.deliver.mu.Lock()
			h.deliver.failSettles = 1
			h.deliver.mu.Unlock()
			h.plugins.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) { return hosttest.Settled("done") })
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.register("ci")
			h.tick(t0) // its first probe: pending
			due := t0.Add(30 * time.Second)
			tt.fail(h)
			h.tick(due)
			wake, ok := h.s.NextWake()
			if !ok || wake.After(due.Add(time.Second)) {
				t.Fatalf("after the store did not answer at %s, the watch is next due at %s (%v), want within a second", due, wake, ok)
			}
		})
	}
}

// On a cluster a young watch whose row the store says is not there (a
// read racing another node's commit) is read again a second on; an old
// one, or any on one host, is forgotten as gone.
func TestAYoungRowNotFoundOnAClusterIsReadAgain(t *testing.T) {
	for _, tt := range []struct {
		name      string
		clustered bool
		old       bool
		again     bool
	}{
		{"young, on a cluster", true, false, true},
		{"old, on a cluster", true, true, false},
		{"young, on one host", false, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			if tt.clustered {
				h = clusteredHarness(t, owning(1, 0))
			}
			w := h.register("ci")
			at := t0 // its first read, at once
			if tt.old {
				h.tick(t0)
				at = t0.Add(30 * time.Second) // its next, past the grace
			}
			h.counted.mu.Lock()
			h.counted.missing = 1
			h.counted.mu.Unlock()
			h.tick(at)
			_, held := h.s.Seen(w.ID)
			if held != tt.again {
				t.Fatalf("after its row was not found %s after its registration, the scheduler holds it: %v, want %v", at.Sub(t0), held, tt.again)
			}
			if wake, ok := h.s.NextWake(); tt.again && (!ok || wake.After(at.Add(time.Second))) {
				t.Fatalf("it is next read at %s (%v), want within a second of %s", wake, ok, at)
			}
		})
	}
}

// A write the store refuses as not the owner's (on a cluster, the
// partition fenced by another node since this one gained it) drops the
// watch here: nothing was written, it is not tried again, and the row
// stays as the new owner leaves it.
func TestAWriteRefusedAsNotTheOwnersDropsTheWatch(t *testing.T) {
	for _, tt := range []struct {
		name string
		fail func(h *harness)
	}{
		{"a probe record", func(h *harness) {
			h.counted.mu.Lock()
			h.counted.notOwner = true
			h.counted.mu.Unlock()
			h.plugins.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) { return hosttest.Pending("changed") })
		}},
		{"a settlement", func(h *harness) {
			h.deliver.mu.Lock()
			h.deliver.notOwner = true
			h.deliver.mu.Unlock()
			h.plugins.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) { return hosttest.Settled("done") })
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			w := h.register("ci")
			h.tick(t0) // its first probe: pending
			tt.fail(h)
			h.tick(t0.Add(30 * time.Second))
			if wake, ok := h.s.NextWake(); ok {
				t.Fatalf("after a write refused as not the owner's, the watch is still armed for %s", wake)
			}
			got, err := h.store.Get(context.Background(), w.ID)
			if err != nil || got.State != store.Pending {
				t.Fatalf("the row is %+v %v, want it pending as it was", got, err)
			}
		})
	}
}
