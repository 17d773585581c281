package scheduler

import (
	"container/heap"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/hosttest"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// registerUntil registers a ci watch (every 30 s) with a deadline at
// expires.
func registerUntil(t *testing.T, h *harness, expires time.Time) store.Watch {
	t.Helper()
	w, err := h.s.Register(context.Background(), Registration{Kind: "ci", Params: []byte(`{}`), Recipient: store.Recipient{ID: "agent-1"}, ExpiresAt: &expires})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// dueOf is when the scheduler has id due, from its heap.
func dueOf(t *testing.T, s *Scheduler, id store.ID) time.Time {
	t.Helper()
	s.mu.Lock()
	e := s.byID[id]
	s.mu.Unlock()
	if e == nil {
		// Beyond the window: due at its key in the store's due index.
		w, err := s.cfg.Store.Get(context.Background(), id)
		if err != nil || w.State != store.Pending || w.NextCheck.IsZero() {
			t.Fatalf("%s is neither in the heap nor due in the index: %+v %v", id, w, err)
		}
		return w.NextCheck.UTC()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.index < 0 {
		t.Fatalf("%s is not in the heap", id)
	}
	return time.Unix(0, e.due).UTC()
}

// A next check that differs from now + every is written once per new
// value, beside the schedule (the index alone once the note is on the
// row), and a cadence-only or repeated hint writes nothing.
func TestNextCheckIsWrittenWhenItChanges(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	hint := func(req abi.ObserveRequest) time.Time { return t0.Add(time.Hour) }
	h.plugins.OnObserve(func(req abi.ObserveRequest) (kind.Observation, error) {
		return kind.Observation{Status: abi.StatusPending, Note: "not yet", NextCheck: hint(req)}, nil
	})
	w := h.register("ci") // every 30 s, deadline 15 min: an hour ahead is clamped, still durable
	probe := func(at time.Time) int {
		t.Helper()
		before := h.counted.count()
		rearmAll(h.s, at)
		h.tick(at)
		return h.counted.count() - before
	}
	if n := probe(t0); n != 1 {
		t.Fatalf("the first probe wrote %d times, want 1", n)
	}
	if got := h.row(w.ID); !got.NextCheck.Equal(t0.Add(time.Hour)) {
		t.Fatalf("next check %v, want an hour ahead", got.NextCheck)
	}
	if n := probe(t0.Add(time.Minute)); n != 0 {
		t.Fatalf("a repeated hint wrote %d times", n)
	}
	hint = func(abi.ObserveRequest) time.Time { return t0.Add(3 * time.Minute) } // a new value
	if n := probe(t0.Add(2 * time.Minute)); n != 1 {
		t.Fatalf("a new hint wrote %d times, want 1", n)
	}
	if got := h.row(w.ID); !got.NextCheck.Equal(t0.Add(3 * time.Minute)) {
		t.Fatalf("next check %v after a new hint", got.NextCheck)
	}
	// A hint that is only the cadence, from the probe's own now: no next
	// check, so the durable one is cleared, once.
	hint = func(req abi.ObserveRequest) time.Time { return req.Now.Add(30 * time.Second) }
	if n := probe(t0.Add(3 * time.Minute)); n != 1 {
		t.Fatalf("clearing the next check wrote %d times, want 1", n)
	}
	if n := probe(t0.Add(4 * time.Minute)); n != 0 {
		t.Fatalf("a cadence-only hint wrote %d times", n)
	}
	if got, _ := h.store.Get(ctx, w.ID); !got.NextCheck.IsZero() {
		t.Fatalf("next check %v, want none", got.NextCheck)
	}
	// Earlier than the cadence (a timer due in 3 s on a 30 s cadence) is
	// durable too.
	hint = func(req abi.ObserveRequest) time.Time { return req.Now.Add(3 * time.Second) }
	if n := probe(t0.Add(5 * time.Minute)); n != 1 {
		t.Fatalf("an earlier hint wrote %d times, want 1", n)
	}
}

// Prime arms each watch at its durable next check; the overdue within a
// second; jitter only for a probed watch without one.
func TestPrimeArmsAtTheDurableNextCheck(t *testing.T) {
	h := newHarness(t)
	var hints = map[string]time.Time{}
	h.plugins.OnObserve(func(req abi.ObserveRequest) (kind.Observation, error) {
		return kind.Observation{Status: abi.StatusPending, Note: "not yet", NextCheck: hints[req.WatchID]}, nil
	})
	later := registerUntil(t, h, t0.Add(2*time.Hour)) // next check an hour on
	overdue := h.register("ci")                       // next check 10 s on, passed during the downtime
	plain := h.register("ci")                         // no next check: jittered across its 30 s
	hints[later.ID.String()] = t0.Add(time.Hour)
	hints[overdue.ID.String()] = t0.Add(10 * time.Second)
	h.tick(t0)
	never := h.register("ci") // registered, never probed: due since then

	h.open()
	restart := t0.Add(time.Minute)
	h.clock.Set(restart)
	// The watch an hour on is beyond the first window: the due index
	// holds it, not the heap.
	if n, err := h.s.Prime(context.Background()); err != nil || n != 3 {
		t.Fatalf("prime: %d %v", n, err)
	}
	if got := dueOf(t, h.s, later.ID); !got.Equal(t0.Add(time.Hour)) {
		t.Fatalf("the watch with a next check an hour on is due at %v", got)
	}
	for _, w := range []store.Watch{overdue, never} {
		if got := dueOf(t, h.s, w.ID); got.Before(restart) || got.After(restart.Add(time.Second)) {
			t.Fatalf("an overdue watch is due at %v, not within a second of %v", got, restart)
		}
	}
	if got := dueOf(t, h.s, plain.ID); got.Before(restart) || !got.Before(restart.Add(30*time.Second)) {
		t.Fatalf("the watch without a next check is due at %v, outside its interval", got)
	}
	before := h.plugins.Probes()
	h.tick(restart.Add(time.Second))
	if n := h.plugins.Probes() - before; n != 2 && n != 3 {
		t.Fatalf("%d probed within a second of the restart, want the 2 overdue (and perhaps the jittered one)", n)
	}
	if got := dueOf(t, h.s, later.ID); !got.Equal(t0.Add(time.Hour)) {
		t.Fatalf("the watch an hour on moved to %v", got)
	}
}

// More overdue watches than the workers are assumed to probe in a second
// are spread over longer, oldest due first; never over their interval.
func TestPrimeSpreadsTheOverdueByCapacity(t *testing.T) {
	h := newHarness(t)
	const n = 10
	var ids []store.ID
	for i := range n {
		h.clock.Set(t0.Add(time.Duration(i) * time.Millisecond))
		ids = append(ids, h.register("ci").ID) // never probed: due at registration
	}
	restart := t0.Add(time.Hour)
	for _, tc := range []struct {
		name   string
		rate   int
		window time.Duration
	}{
		{"default", 0, time.Second},
		{"capacity", 5, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.open()
			h.s.cfg.OverdueRate = tc.rate
			if tc.rate == 0 {
				h.s.cfg.OverdueRate = defaultOverdueRate()
			}
			h.clock.Set(restart)
			if _, err := h.s.Prime(context.Background()); err != nil {
				t.Fatal(err)
			}
			prev := restart.Add(-time.Nanosecond)
			for i, id := range ids {
				got := dueOf(t, h.s, id)
				if got.Before(restart) || !got.Before(restart.Add(tc.window)) || !got.After(prev) {
					t.Fatalf("overdue %d due at %v: want after %v, within %v of the restart", i, got, prev, tc.window)
				}
				prev = got
			}
			last := dueOf(t, h.s, ids[n-1])
			if tc.window > time.Second && !last.After(restart.Add(time.Second)) {
				t.Fatalf("over capacity, yet the last is due at %v, within a second", last)
			}
		})
	}
}

// defaultOverdueRate is the OverdueRate of a scheduler with the default
// workers.
func defaultOverdueRate() int { return Config{}.withDefaults().OverdueRate }

// A pending watch's note and fault are written when they change, not on
// every probe; the fault keeps the last answer's note beside it, and an
// answer clears it.
func TestNoteAndFaultAreWrittenWhenTheyChange(t *testing.T) {
	h := newHarness(t)
	answer := func() (kind.Observation, error) { return hosttest.Pending("run 7 in progress") }
	h.plugins.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) { return answer() })
	w := registerUntil(t, h, t0.Add(6*time.Hour)) // past every backoff below
	now := t0
	probe := func() int {
		t.Helper()
		before := h.counted.count()
		h.tick(now)
		now, _ = h.s.NextWake()
		return h.counted.count() - before
	}
	steps := []struct {
		name   string
		answer func() (kind.Observation, error)
		writes []int
		note   string
		fault  *store.Fault
	}{
		{"a note", answer, []int{1, 0, 0}, "run 7 in progress", nil},
		{"a fault", func() (kind.Observation, error) {
			ce := &kind.CallError{Kind: "ci", Export: "observe", Reason: kind.FaultTimeout, Err: errors.New("observe ran past 5s")}
			return kind.Observation{Status: abi.StatusPending, Note: "plugin fault: timeout", Fault: ce}, nil
		}, []int{1, 0, 0}, "run 7 in progress", &store.Fault{Reason: kind.FaultTimeout, Message: "observe ran past 5s"}},
		{"a plugin error", func() (kind.Observation, error) {
			return kind.Observation{}, errors.New("no such run")
		}, []int{1, 0}, "run 7 in progress", &store.Fault{Reason: "error", Message: "no such run"}},
		{"an answer again", answer, []int{1, 0}, "run 7 in progress", nil},
		{"a new note", func() (kind.Observation, error) { return hosttest.Pending("run 8 queued") }, []int{1, 0}, "run 8 queued", nil},
	}
	for _, st := range steps {
		answer := st.answer
		h.plugins.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) { return answer() })
		for i, want := range st.writes {
			if got := probe(); got != want {
				t.Fatalf("%s, probe %d: %d writes, want %d", st.name, i+1, got, want)
			}
		}
		got := h.row(w.ID)
		if got.State != store.Pending || got.LastNote != st.note || !got.LastFault.Equal(st.fault) {
			t.Fatalf("%s: row note %q fault %+v, want %q %+v", st.name, got.LastNote, got.LastFault, st.note, st.fault)
		}
	}
}

// Seen gives the probes so far and when the last began, from memory; a
// restart keeps the attempts last written and forgets the time until the
// next probe.
func TestSeenIsKeptInMemory(t *testing.T) {
	h := newHarness(t)
	w := h.register("ci")
	if got, ok := h.s.Seen(w.ID); !ok || got.Attempts != 0 || !got.LastProbe.IsZero() {
		t.Fatalf("before a probe: %+v %v", got, ok)
	}
	now := t0
	for range 3 {
		h.tick(now)
		now, _ = h.s.NextWake()
	}
	if got, ok := h.s.Seen(w.ID); !ok || got.Attempts != 3 || !got.LastProbe.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after three probes: %+v %v", got, ok)
	}
	// A poke moves the due time, not when the last probe was.
	h.s.mu.Lock()
	e := h.s.byID[w.ID]
	e.setDue(t0.Add(70 * time.Second).UnixNano())
	heap.Fix(&h.s.h, int(e.index))
	h.s.mu.Unlock()
	if got, _ := h.s.Seen(w.ID); !got.LastProbe.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after the due time moved: %+v", got)
	}
	h.open()
	if _, err := h.s.Prime(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, ok := h.s.Seen(w.ID); !ok || got.Attempts != 1 || !got.LastProbe.IsZero() {
		t.Fatalf("after a restart: %+v %v (the first probe's record holds 1 attempt)", got, ok)
	}
	if _, ok := h.s.Seen(store.ID{1}); ok {
		t.Fatal("seen a watch it does not hold")
	}
}
