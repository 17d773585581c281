package scheduler

import (
	"context"
	crand "crypto/rand"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/hosttest"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/lifecycle"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// isolation is a harness whose plugins hold every probe of a "slow" watch
// (any kind but "timer") until released, and settle a timer at once. Each
// probe's kind and recipient is sent on entered as it starts.
type isolation struct {
	*harness
	entered chan probeStart
	release chan struct{}
	mailed  chan store.Message
	// fault makes a released slow probe come back as a fault (a timeout)
	// instead of pending.
	fault bool
}

type probeStart struct {
	kind, recipient string
	now             time.Time
}

func newIsolation(t *testing.T, slowKinds ...string) *isolation {
	t.Helper()
	iso := &isolation{
		harness: newHarness(t),
		entered: make(chan probeStart, 4096),
		release: make(chan struct{}),
		mailed:  make(chan store.Message, 4096),
	}
	iso.plugins.Add(kind.Info{Kind: "timer", DefaultEvery: time.Minute})
	for _, k := range slowKinds {
		iso.plugins.Add(kind.Info{Kind: k, DefaultEvery: time.Minute})
	}
	iso.plugins.OnObserve(iso.observe)
	iso.deliver.before = func(m store.Message) { iso.mailed <- m }
	return iso
}

func (iso *isolation) observe(req abi.ObserveRequest) (kind.Observation, error) {
	id, _ := store.ParseID(req.WatchID)
	w, _ := iso.store.Get(context.Background(), id)
	iso.entered <- probeStart{kind: req.Kind, recipient: w.Recipient.ID, now: req.Now}
	if req.Kind == "timer" {
		return hosttest.Settled("fired")
	}
	<-iso.release
	if iso.fault {
		return kind.Observation{Status: abi.StatusPending, Note: "plugin fault: timeout",
			Fault: &kind.CallError{Kind: req.Kind, Export: "observe", Reason: kind.FaultTimeout, Err: context.DeadlineExceeded}}, nil
	}
	return hosttest.Pending("still slow")
}

// next is the next probe to start; a probe that never comes fails the
// test (the timeout only ever expires when the scheduler is wrong).
func (iso *isolation) next() probeStart {
	iso.t.Helper()
	select {
	case p := <-iso.entered:
		return p
	case <-time.After(10 * time.Second):
		iso.t.Fatal("no probe started: every worker is held")
		return probeStart{}
	}
}

// start runs the scheduler's own loop and workers on the fake clock, and
// stops them at the end of the test, releasing what is held.
func (iso *isolation) start() {
	ctx, cancel := context.WithCancel(context.Background())
	done := lifecycle.Go(ctx, iso.s.Run)
	iso.t.Cleanup(func() {
		select {
		case <-iso.release:
		default:
			close(iso.release)
		}
		cancel()
		_ = done()
	})
}

// timerIsProbedBesideTheHeld registers a timer while every worker the
// caps allow is held by slow probes, and checks that the free worker
// probes it at its due time and that it is mailed, the slow ones still
// held.
func (iso *isolation) timerIsProbedBesideTheHeld(recipient string) {
	iso.t.Helper()
	workers := iso.s.cfg.Workers
	for range workers - 1 { // the cap: workers-1 for one kind or one recipient
		if p := iso.next(); p.kind == "timer" {
			iso.t.Fatalf("the timer started before it was registered")
		}
	}
	awaitSettledWorkers(iso.t, iso.s)
	timer := iso.registerFor("timer", recipient)
	p := iso.next()
	if p.kind != "timer" {
		iso.t.Fatalf("the last free worker took another %s probe of %s: the timer waits behind it", p.kind, p.recipient)
	}
	if !p.now.Equal(t0) {
		iso.t.Fatalf("the timer was probed at %v, due at %v", p.now, t0)
	}
	select {
	case m := <-iso.mailed:
		if m.WatchID != timer.ID || m.Type != store.MessageFired {
			iso.t.Fatalf("mailed %+v", m)
		}
	case <-time.After(10 * time.Second):
		iso.t.Fatal("the timer's outcome was not mailed")
	}
	select {
	case p := <-iso.entered:
		iso.t.Fatalf("a probe of %s started beyond the cap", p.kind)
	default:
	}
}

// A slow kind with many due watches holds at most workers-1 workers: an
// unrelated timer due meanwhile is probed by the last one, at once.
func TestASlowKindDoesNotHoldBackATimer(t *testing.T) {
	iso := newIsolation(t, "slow")
	for i := range 200 {
		iso.registerFor("slow", fmt.Sprintf("agent-%d", i)) // one recipient each: only the kind's cap binds
	}
	iso.start()
	iso.timerIsProbedBesideTheHeld("agent-timer")
}

// A recipient with many due watches, of many kinds, holds at most
// workers-1 workers: another recipient's timer is probed at once.
func TestABusyRecipientDoesNotHoldBackAnother(t *testing.T) {
	kinds := make([]string, 10)
	for i := range kinds {
		kinds[i] = fmt.Sprintf("slow-%d", i)
	}
	iso := newIsolation(t, kinds...)
	for i := range 100 {
		iso.registerFor(kinds[i%len(kinds)], "agent-busy") // one kind each in turn: only the recipient's cap binds
	}
	iso.start()
	iso.timerIsProbedBesideTheHeld("agent-other")
}

// 1,000 standing watches of a kind whose probes fail slowly: the timer is
// probed beside them, and each fault backs its watch off (twice its
// cadence after the first), not back to back.
func TestSlowFaultsDoNotHoldBackATimer(t *testing.T) {
	iso := newIsolation(t)
	iso.fault = true
	iso.plugins.Add(kind.Info{Kind: "flaky", Standing: true, DefaultEvery: time.Minute})
	for i := range 1000 {
		iso.registerFor("flaky", fmt.Sprintf("agent-%d", i))
	}
	iso.start()
	iso.timerIsProbedBesideTheHeld("agent-timer")
}

// The same, all due in one instant and driven by Tick: the timer is among
// the first probes the pool takes. Then, released, each flaky watch's
// fault backs it off: none is due again before twice its cadence.
func TestTickProbesATimerBesideSlowWatches(t *testing.T) {
	for _, fault := range []bool{false, true} {
		t.Run(fmt.Sprintf("fault=%t", fault), func(t *testing.T) {
			iso := newIsolation(t, "slow")
			iso.fault = fault
			for i := range 200 {
				iso.registerFor("slow", fmt.Sprintf("agent-%d", i))
			}
			iso.registerFor("timer", "agent-timer")
			done := make(chan int)
			go func() { done <- iso.tick(t0) }()
			timer := false
			for range iso.s.cfg.Workers {
				timer = timer || iso.next().kind == "timer"
			}
			if !timer {
				t.Fatal("every worker took a slow probe; the timer waits behind them")
			}
			<-iso.mailed
			close(iso.release)
			if n := <-done; n != 201 {
				t.Fatalf("tick probed %d", n)
			}
			want := t0.Add(time.Minute) // a pending answer: its cadence
			if fault {
				want = t0.Add(2 * time.Minute) // a fault: backed off
			}
			if next, ok := iso.s.NextWake(); !ok || !next.Equal(want) {
				t.Fatalf("next wake %v %v, want %v", next, ok, want)
			}
		})
	}
}

// awaitSettledWorkers waits until every worker of a started scheduler has
// either taken a probe or parked for want of one it may take, with
// nothing left to read: the point where a worker the caps keep free is
// free.
func awaitSettledWorkers(t *testing.T, s *Scheduler) {
	t.Helper()
	limit := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		busy := 0
		for _, k := range s.ready.kinds {
			busy += k.inFlight
		}
		settled := s.reading == 0 && s.ready.head == len(s.ready.fresh) && busy+s.parked == s.cfg.Workers
		s.mu.Unlock()
		if settled {
			return
		}
		if time.Now().After(limit) {
			t.Fatal("the workers did not settle")
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// A hammer: registrations and cancels from several goroutines while the
// loop and its workers probe. No kind and no recipient ever has more than
// workers-1 probes in flight, a cancelled watch is never mailed, and a
// fired one is mailed exactly once.
func TestHammerCapsAndCancels(t *testing.T) {
	h := newHarness(t)
	kinds := []string{"k0", "k1", "k2"}
	for _, k := range kinds {
		h.plugins.Add(kind.Info{Kind: k, DefaultEvery: time.Minute})
	}
	var mu sync.Mutex
	inFlight, peak := map[string]int{}, 0
	enter := func(keys ...string) {
		mu.Lock()
		defer mu.Unlock()
		for _, k := range keys {
			inFlight[k]++
			peak = max(peak, inFlight[k])
		}
	}
	leave := func(keys ...string) {
		mu.Lock()
		defer mu.Unlock()
		for _, k := range keys {
			inFlight[k]--
		}
	}
	h.plugins.OnObserve(func(req abi.ObserveRequest) (kind.Observation, error) {
		id, _ := store.ParseID(req.WatchID)
		w, _ := h.store.Get(context.Background(), id)
		keys := []string{"kind/" + req.Kind, "recipient/" + w.Recipient.ID}
		enter(keys...)
		defer leave(keys...)
		for range 100 {
			runtime.Gosched()
		}
		if id[15]%2 == 0 {
			return hosttest.Settled("done")
		}
		return hosttest.Pending("not yet")
	})
	h.s.cfg.IDs = crand.Reader // the seeded source of the harness is for one goroutine
	ctx, cancel := context.WithCancel(context.Background())
	done := lifecycle.Go(ctx, h.s.Run)

	const perGoroutine = 150
	ids := make(chan store.ID, 4*perGoroutine)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range perGoroutine {
				w, err := h.s.Register(context.Background(), Registration{Kind: kinds[(g+i)%len(kinds)],
					Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: fmt.Sprintf("agent-%d", i%5)}})
				if err != nil {
					t.Error(err)
					return
				}
				ids <- w.ID
			}
		})
	}
	cancelled := map[store.ID]bool{}
	var cancels sync.WaitGroup
	cancels.Go(func() {
		n := 0
		for id := range ids {
			if n++; n%3 == 0 {
				if _, err := h.s.Cancel(context.Background(), id, "hammer"); err == nil {
					cancelled[id] = true
				}
			}
		}
	})
	wg.Wait()
	close(ids)
	cancels.Wait()
	// Every watch that settles on its first probe (an even last id byte)
	// and was not cancelled must fire: wait for the loop to get there,
	// however loaded the machine, within a bound that only turns a hang
	// into a failure.
	for deadline := time.Now().Add(time.Minute); ; {
		rows, _, err := h.store.List(context.Background(), store.Filter{State: store.Pending})
		if err != nil {
			t.Fatal(err)
		}
		left := 0
		for _, w := range rows {
			if w.ID[15]%2 == 0 {
				left++
			}
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d watches that settle on their first probe are still pending after a minute", left)
		}
		time.Sleep(5 * time.Millisecond)
	}
	awaitSettledWorkers(t, h.s)
	cancel()
	_ = done()

	if limit := h.s.cfg.Workers - 1; peak > limit {
		t.Fatalf("%d probes of one kind or recipient at once, cap %d", peak, limit)
	}
	mailed := map[store.ID]int{}
	for _, m := range h.deliver.messages() {
		mailed[m.WatchID]++
		if cancelled[m.WatchID] {
			t.Fatalf("cancelled watch %s was mailed %+v", m.WatchID, m)
		}
	}
	rows, _, err := h.store.List(context.Background(), store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	fired := 0
	for _, w := range rows {
		switch w.State {
		case store.Fired:
			fired++
			if mailed[w.ID] != 1 {
				t.Fatalf("fired watch %s mailed %d times", w.ID, mailed[w.ID])
			}
		case store.Cancelled:
			if !cancelled[w.ID] {
				t.Fatalf("watch %s cancelled, but no cancel succeeded", w.ID)
			}
		}
	}
	if fired == 0 || len(cancelled) == 0 {
		t.Fatalf("%d fired, %d cancelled: the hammer did not exercise both", fired, len(cancelled))
	}
}

// countingGets counts the rows read, for the read-ahead's bound.
type countingGets struct {
	rowStore
	mu   sync.Mutex
	gets int
}

func (c *countingGets) Get(ctx context.Context, id store.ID) (store.Watch, error) {
	c.mu.Lock()
	c.gets++
	c.mu.Unlock()
	return c.rowStore.Get(ctx, id)
}

func (c *countingGets) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gets
}

// A backlog of due watches is probed as it is read, not after: the first
// probe starts once a bounded look-ahead is filed, however many are due.
func TestABacklogIsProbedWhileItIsRead(t *testing.T) {
	h := newHarness(t)
	cg := &countingGets{rowStore: h.store}
	s, err := New(Config{Store: cg, Plugins: h.plugins, Deliver: h.deliver, Clock: h.clock, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	h.s = s
	const n = 3000
	for range n {
		h.register("ci")
	}
	readAtFirst := -1
	var once sync.Once
	h.plugins.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) {
		once.Do(func() { readAtFirst = cg.count() })
		return hosttest.Pending("not yet")
	})
	if got := h.tick(t0); got != n {
		t.Fatalf("probed %d, want %d", got, n)
	}
	if bound := (lookahead + readBatch) * 2; readAtFirst < 0 || readAtFirst > bound {
		t.Fatalf("%d rows were read before the first probe of %d due; want at most %d", readAtFirst, n, bound)
	}
}
