package scheduler

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/hosttest"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// windowHarness is a harness whose window reaches 15 minutes ahead, its
// next slice read 5 minutes before the edge, primed at t0.
func windowHarness(t *testing.T, o Ownership) *harness {
	t.Helper()
	h := newHarnessUnopened(t)
	h.horizon, h.lead, h.ownership = 15*time.Minute, 5*time.Minute, o
	h.open()
	if _, err := h.s.Prime(context.Background()); err != nil {
		t.Fatal(err)
	}
	return h
}

// registerDue registers a ci watch whose kind answers a first check at
// first (its deadline a minute later).
func (h *harness) registerDue(first time.Time) store.Watch {
	h.t.Helper()
	h.plugins.OnAdmit(func(string, kind.AdmitRequest) (kind.Admission, error) {
		return kind.Admission{NextCheck: first, Deadline: first.Add(time.Minute)}, nil
	})
	defer h.plugins.OnAdmit(nil)
	return h.register("ci")
}

// held says whether the scheduler holds id in memory.
func (h *harness) held(id store.ID) bool {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	return h.s.byID[id] != nil
}

// The window bounds memory: a registration due within it is held, one
// due beyond it is written to the store's due index only, and is held
// once the window reaches it, before it is due, and probed on time.
func TestRegistrationBeyondTheWindowIsWrittenOnly(t *testing.T) {
	h := windowHarness(t, nil)
	near := h.registerDue(t0.Add(5 * time.Minute))
	far := h.registerDue(t0.Add(2 * time.Hour))
	if !h.held(near.ID) {
		t.Fatal("a watch due within the window is not held")
	}
	if h.held(far.ID) || h.s.Pending() != 1 {
		t.Fatalf("a watch due two hours on is held (%d held), beyond a 15-minute window", h.s.Pending())
	}
	if got := dueOf(t, h.s, far.ID); !got.Equal(t0.Add(2 * time.Hour)) {
		t.Fatalf("the far watch is due at %v in the index", got)
	}
	// The window advances a minute at a time: the far watch is held by
	// the time it is due, and probed then, not before.
	for at := t0.Add(time.Minute); at.Before(t0.Add(2 * time.Hour)); at = at.Add(time.Minute) {
		h.clock.Set(at)
		h.tick(at)
		if at.After(t0.Add(2*time.Hour-10*time.Minute)) && !h.held(far.ID) {
			t.Fatalf("at %v the far watch, due at %v, is not held yet", at, t0.Add(2*time.Hour))
		}
	}
	before := h.plugins.Probes()
	h.clock.Set(t0.Add(2 * time.Hour))
	if n := h.tick(t0.Add(2 * time.Hour)); n != 1 || h.plugins.Probes() != before+1 {
		t.Fatalf("at its instant %d probed", n)
	}
}

// A re-arm beyond the window leaves memory, its due time written as the
// row's durable next check (its key in the due index); one within it
// stays and writes nothing.
func TestReArmBeyondTheWindowLeavesMemory(t *testing.T) {
	h := windowHarness(t, nil)
	hint := t0.Add(3 * time.Hour)
	h.plugins.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) {
		return kind.Observation{Status: abi.StatusPending, Note: "later", NextCheck: hint}, nil
	})
	w := registerUntil(t, h, t0.Add(4*time.Hour))
	h.tick(t0)
	if h.held(w.ID) {
		t.Fatal("a watch re-armed three hours on is still held")
	}
	if got := h.row(w.ID).NextCheck; !got.Equal(hint) {
		t.Fatalf("the row's next check is %v, want %v", got, hint)
	}
	// The window reads it back before it is due, and it is probed then:
	// its leaving told the loader a key lies beyond the edge.
	before := h.plugins.Probes()
	for at := t0.Add(time.Minute); at.Before(hint); at = at.Add(time.Minute) {
		h.clock.Set(at)
		h.tick(at)
	}
	if !h.held(w.ID) || h.plugins.Probes() != before {
		t.Fatalf("before its next check: held %v, %d probes", h.held(w.ID), h.plugins.Probes()-before)
	}
	h.clock.Set(hint)
	if n := h.tick(hint); n != 1 {
		t.Fatalf("at its next check %d probed", n)
	}
	// Within the window: it stays, at its cadence.
	h.plugins.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) { return hosttest.Pending("not yet") })
	v := h.register("ci")
	h.tick(t0)
	if !h.held(v.ID) {
		t.Fatal("a watch re-armed 30 s on left memory")
	}
}

// The loader reads the next slice Lead before the window's edge, not at
// it: a watch read at the edge is in the heap before it is due.
func TestTheLoaderRunsAheadOfTheEdge(t *testing.T) {
	h := windowHarness(t, nil)
	_ = h.registerDue(t0.Add(2 * time.Hour)) // something beyond the edge
	edge, on := h.s.Edge()
	if !on || !edge.Equal(t0.Add(15*time.Minute)) {
		t.Fatalf("the first window's edge is %v (%v), want %v", edge, on, t0.Add(15*time.Minute))
	}
	at := t0.Add(9 * time.Minute) // more than Lead before the edge
	h.clock.Set(at)
	h.tick(at)
	if e, _ := h.s.Edge(); !e.Equal(edge) {
		t.Fatalf("the window moved to %v, %v before its edge", e, edge.Sub(at))
	}
	at = t0.Add(10 * time.Minute) // Lead before the edge
	h.clock.Set(at)
	h.tick(at)
	if e, _ := h.s.Edge(); !e.Equal(at.Add(15 * time.Minute)) {
		t.Fatalf("at Lead before the edge the window is at %v, want %v", e, at.Add(15*time.Minute))
	}
}

// Run arms one timer: at the earliest of the heap's minimum and the
// loader's turn (Lead before the edge), and none with nothing pending.
func TestOneTimerAtTheHeapOrTheEdge(t *testing.T) {
	h := windowHarness(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitTimers := func(want []time.Time) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			got := h.clock.Timers()
			if len(got) == len(want) && (len(want) == 0 || got[0].Equal(want[0])) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("timers %v, want %v", got, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// Nothing pending: the loop's schedule has no timer, and Run armed
	// none.
	h.s.mu.Lock()
	at, armed := h.s.nextTimer(t0.UnixNano())
	h.s.mu.Unlock()
	if armed {
		t.Fatalf("with nothing pending the loop's timer is at %v", time.Unix(0, at))
	}
	waitTimers(nil)
	_ = h.registerDue(t0.Add(2 * time.Hour))
	waitTimers([]time.Time{t0.Add(10 * time.Minute)}) // the loader's turn
	_ = h.registerDue(t0.Add(3 * time.Minute))
	waitTimers([]time.Time{t0.Add(3 * time.Minute)}) // the heap's minimum, earlier
}

// A watch not in memory is cancelled, poked and expired as one that is:
// a cancel settles it and the window never reads it again; a poke of its
// subject probes it now; and one whose first check is its deadline's
// minute is probed at its instant and expires at its deadline.
func TestAFarWatchNotInMemory(t *testing.T) {
	t.Run("cancelled", func(t *testing.T) {
		h := windowHarness(t, nil)
		far := h.registerDue(t0.Add(time.Hour))
		if _, err := h.s.Cancel(context.Background(), far.ID, "no longer wanted"); err != nil {
			t.Fatal(err)
		}
		if got := h.row(far.ID); got.State != store.Cancelled {
			t.Fatalf("state %s", got.State)
		}
		for at := t0.Add(5 * time.Minute); !at.After(t0.Add(time.Hour + time.Minute)); at = at.Add(5 * time.Minute) {
			h.clock.Set(at)
			h.tick(at)
		}
		if n := h.plugins.Probes(); n != 0 || h.held(far.ID) {
			t.Fatalf("a cancelled far watch was probed %d times (held %v)", n, h.held(far.ID))
		}
	})
	t.Run("poked", func(t *testing.T) {
		h := windowHarness(t, nil)
		h.plugins.Add(kind.Info{Kind: "observe.thread", Pushed: true})
		h.plugins.OnAdmit(func(string, kind.AdmitRequest) (kind.Admission, error) {
			return kind.Admission{Subject: "work/1", Params: json.RawMessage(`{"work_id":"1","after":0}`)}, nil
		})
		until := t0.Add(3 * time.Hour)
		w, err := h.s.Register(context.Background(), Registration{Kind: "observe.thread", Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: "agent-1"}, ExpiresAt: &until})
		if err != nil {
			t.Fatal(err)
		}
		h.tick(t0) // its probe at registration; then due at its deadline, beyond the window
		if h.held(w.ID) {
			t.Fatal("a pushed watch due at its deadline three hours on is still held")
		}
		before := h.plugins.Probes()
		if n, err := h.s.Poke(context.Background(), "work/1"); err != nil || n != 1 {
			t.Fatalf("poke woke %d, %v", n, err)
		}
		if n := h.tick(t0); n != 1 || h.plugins.Probes() != before+1 {
			t.Fatalf("the poked far watch: %d due, %d probes", n, h.plugins.Probes()-before)
		}
	})
	t.Run("expired", func(t *testing.T) {
		h := windowHarness(t, nil)
		far := h.registerDue(t0.Add(time.Hour))
		for at := t0.Add(time.Minute); !at.After(t0.Add(time.Hour + time.Minute)); at = at.Add(time.Minute) {
			h.clock.Set(at)
			h.tick(at)
		}
		if got := h.row(far.ID); got.State != store.Expired || !got.SettledAt.Equal(t0.Add(time.Hour+time.Minute)) {
			t.Fatalf("the far watch is %s at %v, want expired at its deadline", got.State, got.SettledAt)
		}
	})
}

// A gained partition's first window is read, not its later watches.
func TestAGainedPartitionLoadsOneWindow(t *testing.T) {
	own := owning(2, 0)
	h := windowHarness(t, own)
	var near, far []store.Watch
	for i := range 40 {
		if i%2 == 0 {
			near = append(near, h.registerDue(t0.Add(5*time.Minute)))
		} else {
			far = append(far, h.registerDue(t0.Add(time.Hour)))
		}
	}
	wantNear, wantFar := inPartition(near, 1, 2), inPartition(far, 1, 2)
	if wantNear == 0 || wantFar == 0 {
		t.Fatalf("partition 1 holds %d near and %d far watches", wantNear, wantFar)
	}
	own.set(1, true)
	n, err := h.s.Gain(context.Background(), 1)
	if err != nil || n != wantNear {
		t.Fatalf("gaining partition 1 armed %d (%v), want its %d within the window", n, err, wantNear)
	}
	for _, w := range far {
		if h.held(w.ID) {
			t.Fatalf("a far watch %s is held after the gain", w.ID)
		}
	}
}
