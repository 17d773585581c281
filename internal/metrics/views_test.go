package metrics

import (
	"context"
	"testing"
	"time"

	"github.com/vigilhq/vigil/store"
)

// countingStates counts its calls: the views must never make one.
type countingStates struct{ n *int }

func (c countingStates) CountByState(context.Context) (map[store.State]int, error) {
	*c.n++
	return map[store.State]int{}, nil
}

// The views read the per-kind counters, observe calls only for latency,
// and never the collector that walks the store.
func TestViewsReadTheCountersWithoutTheStore(t *testing.T) {
	n := 0
	m := New(countingStates{&n})
	for range 99 {
		m.PluginCall("timer", "observe", "ok", 40*time.Microsecond)
	}
	m.PluginCall("timer", "observe", "timeout", 6*time.Second)
	m.PluginCall("timer", "admit", "ok", time.Minute) // not an observe call
	m.Probe("timer", "pending")
	m.Probe("timer", "settled")
	m.Lag("timer", 3*time.Millisecond)
	m.Lag("ci", 2*time.Second)
	m.Ready(4)
	m.Push(store.PushFailed)
	ks := m.Kinds()
	if len(ks) != 2 || ks[0].Kind != "ci" || ks[1].Kind != "timer" {
		t.Fatalf("kinds %+v", ks)
	}
	tm := ks[1]
	if tm.Calls != 100 || tm.Probes["settled"] != 1 || tm.Faults["timeout"] != 1 || tm.CallP99Seconds != .00005 || tm.LagP99Seconds != .005 {
		t.Errorf("timer %+v", tm)
	}
	if mean := tm.CallMeanSeconds; mean < 0.06 || mean > 0.061 {
		t.Errorf("mean %v, want (99·40µs + 6s)/100", mean)
	}
	if p50, p99 := m.LagQuantiles(); p50 != .005 || p99 != 2.5 {
		t.Errorf("lag p50 %v p99 %v", p50, p99)
	}
	if m.ReadyDepth() != 4 || m.PushesEntered()["failed"] != 1 {
		t.Errorf("ready %d pushes %v", m.ReadyDepth(), m.PushesEntered())
	}
	if n != 0 {
		t.Errorf("the views counted watches by state %d times", n)
	}
}
