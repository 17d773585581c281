package scheduler

// BenchmarkLateness is how late timers are probed while slow work is due
// alongside them, with the continuous workers and, in the same run, with
// the batch Tick the scheduler had before (batchTick, below). Run with
//
//	go test -run XXX -bench Lateness -count 3 ./internal/scheduler/
//
// Each pass registers VIGIL_BENCH_LATE_TIMERS timers (default 1000) due
// within one second, evenly spread, and, due at its start, either
// VIGIL_BENCH_LATE_SLOW watches of a kind whose probe takes 100 ms
// (default 200), or VIGIL_BENCH_LATE_FAILING standing watches whose probe
// faults after 50 ms (default 500). It runs the scheduler on the wall
// clock with the default 4 workers until every timer has been probed, and
// reports the p50 and p99 of how late each timer's probe started after
// its due time (p50-ms-late, p99-ms-late). The goal is a p99 of at most
// 100 ms. The batch design takes about as long as its first batch, 5 to
// 7 s at the default sizes; the continuous one about a second.
//
// load=edge is the window's edge: the timers are in the store's due
// index only once the scheduler has started (a window of 4 s, the timers
// due 1 s past its first edge) beside VIGIL_BENCH_LATE_BEYOND watches due an
// hour to 7 days on (default 1,000,000), and are read by the loader as
// the window advances; nothing else is due.

import (
	"container/heap"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/benchtest"
	"github.com/vigilhq/vigil/internal/hosttest"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/lifecycle"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

func BenchmarkLateness(b *testing.B) {
	timers := envInt(b, "VIGIL_BENCH_LATE_TIMERS", 1000)
	loads := []struct {
		name  string
		kind  string
		n     int
		probe time.Duration
	}{
		{"slow", "slow", envInt(b, "VIGIL_BENCH_LATE_SLOW", 200), 100 * time.Millisecond},
		{"failing", "flaky", envInt(b, "VIGIL_BENCH_LATE_FAILING", 500), 50 * time.Millisecond},
	}
	// The window's edge: timers loaded as the window advances, with
	// VIGIL_BENCH_LATE_BEYOND watches pending beyond it all along.
	b.Run("load=edge/design=continuous", func(b *testing.B) {
		beyond := envInt(b, "VIGIL_BENCH_LATE_BEYOND", 1_000_000)
		var late []time.Duration
		for range b.N {
			late = append(late, edgePass(b, timers, beyond)...)
		}
		benchtest.Percentiles(b, late, time.Millisecond, "ms-late")
	})
	for _, load := range loads {
		for _, design := range []string{"continuous", "batch"} {
			b.Run(fmt.Sprintf("load=%s/design=%s", load.name, design), func(b *testing.B) {
				var late []time.Duration
				for range b.N {
					late = append(late, latenessPass(b, design, timers, load.kind, load.n, load.probe)...)
				}
				benchtest.Percentiles(b, late, time.Millisecond, "ms-late")
			})
		}
	}
}

// latenessPass is one pass: it returns each timer's lateness.
func latenessPass(b *testing.B, design string, timers int, kindName string, n int, probe time.Duration) []time.Duration {
	b.StopTimer()
	ctx := context.Background()
	st, err := badger.OpenStore(b.TempDir(), badger.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()

	var (
		mu      sync.Mutex
		dueOf   = map[string]time.Time{} // timer watch id -> its due time
		late    = make([]time.Duration, 0, timers)
		probed  sync.WaitGroup
		stopped = make(chan struct{}) // closed at the end of the pass: held probes return
	)
	probed.Add(timers)
	pl := hosttest.NewFakeKinds(
		kind.Info{Kind: "timer", DefaultEvery: time.Minute},
		kind.Info{Kind: "slow", DefaultEvery: time.Minute},
		kind.Info{Kind: "flaky", Standing: true, DefaultEvery: time.Minute},
	).OnObserve(func(req abi.ObserveRequest) (kind.Observation, error) {
		if req.Kind == "timer" {
			mu.Lock()
			due, ok := dueOf[req.WatchID]
			if ok {
				late = append(late, time.Since(due))
				delete(dueOf, req.WatchID)
			}
			mu.Unlock()
			if ok {
				probed.Done()
			}
			return hosttest.Settled("fired")
		}
		select {
		case <-time.After(probe):
		case <-stopped:
		}
		if req.Kind == "flaky" {
			return faulted("flaky")
		}
		return hosttest.Pending("still running")
	})
	s, err := New(Config{Store: st, Plugins: pl, Deliver: &recordingDeliverer{st: st}})
	if err != nil {
		b.Fatal(err)
	}
	kindOf := map[store.ID]string{}
	register := func(kindName string, i int) {
		w, err := s.Register(ctx, Registration{Kind: kindName, Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: fmt.Sprintf("agent-%d", i%64)}})
		if err != nil {
			b.Fatal(err)
		}
		kindOf[w.ID] = kindName
	}
	for i := range n {
		register(kindName, i)
	}
	for i := range timers {
		register("timer", i)
	}
	// Everything is due from start on: the slow work at start, the timers
	// spread over the second after it.
	start := time.Now().Add(100 * time.Millisecond)
	s.mu.Lock()
	i := 0
	for _, e := range s.h {
		e.due = start.UnixNano()
		if kindOf[e.id] == "timer" {
			e.due += int64(time.Second) * int64(i) / int64(timers)
			dueOf[e.id.String()] = time.Unix(0, e.due)
			i++
		}
	}
	heap.Init(&s.h)
	s.mu.Unlock()

	runCtx, cancel := context.WithCancel(ctx)
	run := s.Run
	if design == "batch" {
		run = func(ctx context.Context) error { s.batchLoop(ctx); return nil }
	}
	done := lifecycle.Go(runCtx, run)
	b.StartTimer()
	probed.Wait()
	b.StopTimer()
	close(stopped)
	cancel()
	_ = done()
	return late
}

// edgePass is one pass of the window's edge: a store holding beyond
// watches due an hour to 7 days on; once Prime has read the first
// window (4 s, the next read 1.3 s ahead of its edge), timers written
// to the store due over one second starting 1 s past that edge, so none
// is in memory and each is read by the loader as the window advances.
// It returns each timer's lateness.
func edgePass(b *testing.B, timers, beyond int) []time.Duration {
	b.StopTimer()
	ctx := context.Background()
	st, err := badger.OpenStore(b.TempDir(), badger.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	const horizon = 4 * time.Second
	var (
		mu     sync.Mutex
		dueOf  = map[string]time.Time{}
		late   = make([]time.Duration, 0, timers)
		probed sync.WaitGroup
	)
	probed.Add(timers)
	pl := hosttest.NewFakeKinds(
		kind.Info{Kind: "timer", DefaultEvery: time.Minute},
	).OnObserve(func(req abi.ObserveRequest) (kind.Observation, error) {
		mu.Lock()
		due, ok := dueOf[req.WatchID]
		if ok {
			late = append(late, time.Since(due))
			delete(dueOf, req.WatchID)
		}
		mu.Unlock()
		if ok {
			probed.Done()
		}
		return hosttest.Settled("fired")
	})
	now := time.Now()
	ids := rand.NewChaCha8([32]byte{'e', 'd', 'g', 'e'})
	row := func(i int, at time.Time) store.Watch {
		id, err := store.NewID(now, ids)
		if err != nil {
			b.Fatal(err)
		}
		exp := at.Add(time.Minute)
		return store.Watch{ID: id, Kind: "timer", Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: fmt.Sprintf("agent-%d", i%1000)},
			State: store.Pending, Receipt: store.ReceiptNone, Every: store.Duration(time.Minute),
			CreatedAt: now, ExpiresAt: &exp, NextCheck: at}
	}
	const batch = 20_000
	ws := make([]store.Watch, 0, batch)
	for i := range beyond {
		ws = append(ws, row(i, now.Add(time.Hour+time.Duration(int64(7*24*time.Hour)/int64(beyond)*int64(i)))))
		if len(ws) == batch || i == beyond-1 {
			if err := st.CreateMany(ctx, ws); err != nil {
				b.Fatal(err)
			}
			ws = ws[:0]
		}
	}
	s, err := New(Config{Store: st, Plugins: pl, Deliver: &recordingDeliverer{st: st}, Horizon: horizon})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Prime(ctx); err != nil {
		b.Fatal(err)
	}
	// The timers, written to the store after Prime and due past its
	// window's edge: in the due index only, as a registration beyond the
	// window leaves them.
	start := time.Now().Add(horizon + time.Second)
	for i := range timers {
		w := row(i, start.Add(time.Duration(int64(time.Second)*int64(i)/int64(timers))))
		dueOf[w.ID.String()] = w.NextCheck
		ws = append(ws, w)
	}
	if err := st.CreateMany(ctx, ws); err != nil {
		b.Fatal(err)
	}
	if n := s.Pending(); n != 0 {
		b.Fatalf("%d held after Prime; want none", n)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := lifecycle.Go(runCtx, s.Run)
	b.StartTimer()
	probed.Wait()
	b.StopTimer()
	cancel()
	_ = done()
	return late
}

// batchTick is the scheduler's Tick before the ready queue, kept only so
// BenchmarkLateness can compare the designs in one run: it pops every due
// watch, probes them on Workers goroutines started for the batch, and
// returns when the slowest is done (the barrier). No fairness, no
// reading ahead: a worker takes the next due watch whatever its kind or
// recipient.
func (s *Scheduler) batchTick(ctx context.Context, now time.Time) int {
	nowN := now.UnixNano()
	s.mu.Lock()
	var due []*entry
	for len(s.h) > 0 && s.h[0].due <= nowN {
		due = append(due, heap.Pop(&s.h).(*entry))
	}
	s.mu.Unlock()
	if len(due) == 0 {
		return 0
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(s.cfg.Workers, len(due)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(due) {
					return
				}
				e := due[i]
				if ctx.Err() != nil {
					s.rearm(e, now, time.Time{})
					continue
				}
				w, err := s.cfg.Store.Get(ctx, e.id)
				if err != nil || w.State != store.Pending {
					s.drop(e)
					continue
				}
				s.probe(ctx, e, w, now, time.Time{})
			}
		})
	}
	wg.Wait()
	return len(due)
}

// batchLoop is Start's loop before the ready queue: a batchTick, then
// sleep until the next due watch or a wake-up.
func (s *Scheduler) batchLoop(ctx context.Context) {
	for ctx.Err() == nil {
		s.batchTick(ctx, s.cfg.Clock.Now())
		var fire <-chan time.Time
		var timer *time.Timer
		if next, ok := s.NextWake(); ok {
			d := next.Sub(s.cfg.Clock.Now())
			if d <= 0 {
				continue
			}
			timer = time.NewTimer(d)
			fire = timer.C
		}
		select {
		case <-ctx.Done():
		case <-s.wake:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}
