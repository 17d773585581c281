package scheduler

import (
	"testing"
	"time"

	"github.com/vigilhq/vigil/host/plugin"
	"github.com/vigilhq/vigil/sdk/abi"
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
			h.plugins.observe = func(abi.ObserveRequest) (plugin.Observation, error) { return settled("done") }
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
