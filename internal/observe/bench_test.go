package observe

// Benchmarks of the observer in process, over a real badger store in a
// temporary directory with the default options (SyncWrites off). Run with
//
//	go test -run XXX -bench . -benchmem ./internal/observe/
//
// BenchmarkRecord is Observer.Record with no budget (Rate and RunPerMinute
// -1), from g
// goroutines: items=new records distinct items (an event appended each
// time), items=duplicate records exact repeats of items recorded before the
// clock starts (the answer "duplicate": the de-duplication check alone,
// nothing written), and items=duplicate-spent the same with the principal's
// budget spent by those first records (Rate 1e-9, Burst 1024): each repeat
// is answered by the look-up a record over budget makes instead of 429. One op is one record; items/s is the throughput, p50-us
// and p99-us the latency of one call. The router does not run.
//
// BenchmarkThreadWake is the time from recording a follow-up to the
// parked observe.thread watch's message being readable in its recipient's
// mailbox, with the scheduler's loop (Scheduler.Run) and the observer's
// router (Observer.Run) running on the wall clock, as vigil serve runs
// them. Each op: (untimed) register the next wait on a claimed Work and
// wait until its registration probe has parked it; (timed) Record a new
// item of the Work's thread, then Delivery.Read(after the cursor, 1, wait)
// until the wake lands. turns=N: each Work serves N waits, then the next
// op moves to a new Work (all opened and claimed before the clock starts).
// The number matters: settling a wait deletes its entry in the store's
// subject index, badger keeps the deletion as a tombstone until a
// compaction drops it, and Poke's prefix scan of the index steps over
// every one, so the later turns of a long thread poke more slowly.
//
// p50-us and p99-us are the time from Record to the message; the HTTP
// version is BenchmarkObserveWakeHTTP in internal/httpapi. The stages are
// stamped on the way by thin wrappers (a time.Now each), from the start of
// the Record: p50-routed-us when the router's batch that appended the
// item returned, p50-poked-us when its Poke of the scheduler returned,
// p50-sent-us when the scheduler, having probed and settled the watch,
// called Delivery.Send (p99 likewise).

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/benchtest"
	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/internal/delivery"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/lifecycle"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

// benchText is an item's text: a short chat message, as a source reports.
const benchText = "printer on fire in room 4\nsince 9am; the queue is stuck and jobs pile up"

// benchRecord is item i of thread T<i/4> (four items a thread).
func benchRecord(prefix string, i int) Record {
	return Record{Item: fmt.Sprintf("%s%d", prefix, i), Thread: fmt.Sprintf("T%d", i/4), Text: benchText}
}

// BenchmarkRecord is Observer.Record of new items and of exact repeats;
// see the top of this file.
func BenchmarkRecord(b *testing.B) {
	const repeats = 1024 // distinct items the duplicate cases repeat
	for _, items := range []string{"new", "duplicate", "duplicate-spent"} {
		for _, g := range []int{1, 8} {
			b.Run(fmt.Sprintf("items=%s/g=%d", items, g), func(b *testing.B) {
				st, err := badger.OpenStore(b.TempDir(), badger.Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = st.Close() })
				o := Options{Store: st, Clock: clock.Wall{}, Rate: -1, RunPerMinute: -1, Principal: store.ValidRecipientID}
				if items == "duplicate-spent" {
					o.Rate, o.Burst = 1e-9, repeats
				}
				ob, err := New(o, helpConfig("watcher"))
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				if items != "new" {
					for i := range repeats {
						if _, err := ob.Record(ctx, "watcher", "support", benchRecord("m", i)); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportAllocs()
				ds := benchtest.Drive(b, g, func(i int) error {
					if items != "new" {
						i %= repeats
					}
					got, err := ob.Record(ctx, "watcher", "support", benchRecord("m", i))
					if err == nil && got.Duplicate != (items != "new") {
						err = fmt.Errorf("item %d: duplicate %v", i, got.Duplicate)
					}
					return err
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
				benchtest.Percentiles(b, ds, time.Microsecond, "us")
			})
		}
	}
}

// wakeRig is the host an observe.thread wake goes through: the store,
// delivery and scheduler of apitest.NewStack on the wall clock, the
// observer over them, the loop and the router running; stamps says when
// each stage of the last wake happened.
type wakeRig struct {
	stack  *apitest.Stack
	ob     *Observer
	stamps *wakeStamps
}

// wakeStamps are the times (Unix ns) of the last batch of route steps that
// appended to a Work, the last Poke and the last Send.
type wakeStamps struct{ routed, poked, sent atomic.Int64 }

// stampStore stamps each batch of route steps that appends to a Work.
type stampStore struct {
	*store.Store
	s *wakeStamps
}

func (st stampStore) RouteBatch(ctx context.Context, steps []store.RouteStep) ([]store.Routed, error) {
	res, err := st.Store.RouteBatch(ctx, steps)
	for _, r := range res {
		if r.Action == store.RouteAppended {
			st.s.routed.Store(time.Now().UnixNano())
			break
		}
	}
	return res, err
}

// stampWaker stamps each Poke once it returns.
type stampWaker struct {
	*scheduler.Scheduler
	s *wakeStamps
}

func (w stampWaker) Poke(ctx context.Context, subject string) (int, error) {
	n, err := w.Scheduler.Poke(ctx, subject)
	w.s.poked.Store(time.Now().UnixNano())
	return n, err
}

// stampDeliver stamps each Settle as it starts.
type stampDeliver struct {
	*delivery.Delivery
	s *wakeStamps
}

func (d stampDeliver) Settle(ctx context.Context, id store.ID, st store.Settlement, m store.Message) (store.Watch, error) {
	d.s.sent.Store(time.Now().UnixNano())
	return d.Delivery.Settle(ctx, id, st, m)
}

func newWakeRig(b *testing.B) *wakeRig {
	b.Helper()
	reg := kind.NewRegistry()
	stamps := &wakeStamps{}
	stack := apitest.NewStack(b, apitest.Config{Plugins: reg, Clock: clock.Wall{},
		Deliver: func(d *delivery.Delivery, _ *store.Store) scheduler.Deliverer { return stampDeliver{d, stamps} }})
	ob, err := New(Options{Store: stampStore{stack.Store, stamps}, Clock: clock.Wall{}, Rate: -1, RunPerMinute: -1, Principal: store.ValidRecipientID}, helpConfig("watcher"))
	if err != nil {
		b.Fatal(err)
	}
	if err := ob.Register(reg); err != nil {
		b.Fatal(err)
	}
	ob.SetWaker(stampWaker{stack.Scheduler, stamps})
	ctx, stop := context.WithCancel(context.Background())
	// As vigil serve: prime, then the loop, then the router.
	if _, err := stack.Scheduler.Prime(ctx); err != nil {
		b.Fatal(err)
	}
	loop := lifecycle.Go(ctx, stack.Scheduler.Run)
	routed := lifecycle.Go(ctx, ob.Run)
	// Registered after the stack's store cleanup, so it runs first.
	b.Cleanup(func() {
		stop()
		_ = loop()
		_ = routed()
	})
	return &wakeRig{stack: stack, ob: ob, stamps: stamps}
}

// openThreads opens n threads W0 … W<n-1>: records each one's opener,
// routes them, and claims each Work for recipient (which gives it the
// opener, so a wait registered next parks). It returns the Works in order.
func openThreads(b *testing.B, ob *Observer, record func(Record) error, n int, recipient string) []store.Work {
	b.Helper()
	ctx := context.Background()
	for k := range n {
		if err := record(Record{Item: fmt.Sprint("opener-", k), Thread: fmt.Sprint("W", k), Text: benchText}); err != nil {
			b.Fatal(err)
		}
	}
	// The router may be routing them too; RouteAll returns once they are.
	if _, err := ob.RouteAll(ctx); err != nil {
		b.Fatal(err)
	}
	ws, err := ob.ListWork(ctx, "support", store.WorkOpen)
	if err != nil {
		b.Fatal(err)
	}
	byThread := map[string]store.Work{}
	for _, w := range ws {
		byThread[w.ThreadKey] = w
	}
	out := make([]store.Work, n)
	for k := range out {
		w, ok := byThread[threadKey("support", "slack-help", fmt.Sprint("W", k))]
		if !ok {
			b.Fatalf("thread W%d has no work", k)
		}
		if _, _, err := ob.ClaimWork(ctx, w.ID, recipient); err != nil {
			b.Fatal(err)
		}
		out[k] = w
	}
	return out
}

// wakeTurns are the waits each Work of BenchmarkThreadWake serves before
// the next op moves to a new Work.
var wakeTurns = []int{10, 100, 1000}

// BenchmarkThreadWake is the time from Record to the parked watch's
// message in the mailbox; see the top of this file.
func BenchmarkThreadWake(b *testing.B) {
	for _, turns := range wakeTurns {
		b.Run(fmt.Sprintf("turns=%d", turns), func(b *testing.B) { benchThreadWake(b, turns) })
	}
}

func benchThreadWake(b *testing.B, turns int) {
	const recipient = "responder"
	r := newWakeRig(b)
	ctx := context.Background()
	record := func(rec Record) error {
		_, err := r.ob.Record(ctx, "watcher", "support", rec)
		return err
	}
	works := openThreads(b, r.ob, record, (b.N+turns-1)/turns, recipient)
	var cur uint64
	ds := make([]time.Duration, 0, b.N)
	var routed, poked, sent []time.Duration
	since := func(t time.Time, at int64) time.Duration { return time.Duration(at - t.UnixNano()) }
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		k := i / turns
		if err := apitest.ParkThreadWatch(r.stack.Scheduler, works[k], recipient); err != nil {
			b.Fatal(err)
		}
		item := fmt.Sprint("f", i)
		b.StartTimer()
		t := time.Now()
		err := record(Record{Item: item, Thread: fmt.Sprint("W", k), Text: "still burning"})
		var msgs []store.Message
		if err == nil {
			msgs, err = r.stack.Delivery.Read(ctx, recipient, cur, 1, 10*time.Second)
		}
		d := time.Since(t)
		b.StopTimer()
		if err == nil {
			err = apitest.CheckWake(msgs, item)
		}
		if err != nil {
			b.Fatal(err)
		}
		ds = append(ds, d)
		routed = append(routed, since(t, r.stamps.routed.Load()))
		poked = append(poked, since(t, r.stamps.poked.Load()))
		sent = append(sent, since(t, r.stamps.sent.Load()))
		cur = msgs[0].Seq
		b.StartTimer()
	}
	b.StopTimer()
	benchtest.Percentiles(b, ds, time.Microsecond, "us")
	benchtest.Percentiles(b, routed, time.Microsecond, "routed-us")
	benchtest.Percentiles(b, poked, time.Microsecond, "poked-us")
	benchtest.Percentiles(b, sent, time.Microsecond, "sent-us")
}
