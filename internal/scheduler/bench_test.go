package scheduler

// Benchmarks of the scheduler at scale. docs/BENCHMARKS.md has the results
// and how to read them. Run with
//
//	go test -run XXX -bench . -benchmem ./store/ ./internal/scheduler/
//
// BenchmarkWatches holds VIGIL_BENCH_WATCHES pending timer watches
// (default 1000000), each due about an hour from now, and measures:
//
//	memory/<design>  resident memory and Go heap per watch: vigil's
//	                 scheduler filled by Prime and by Register, and the
//	                 designs a Go programmer reaches for first
//	restart/<cache>  a badger store of that many rows, each with a durable
//	                 next check an hour ahead, opened and primed in a new
//	                 process: memory per watch, Prime's time, disk, and the
//	                 probes that follow (due in the first minute, and
//	                 probed over VIGIL_BENCH_IDLE with the loop running);
//	                 warm-no-next-check is the same store read as the design
//	                 before durable next checks (each watch jittered across
//	                 its interval), for comparison
//	idle/<case>      CPU and wake-ups over VIGIL_BENCH_IDLE (default 10s)
//	                 with the loop running
//
// Each of those runs in a new process, a copy of this test binary running
// TestBenchChild, so one measurement's leftovers are not the next one's
// baseline. In one process they would be: the Go runtime keeps the
// descriptor (g) of every goroutine that has exited, for reuse, so a
// second million goroutines would seem to cost less than the first; and a
// store's files stay in the page cache and badger's caches stay filled.
//
// BenchmarkTick is probe throughput, VIGIL_BENCH_PROBES (default 10000)
// due watches per Tick, through the bundled timer plugin and through fakes
// (the scheduler's and the store's share of a probe). BenchmarkRegister
// is registration throughput (admit, create, arm).

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/hosttest"
	"github.com/vigilhq/vigil/internal/lifecycle"

	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/internal/wasmbuild"
	"github.com/vigilhq/vigil/plugins"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

// Sizes, from the environment so a quick run is possible.
func benchWatches(tb testing.TB) int { return envInt(tb, "VIGIL_BENCH_WATCHES", 1_000_000) }
func benchProbes(tb testing.TB) int  { return envInt(tb, "VIGIL_BENCH_PROBES", 10_000) }

func benchIdle(tb testing.TB) time.Duration {
	v := os.Getenv("VIGIL_BENCH_IDLE")
	if v == "" {
		return 10 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		tb.Fatalf("VIGIL_BENCH_IDLE=%q: want a duration such as 10s", v)
	}
	return d
}

func envInt(tb testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(strings.ReplaceAll(v, "_", ""))
	if err != nil || n <= 0 {
		tb.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// timers is a population of timer watches registered at now, each for an
// instant an hour later: the rows Register writes for {"at": at}.
type timers struct {
	now, at    time.Time
	params     json.RawMessage
	recipients [64]store.Recipient
}

func newTimers(now time.Time) *timers {
	now = now.UTC().Truncate(time.Second)
	p := &timers{now: now, at: now.Add(time.Hour)}
	p.params = json.RawMessage(`{"at":"` + p.at.Format(time.RFC3339) + `"}`)
	for i := range p.recipients {
		p.recipients[i] = store.Recipient{ID: fmt.Sprintf("agent-%02d", i)}
	}
	return p
}

// row is watch i, created at created.
func (p *timers) row(id store.ID, i int, created time.Time) store.Watch {
	exp := p.at.Add(time.Minute) // the timer's natural deadline
	return store.Watch{
		ID: id, Kind: "timer", Params: p.params, Recipient: p.recipients[i%len(p.recipients)],
		State: store.Pending, Receipt: store.ReceiptNone, Every: store.Duration(time.Minute),
		CreatedAt: created, ExpiresAt: &exp,
	}
}

// due is when watch i is next probed once its first probe has answered:
// an hour from registration, spread over a minute.
func (p *timers) due(i int) time.Time {
	return p.at.Add(time.Duration(i%60_000) * time.Millisecond)
}

// timerFakes answers like the timer, without wasm: admitted with the
// deadline at + 1 min, pending with the next check an hour ahead.
func timerFakes(at time.Time) *hosttest.FakeKinds {
	return hosttest.NewFakeKinds(kind.Info{Kind: "timer", DefaultEvery: time.Minute}).
		OnObserve(func(req abi.ObserveRequest) (kind.Observation, error) {
			return kind.Observation{Status: abi.StatusPending, Note: "not yet", NextCheck: req.Now.Add(time.Hour)}, nil
		}).
		OnAdmit(func(string, kind.AdmitRequest) (kind.Admission, error) {
			return kind.Admission{Deadline: at.Add(time.Minute)}, nil
		})
}

// genStore stands in for badger where only the scheduler's own memory is
// measured: ForEachPending (what Prime reads), ForEach and List make n
// pending timer rows on the fly and keep none of them, Create writes
// nothing. The scheduler calls nothing else here; a method it starts to
// call panics on the nil Store, which the benchmarks run in CI would show.
type genStore struct {
	rowStore // nil
	n        int
	pop      *timers
}

func (g *genStore) PruneUnindexed(context.Context, time.Time) (int, error) { return 0, nil }
func (g *genStore) Create(context.Context, store.Watch) error              { return nil }

// ForEachPending yields the schedule the badger store's pending index
// carries for each of the n rows.
func (g *genStore) ForEachPending(ctx context.Context, fn func(store.Schedule) error) (int, error) {
	return g.ForEach(ctx, store.Filter{}, func(w store.Watch) error {
		sc := store.Schedule{ID: w.ID, Every: time.Duration(w.Every), Attempts: w.Attempts}
		if w.ExpiresAt != nil {
			sc.Expires = *w.ExpiresAt
		}
		return fn(sc)
	})
}

// ScanDue is the due index of the n rows, all due since their
// registration (none has a next check): each load gives them all, and
// says nothing lies beyond.
func (g *genStore) ScanDue(ctx context.Context, q store.DueQuery, fn func(store.Schedule) error) (store.DueSlice, error) {
	if q.After != (store.DueKey{}) {
		return store.DueSlice{Last: q.After}, nil
	}
	_, err := g.ForEachPending(ctx, fn)
	return store.DueSlice{Last: store.DueKey{At: g.pop.now.UnixNano()}}, err
}

func (g *genStore) ForEach(_ context.Context, _ store.Filter, fn func(store.Watch) error) (int, error) {
	ids := hosttest.IDs(3)
	for i := range g.n {
		id, err := store.NewID(g.pop.now, ids)
		if err != nil {
			return 0, err
		}
		if err := fn(g.pop.row(id, i, g.pop.now)); err != nil {
			return 0, err
		}
	}
	return 0, nil
}

func (g *genStore) List(ctx context.Context, f store.Filter) ([]store.Watch, int, error) {
	var rows []store.Watch
	held, err := g.ForEach(ctx, f, func(w store.Watch) error {
		rows = append(rows, w)
		return nil
	})
	return rows, held, err
}

// countingClock is the wall clock, counting its readings. The loop reads
// it twice per pass (to move what is due to the ready queue, then to arm
// its timer), and nothing else does while the benchmark watches (an idle
// worker reads no clock), so reads / 2 is how often it woke.
type countingClock struct {
	clock.Wall
	reads atomic.Int64
}

func (c *countingClock) Now() time.Time {
	c.reads.Add(1)
	return time.Now()
}

func benchScheduler(tb testing.TB, st rowStore, pl Kinds, clk clock.Clock, workers int) *Scheduler {
	tb.Helper()
	// One window holds every row: these measure the heap itself.
	s, err := New(Config{Store: st, Plugins: pl, Deliver: &recordingDeliverer{st: st}, Clock: clk, Workers: workers,
		WindowMax: math.MaxInt, Horizon: 8 * 24 * time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// armAhead re-arms every pending watch at its due time an hour ahead (never
// past its deadline), as if each had been probed once and the timer had
// answered next_check = at. It returns the earliest.
func armAhead(s *Scheduler, pop *timers) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	earliest := int64(math.MaxInt64)
	for i, e := range s.h {
		e.due = pop.due(i).UnixNano()
		if e.deadline != 0 {
			e.due = min(e.due, e.deadline)
		}
		earliest = min(earliest, e.due)
	}
	heap.Init(&s.h)
	return time.Unix(0, earliest)
}

// rearmAll makes every pending watch due at at.
func rearmAll(s *Scheduler, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.h {
		e.due = at.UnixNano()
	}
	heap.Init(&s.h)
}

// memSample is the process's memory at one moment.
type memSample struct {
	rss, rssFile, heap, stacks int64
}

// readMem samples memory; with collect, after a full collection that also
// hands freed memory back to the OS (debug.FreeOSMemory).
func readMem(collect bool) memSample {
	if collect {
		debug.FreeOSMemory()
	}
	rss, file := residentBytes()
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/stacks:bytes"},
	}
	metrics.Read(s)
	return memSample{rss: rss, rssFile: file, heap: int64(s[0].Value.Uint64()), stacks: int64(s[1].Value.Uint64())}
}

func timeGC() time.Duration {
	start := time.Now()
	runtime.GC()
	return time.Since(start)
}

// ---- Child processes ----

const (
	childEnv    = "VIGIL_BENCH_CHILD"
	childResult = "VIGIL_BENCH_RESULT "
)

// TestBenchChild is not a test: it is the body of a benchmark's child
// process (see the top of this file), and skips unless a benchmark started
// it. It prints its figures as one JSON line.
func TestBenchChild(t *testing.T) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		t.Skip("the child process of BenchmarkWatches; it runs only under -bench")
	}
	var res map[string]float64
	switch mode {
	case "memory":
		res = childMemory(t, os.Getenv("VIGIL_BENCH_DESIGN"))
	case "restart":
		res = childRestart(t, os.Getenv("VIGIL_BENCH_DIR"), os.Getenv("VIGIL_BENCH_DESIGN"))
	case "idle":
		res = childIdle(t, os.Getenv("VIGIL_BENCH_CASE"), os.Getenv("VIGIL_BENCH_DIR"))
	default:
		t.Fatalf("%s=%q", childEnv, mode)
	}
	out, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("%s%s\n", childResult, out)
}

// runChild runs TestBenchChild in a new process and returns its figures.
func runChild(b *testing.B, mode string, env ...string) map[string]float64 {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBenchChild$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), childEnv+"="+mode), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		b.Fatalf("child %s %v: %v\n%s", mode, env, err, out.Bytes())
	}
	for line := range strings.Lines(out.String()) {
		if v, ok := strings.CutPrefix(line, childResult); ok {
			var res map[string]float64
			if err := json.Unmarshal([]byte(v), &res); err != nil {
				b.Fatalf("child %s: %v", mode, err)
			}
			return res
		}
	}
	b.Fatalf("child %s %v printed no result:\n%s", mode, env, out.Bytes())
	return nil
}

// report averages the children's figures into metrics.
func report(b *testing.B, runs []map[string]float64) map[string]float64 {
	avg := map[string]float64{}
	for _, r := range runs {
		for k, v := range r {
			avg[k] += v / float64(len(runs))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(avg)) {
		b.ReportMetric(avg[k], k)
	}
	return avg
}

// ---- 1,000,000 pending watches ----

// vigilMem is the scheduler's memory per watch (filled by Prime), for the
// ratios the other designs report.
var vigilMem struct {
	mu        sync.Mutex
	rss, heap float64
}

// BenchmarkWatches is VIGIL_BENCH_WATCHES pending watches, each due about
// an hour from now: their memory in the scheduler and in the designs it is
// compared with, a restart over a store holding them, and the cost of
// waiting for them. See the top of this file.
func BenchmarkWatches(b *testing.B) {
	if !osMetrics {
		b.Skip("reads Linux's /proc")
	}
	n := benchWatches(b)
	for _, design := range []string{"vigil-prime", "vigil-register", "vigil-beyond-window", "bare-heap", "afterfunc", "goroutine-timer"} {
		b.Run("memory/"+design, func(b *testing.B) {
			var runs []map[string]float64
			for range b.N {
				runs = append(runs, runChild(b, "memory", "VIGIL_BENCH_DESIGN="+design))
			}
			avg := report(b, runs)
			vigilMem.mu.Lock()
			defer vigilMem.mu.Unlock()
			if design == "vigil-prime" {
				vigilMem.rss, vigilMem.heap = avg["rss-B/watch"], avg["heap-B/watch"]+avg["stack-B/watch"]
			} else if vigilMem.rss > 0 {
				b.ReportMetric(avg["rss-B/watch"]/vigilMem.rss, "x-vigil-rss")
				b.ReportMetric((avg["heap-B/watch"]+avg["stack-B/watch"])/vigilMem.heap, "x-vigil-heap")
			}
		})
	}

	// One store of n pending rows, built the first time a benchmark needs
	// it and shared by them all (the parent runs once, its sub-benchmarks
	// -count times).
	ps := &pendingStore{dir: b.TempDir(), n: n}
	for _, cache := range []string{"warm", "cold", "warm-no-next-check"} {
		b.Run("restart/"+cache, func(b *testing.B) {
			dir := ps.get(b)
			design := "next-check"
			if cache == "warm-no-next-check" {
				design = "jitter"
			}
			var runs []map[string]float64
			for range b.N {
				if cache == "cold" {
					before := pageCache()
					if err := evictPageCache(dir); err != nil {
						b.Fatal(err)
					}
					b.Logf("page cache: %d MiB before, %d MiB after dropping the store's files", before>>20, pageCache()>>20)
				}
				r := runChild(b, "restart", "VIGIL_BENCH_DIR="+dir, "VIGIL_BENCH_DESIGN="+design)
				apparent, allocated, err := diskUsage(dir)
				if err != nil {
					b.Fatal(err)
				}
				r["disk-MiB"] = float64(allocated) / (1 << 20)
				r["disk-apparent-MiB"] = float64(apparent) / (1 << 20)
				r["disk-B/watch"] = float64(allocated) / float64(n)
				runs = append(runs, r)
			}
			report(b, runs)
		})
	}
	for _, c := range []string{"alone", "store", "after-restart"} {
		b.Run("idle/"+c, func(b *testing.B) {
			var dir string
			if c != "alone" {
				dir = ps.get(b)
			}
			var runs []map[string]float64
			for range b.N {
				runs = append(runs, runChild(b, "idle", "VIGIL_BENCH_CASE="+c, "VIGIL_BENCH_DIR="+dir))
			}
			report(b, runs)
		})
	}
}

// pageCache is the kernel's page cache (Cached in /proc/meminfo), bytes.
func pageCache() int64 {
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(line, "Cached:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return -1
}

// pendingStore is a badger store of n pending timer rows, made once.
type pendingStore struct {
	once sync.Once
	dir  string
	n    int
	err  error
}

func (p *pendingStore) get(b *testing.B) string {
	p.once.Do(func() { p.err = p.build(b) })
	if p.err != nil {
		b.Fatal(p.err)
	}
	return p.dir
}

// build writes the rows with store.Create from 8 goroutines, each row
// with an id and created_at of the moment it is written, as Register
// would, and as its first probe leaves it (one attempt, the timer's note,
// the durable next check at its instant an hour ahead, spread over a
// minute), then closes the store.
func (p *pendingStore) build(b *testing.B) error {
	ctx := context.Background()
	st, err := badger.OpenStore(p.dir, badger.Options{})
	if err != nil {
		return err
	}
	pop := newTimers(time.Now())
	const writers = 8
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	start := time.Now()
	for g := range writers {
		wg.Go(func() {
			ids := hosttest.IDs('w' + byte(g))
			for {
				i := int(next.Add(1)) - 1
				if i >= p.n {
					return
				}
				now := time.Now()
				id, err := store.NewID(now, ids)
				if err == nil {
					w := pop.row(id, i, now.UTC())
					w.Attempts, w.LastNote, w.NextCheck = 1, "not yet", pop.due(i)
					err = st.Create(ctx, w)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		_ = st.Close()
		return err
	}
	if err := st.Close(); err != nil {
		return err
	}
	apparent, allocated, err := diskUsage(p.dir)
	if err != nil {
		return err
	}
	b.Logf("built a store of %d pending rows with store.Create from %d goroutines in %v (%.0f rows/s); on disk %d MiB (apparent size %d MiB)",
		p.n, writers, took.Round(time.Millisecond), float64(p.n)/took.Seconds(), allocated>>20, apparent>>20)
	return nil
}

// fireBench is what a naive design's timer does when it fires; none fires
// while the benchmark runs.
var fired atomic.Int64

func fireBench(id store.ID) { fired.Add(int64(id[15]) + 1) }

// firstCheckKinds admits every watch with its first check at at, keeping
// nothing of the request (the fake kinds' own Admit records each one).
type firstCheckKinds struct {
	*hosttest.FakeKinds
	at time.Time
}

func (k firstCheckKinds) Admit(context.Context, string, kind.AdmitRequest) (kind.Admission, error) {
	return kind.Admission{NextCheck: k.at, Deadline: k.at.Add(time.Minute)}, nil
}

// memDesigns fill n watches due in about an hour the way each design holds
// them, and return a cleanup that keeps them alive until it is called.
var memDesigns = map[string]func(tb testing.TB, n int, pop *timers) (cleanup func()){
	// vigil's scheduler, filled by Prime from a store of n pending rows.
	"vigil-prime": func(tb testing.TB, n int, pop *timers) func() {
		s := benchScheduler(tb, &genStore{n: n, pop: pop}, timerFakes(pop.at), nil, 1)
		if got, err := s.Prime(context.Background()); err != nil || got != n {
			tb.Fatalf("prime: %d, %v", got, err)
		}
		return func() {
			if s.Pending() != n {
				tb.Errorf("%d pending, want %d", s.Pending(), n)
			}
		}
	},
	// vigil's scheduler with its default window (15 minutes), given n
	// registrations of timers due in about an hour: beyond the window,
	// each is written to the store's due index (here: to nothing) and
	// none is held, so the heap per pending watch is what its window
	// costs a watch it does not hold.
	"vigil-beyond-window": func(tb testing.TB, n int, pop *timers) func() {
		kinds := firstCheckKinds{timerFakes(pop.at), pop.at}
		st := &genStore{pop: pop}
		s, err := New(Config{Store: st, Plugins: kinds, Deliver: &recordingDeliverer{st: st}, Workers: 1})
		if err != nil {
			tb.Fatal(err)
		}
		ctx := context.Background()
		if _, err := s.Prime(ctx); err != nil {
			tb.Fatal(err)
		}
		for i := range n {
			if _, err := s.Register(ctx, Registration{Kind: "timer", Params: pop.params, Recipient: pop.recipients[i%len(pop.recipients)]}); err != nil {
				tb.Fatal(err)
			}
		}
		return func() {
			if s.Pending() != 0 {
				tb.Errorf("%d held, want none beyond the window", s.Pending())
			}
		}
	},
	// vigil's scheduler, filled by n calls of Register (fake plugins, a
	// store that writes nothing, ids from crypto/rand as in the product).
	"vigil-register": func(tb testing.TB, n int, pop *timers) func() {
		s := benchScheduler(tb, &genStore{pop: pop}, timerFakes(pop.at), nil, 1)
		ctx := context.Background()
		for i := range n {
			if _, err := s.Register(ctx, Registration{Kind: "timer", Params: pop.params, Recipient: pop.recipients[i%len(pop.recipients)]}); err != nil {
				tb.Fatal(err)
			}
		}
		return func() {
			if s.Pending() != n {
				tb.Errorf("%d pending, want %d", s.Pending(), n)
			}
		}
	},
	// A bare container/heap of {id, due, index} with a map index for
	// cancel, pushed one at a time.
	"bare-heap": func(_ testing.TB, n int, pop *timers) func() {
		ids := hosttest.IDs(4)
		h := bareHeap{}
		byID := map[store.ID]*bareEntry{}
		for i := range n {
			id, _ := store.NewID(pop.now, ids)
			e := &bareEntry{id: id, due: pop.due(i).UnixNano()}
			heap.Push(&h, e)
			byID[id] = e
		}
		return func() {
			runtime.KeepAlive(h)
			runtime.KeepAlive(byID)
		}
	},
	// One time.AfterFunc per watch, its func closing over the id; the
	// *Timer handles in a slice, to stop them (no map: no cancel by id).
	"afterfunc": func(tb testing.TB, n int, pop *timers) func() {
		ids := hosttest.IDs(5)
		ts := make([]*time.Timer, 0, n)
		for i := range n {
			id, _ := store.NewID(pop.now, ids)
			ts = append(ts, time.AfterFunc(time.Until(pop.due(i)), func() { fireBench(id) }))
		}
		return func() {
			for _, t := range ts {
				if !t.Stop() {
					tb.Error("a timer fired")
				}
			}
		}
	},
	// One goroutine per watch blocked on its own time.Timer, or on a
	// shared stop channel (no per-watch cancel).
	"goroutine-timer": func(_ testing.TB, n int, pop *timers) func() {
		ids := hosttest.IDs(6)
		stop := make(chan struct{})
		var ready, done sync.WaitGroup
		ready.Add(n)
		for i := range n {
			id, _ := store.NewID(pop.now, ids)
			d := time.Until(pop.due(i))
			done.Go(func() {
				t := time.NewTimer(d)
				ready.Done()
				select {
				case <-t.C:
					fireBench(id)
				case <-stop:
					t.Stop()
				}
			})
		}
		ready.Wait()
		return func() {
			close(stop)
			done.Wait()
		}
	},
}

type bareEntry struct {
	id    store.ID
	due   int64
	index int
}

type bareHeap []*bareEntry

func (h bareHeap) Len() int           { return len(h) }
func (h bareHeap) Less(i, j int) bool { return h[i].due < h[j].due }
func (h bareHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *bareHeap) Push(x any) {
	e := x.(*bareEntry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *bareHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

// childMemory fills one design and reports what it holds per watch: live
// Go heap, goroutine stacks and resident memory, each after a collection
// that returns free memory to the OS; the time to fill it; and how long a
// full collection takes with it live.
func childMemory(t *testing.T, design string) map[string]float64 {
	fill := memDesigns[design]
	if fill == nil {
		t.Fatalf("no design %q", design)
	}
	n := benchWatches(t)
	pop := newTimers(time.Now())
	g0 := runtime.NumGoroutine()
	gcBase := timeGC()
	m0 := readMem(true)
	start := time.Now()
	cleanup := fill(t, n, pop)
	took := time.Since(start)
	m1 := readMem(true)
	gc := timeGC()
	cleanup()
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > g0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left after cleanup, %d before", runtime.NumGoroutine(), g0)
		}
	}
	per := func(a, b int64) float64 { return float64(b-a) / float64(n) }
	return map[string]float64{
		"heap-B/watch":  per(m0.heap, m1.heap),
		"stack-B/watch": per(m0.stacks, m1.stacks),
		"rss-B/watch":   per(m0.rss, m1.rss),
		"fill-ns/watch": float64(took.Nanoseconds()) / float64(n),
		"gc-ms":         float64(gc.Microseconds()) / 1000,
		"gc-empty-ms":   float64(gcBase.Microseconds()) / 1000,
	}
}

// childRestart is a restart over the store in dir: open it, Prime a
// scheduler over it, and report the time each took and the process's
// memory, as Prime leaves it and once the garbage is collected; then how
// many watches Prime left due in the first minute, and the probes the
// loop makes over VIGIL_BENCH_IDLE on the wall clock, through fakes that
// answer as the timer does. design "jitter" reads the store without its
// next checks: the design before them, each watch at a random point of
// its interval.
func childRestart(t *testing.T, dir, design string) map[string]float64 {
	ctx := context.Background()
	n := benchWatches(t)
	m0 := readMem(true)
	start := time.Now()
	st, err := badger.OpenStore(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	open := time.Since(start)
	m1 := readMem(true)
	ts := &timedStore{rowStore: st, noNext: design == "jitter"}
	fp := timerFakes(time.Now())
	s := benchScheduler(t, ts, fp, nil, 1)
	start = time.Now()
	got, err := s.Prime(ctx)
	prime := time.Since(start)
	if err != nil || got != n {
		t.Fatalf("prime: %d, %v; want %d", got, err, n)
	}
	primed := time.Now()
	rssPrimed, _ := residentBytes()
	peak := peakResident()
	m2 := readMem(true)
	dueMinute := 0
	s.mu.Lock()
	for _, e := range s.h {
		if e.due < primed.Add(time.Minute).UnixNano() {
			dueMinute++
		}
	}
	s.mu.Unlock()

	window := benchIdle(t)
	loopCtx, cancel := context.WithCancel(ctx)
	done := lifecycle.Go(loopCtx, s.Run)
	time.Sleep(window)
	probes := fp.Probes()
	cancel()
	_ = done()
	mib := func(v int64) float64 { return float64(v) / (1 << 20) }
	return map[string]float64{
		"open-ms":             float64(open.Microseconds()) / 1000,
		"prime-s":             prime.Seconds(),
		"prime-read-s":        (ts.read - ts.callback).Seconds(),
		"due-1min":            float64(dueMinute),
		"probes-window":       float64(probes),
		"rss-base-MiB":        mib(m0.rss),
		"rss-open-MiB":        mib(m1.rss),
		"rss-primed-MiB":      mib(rssPrimed),
		"rss-peak-MiB":        mib(peak),
		"rss-MiB":             mib(m2.rss),
		"rss-file-MiB":        mib(m2.rssFile),
		"heap-MiB":            mib(m2.heap),
		"rss-B/watch":         float64(m2.rss) / float64(n),
		"rss-primed-B/watch":  float64(rssPrimed) / float64(n),
		"heap-B/watch":        float64(m2.heap) / float64(n),
		"store-rss-B/watch":   float64(m1.rss-m0.rss) / float64(n),
		"store-heap-B/watch":  float64(m1.heap-m0.heap) / float64(n),
		"primed-heap-B/watch": float64(m2.heap-m1.heap) / float64(n),
	}
}

// timedStore times what Prime spends in the store's reads of the pending
// schedule (the due index's first window, ScanDue; ForEachPending) and,
// within them, in Prime's own callback, which arms each row. With noNext
// it hands Prime each schedule without its next check.
type timedStore struct {
	rowStore
	noNext         bool
	read, callback time.Duration
}

func (t *timedStore) ScanDue(ctx context.Context, q store.DueQuery, fn func(store.Schedule) error) (store.DueSlice, error) {
	start := time.Now()
	defer func() { t.read += time.Since(start) }()
	return t.rowStore.ScanDue(ctx, q, func(sc store.Schedule) error {
		s := time.Now()
		defer func() { t.callback += time.Since(s) }()
		if t.noNext {
			sc.Next = time.Time{}
		}
		return fn(sc)
	})
}

func (t *timedStore) ForEachPending(ctx context.Context, fn func(store.Schedule) error) (int, error) {
	start := time.Now()
	defer func() { t.read += time.Since(start) }()
	return t.rowStore.ForEachPending(ctx, func(sc store.Schedule) error {
		s := time.Now()
		defer func() { t.callback += time.Since(s) }()
		if t.noNext {
			sc.Next = time.Time{}
		}
		return fn(sc)
	})
}

// childIdle runs the loop on the wall clock over n pending watches and
// measures a window of VIGIL_BENCH_IDLE: the process's CPU (getrusage),
// its threads' context switches, the loop's passes and the probes.
//
//	alone          the scheduler over genStore: no badger in the process
//	store          the badger store of n rows, open and primed
//	after-restart  the same, with the loop started right after Prime
//
// In the first two every watch is then re-armed an hour ahead (armAhead),
// the state once each has been probed once; after-restart keeps Prime's
// arming, each watch at its durable next check (an hour ahead, spread
// over a minute).
func childIdle(t *testing.T, c, dir string) map[string]float64 {
	n := benchWatches(t)
	window := benchIdle(t)
	pop := newTimers(time.Now())
	var st rowStore
	if c == "alone" {
		st = &genStore{n: n, pop: pop}
	} else {
		bs, err := badger.OpenStore(dir, badger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer bs.Close()
		st = bs
	}
	clock := &countingClock{}
	fp := timerFakes(pop.at)
	s := benchScheduler(t, st, fp, clock, 1)
	if got, err := s.Prime(context.Background()); err != nil || got != n {
		t.Fatalf("prime: %d, %v; want %d", got, err, n)
	}
	var earliest time.Time
	if c != "after-restart" {
		earliest = armAhead(s, pop)
	}
	debug.FreeOSMemory() // so the window does not include scavenging Prime's garbage

	ctx, cancel := context.WithCancel(context.Background())
	reads := clock.reads.Load()
	done := lifecycle.Go(ctx, s.Run)
	for clock.reads.Load() < reads+2 { // the first pass: what is due, then the timer
		time.Sleep(time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)

	sw0 := contextSwitches() // reading /proc costs CPU: outside the window
	reads0, probes0, cpu0, wall0 := clock.reads.Load(), fp.Probes(), cpuTime(), time.Now()
	time.Sleep(window)
	cpu1, reads1, probes1, wall := cpuTime(), clock.reads.Load(), fp.Probes(), time.Since(wall0)
	sw1 := contextSwitches()
	next, ok := s.NextWake()
	pending := s.Pending()
	cancel()
	_ = done()

	res := map[string]float64{
		"cpu-ms":         float64((cpu1 - cpu0).Microseconds()) / 1000,
		"cpu-%":          100 * float64(cpu1-cpu0) / float64(wall),
		"loop-passes":    float64(reads1-reads0) / 2,
		"probes":         float64(probes1 - probes0),
		"ctx-switches/s": float64(sw1-sw0) / wall.Seconds(),
		"pending":        float64(pending),
	}
	if c != "after-restart" {
		res["next-wake-ok"] = 0
		if ok && next.Equal(earliest) {
			res["next-wake-ok"] = 1
		}
		res["next-wake-in-s"] = time.Until(next).Seconds()
	}
	return res
}

// ---- Probe throughput ----

// BenchmarkTick is one Tick over VIGIL_BENCH_PROBES timer watches, all
// due, through the bundled timer plugin (plugin.Runtime, the compile cache
// of the tests) with 1 and 2 workers, and through fakes. The timer answers
// pending with next_check at its instant, an hour ahead, so nothing is
// delivered and every watch is re-armed; between Ticks the benchmark makes
// them all due again, untimed. probes/s is the throughput.
func BenchmarkTick(b *testing.B) {
	b.Run("timer/workers=1", func(b *testing.B) { benchTick(b, true, 1) })
	b.Run("timer/workers=2", func(b *testing.B) { benchTick(b, true, 2) })
	b.Run("fake/workers=1", func(b *testing.B) { benchTick(b, false, 1) })
}

func benchTick(b *testing.B, real bool, workers int) {
	ctx := context.Background()
	n := benchProbes(b)
	pop := newTimers(time.Now())
	var pl Kinds = timerFakes(pop.at)
	if real {
		reg := kind.NewRegistry()
		rt, err := plugin.New(ctx, plugin.Config{Bundled: plugins.Bundled(), CacheDir: wasmbuild.CacheDir(), Kinds: reg})
		if err != nil {
			b.Fatal(err)
		}
		defer rt.Close(ctx)
		if p := rt.Problems(); len(p) != 0 {
			b.Fatalf("plugin problems: %v", p)
		}
		pl = reg
	}
	st, err := badger.OpenStore(b.TempDir(), badger.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	deliver := &recordingDeliverer{st: st}
	s, err := New(Config{Store: st, Plugins: pl, Deliver: deliver, Clock: fakeclock.At(pop.now), Workers: workers})
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		if _, err := s.Register(ctx, Registration{Kind: "timer", Params: pop.params, Recipient: pop.recipients[i%len(pop.recipients)]}); err != nil {
			b.Fatal(err)
		}
	}
	// A first, untimed Tick grows the plugin's pool to one instance per
	// worker and each instance's memory to its working size. The timer's
	// admit names its instant as the first check, so its watches are made
	// due now, as between the timed Ticks.
	rearmAll(s, pop.now)
	if got := s.Tick(ctx, pop.now); got != n {
		b.Fatalf("warm-up tick probed %d, want %d", got, n)
	}
	if next, _ := s.NextWake(); real && !next.Equal(pop.at) {
		b.Fatalf("next wake %v, want the timer's next_check %v", next, pop.at)
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		rearmAll(s, pop.now)
		b.StartTimer()
		if got := s.Tick(ctx, pop.now); got != n {
			b.Fatalf("tick probed %d, want %d", got, n)
		}
	}
	b.StopTimer()
	if m := deliver.messages(); len(m) != 0 || s.Pending() != n {
		b.Fatalf("%d messages, %d pending: want 0 and %d", len(m), s.Pending(), n)
	}
	probes := float64(n) * float64(b.N)
	b.ReportMetric(probes/b.Elapsed().Seconds(), "probes/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/probes, "ns/probe")
}

// ---- Registration throughput ----

// BenchmarkRegister is Scheduler.Register through fake plugins into badger,
// configured as serve configures it (the store is also the Recipients):
// the recipient check (EnsureRecipient, a read of an existing recipient),
// admit, resolve, a new id from crypto/rand, store.Create, arm. One op is
// one registration; rows/s is the throughput, from 1 goroutine and from
// several at once, with Options.SyncWrites off (the default) and on.
func BenchmarkRegister(b *testing.B) {
	for _, syncWrites := range []bool{false, true} {
		for _, g := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("sync=%t/goroutines=%d", syncWrites, g), func(b *testing.B) {
				ctx := context.Background()
				st, err := badger.OpenStore(b.TempDir(), badger.Options{SyncWrites: syncWrites})
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				pop := newTimers(time.Now())
				s, err := New(Config{Store: st, Plugins: timerFakes(pop.at), Deliver: &recordingDeliverer{st: st}, Recipients: st})
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range pop.recipients { // the recipients exist: registration reads them
					if _, err := st.EnsureRecipient(ctx, r.ID, pop.now); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				parallel(b, g, func(i int) error {
					_, err := s.Register(ctx, Registration{Kind: "timer", Params: pop.params, Recipient: pop.recipients[i%len(pop.recipients)]})
					return err
				})
				if s.Pending() != b.N {
					b.Fatalf("%d pending after %d registrations", s.Pending(), b.N)
				}
			})
		}
	}
}

// parallel times f(0) … f(b.N-1) on g goroutines and reports rows/s.
func parallel(b *testing.B, g int, f func(i int) error) {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, g)
	b.ResetTimer()
	for range g {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
