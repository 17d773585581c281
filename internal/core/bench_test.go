package core

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
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

	"github.com/nats-io/nats-server/v2/server"

	"github.com/vigilhq/vigil/internal/delivery"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/lifecycle"
	"github.com/vigilhq/vigil/internal/natstest"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
	"github.com/vigilhq/vigil/store/natsstore"
	"github.com/vigilhq/vigil/store/storecopy"
)

// The node benchmarks run one vigil node (this package's Core, as serve
// composes it below the plugin runtime and the API) on each backend in
// turn: badger with fsync on (group commit, serve's default), natsstore
// on one embedded JetStream server (R1), and on three routed on
// loopback (R3, skipped under -short). The kinds are fakes, so the
// figures are the node's and its store's, not a plugin's.

// benchBackend is one backend the node benchmarks run on: servers
// started once for all its cases, and a new store (its own bucket) for
// each case.
type benchBackend struct {
	name     string
	replicas int // 0: badger
	urls     []string
}

func benchBackends(b *testing.B, fn func(b *testing.B, be *benchBackend)) {
	for _, be := range []*benchBackend{{name: "badger"}, {name: "nats-R1", replicas: 1}, {name: "nats-R3", replicas: 3}} {
		b.Run("store="+be.name, func(b *testing.B) {
			switch be.replicas {
			case 1:
				be.urls = clientURLs([]*server.Server{natstest.Start(b)})
			case 3:
				if testing.Short() {
					b.Skip("three JetStream servers")
				}
				be.urls = clientURLs(natstest.Cluster(b, 3))
			}
			fn(b, be)
		})
	}
}

// fakeBenchKind is a test kind: "now" settles (fired) at its first probe,
// "hold" stays pending.
type fakeBenchKind struct{ name string }

func (k fakeBenchKind) Info() kind.Info { return kind.Info{Kind: k.name} }
func (k fakeBenchKind) Admit(context.Context, kind.AdmitRequest) (kind.Admission, error) {
	return kind.Admission{}, nil
}
func (k fakeBenchKind) Observe(context.Context, abi.ObserveRequest) (kind.Observation, error) {
	if k.name == "now" {
		return kind.Observation{Status: abi.StatusSettled, Outcome: &abi.Outcome{Result: "fired"}}, nil
	}
	return kind.Observation{Status: abi.StatusPending}, nil
}

// countingDeliverer counts the settlements the node commits, and closes
// done when the count reaches want.
type countingDeliverer struct {
	*delivery.Delivery
	n    atomic.Int64
	want int64
	done chan struct{}
}

func (d *countingDeliverer) Settle(ctx context.Context, id store.ID, st store.Settlement, m store.Message) (store.Watch, error) {
	w, err := d.Delivery.Settle(ctx, id, st, m)
	if err == nil && d.n.Add(1) == d.want {
		close(d.done)
	}
	return w, err
}

// benchNode is one node on a backend, built, its store new (or given).
type benchNode struct {
	core    *Core
	deliver *countingDeliverer
	ctx     context.Context
	cancel  context.CancelFunc
	joined  func() error // stops the outbox and the node (runJoined)
	loop    func() error // stops the scheduler's loop
}

// newBucketName is a bucket of its own for one case, on servers the
// cases share.
func newBucketName() string { return fmt.Sprintf("bench%x", rand.Uint64()) }

// newBenchNode builds a node over be: badger in dir (a new one when
// empty), or a new bucket (bucket "" makes one) on be's servers, joined
// and holding every partition. Its scheduler's loop is not started; on
// one host, neither is its outbox.
func newBenchNode(b testing.TB, be *benchBackend, dir, bucket string, wantFires int) *benchNode {
	return newBenchNodeThen(b, be, dir, bucket, wantFires, func() {})
}

// newBenchNodeThen is newBenchNode calling opened once the store is open,
// before the node arms any watch.
func newBenchNodeThen(b testing.TB, be *benchBackend, dir, bucket string, wantFires int, opened func()) *benchNode {
	b.Helper()
	reg := kind.NewRegistry()
	for _, k := range []string{"now", "hold"} {
		if err := reg.Register("test", fakeBenchKind{name: k}); err != nil {
			b.Fatal(err)
		}
	}
	n := &benchNode{deliver: &countingDeliverer{want: int64(wantFires), done: make(chan struct{})}}
	cfg := Config{Kinds: reg, Deliver: func(d *delivery.Delivery, _ *store.Store) scheduler.Deliverer {
		n.deliver.Delivery = d
		return n.deliver
	}}
	if be.replicas == 0 {
		if dir == "" {
			dir = b.TempDir()
		}
		cfg.StoreDir, cfg.Store = dir, badger.Options{SyncWrites: true}
	} else {
		if bucket == "" {
			bucket = newBucketName()
		}
		urls := be.urls
		cfg.Cluster = &Cluster{
			Open: func(ctx context.Context) (ClusterStore, error) {
				return natsstore.Open(ctx, natsstore.Config{URLs: urls, Replicas: be.replicas, Bucket: bucket})
			},
			Node: "node-" + bucket, LeaseTTL: 10 * time.Second,
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	c, err := New(ctx, cfg)
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	n.core, n.ctx, n.cancel = c, ctx, cancel
	b.Cleanup(n.stop)
	opened()
	if _, err := c.Prime(ctx); err != nil {
		b.Fatal(err)
	}
	if c.Clustered() {
		if err = c.Join(ctx, Join{Addr: "127.0.0.1:0", Plugins: "digest"}); err != nil {
			b.Fatal(err)
		}
		n.joined = runJoined(ctx, c)
		natstest.WaitFor(b, within, "the node holding every partition", func() bool {
			for p := range c.cluster.adapter.Partitions() {
				if !c.cluster.own.Holds(p) { // leased and fenced: the scheduler's
					return false
				}
			}
			return true
		})
	}
	return n
}

func clientURLs(servers []*server.Server) []string {
	var urls []string
	for _, s := range servers {
		urls = append(urls, s.ClientURL())
	}
	return urls
}

// start runs the scheduler's loop (on one host, with the outbox, as Run
// does; a cluster node's outbox runs since it joined).
func (n *benchNode) start() {
	if n.core.Clustered() {
		n.loop = lifecycle.Go(n.ctx, n.core.Scheduler.Run)
		return
	}
	n.loop = lifecycle.Go(n.ctx, n.core.Run)
}

func (n *benchNode) stop() {
	if n.cancel == nil {
		return
	}
	n.cancel()
	if n.loop != nil {
		_ = n.loop()
	}
	if n.joined != nil {
		_ = n.joined()
	}
	_ = n.core.Close()
	n.cancel = nil
}

// benchRecipients is how many recipients the registrations spread over:
// a recipient's commits contend on its record on JetStream, as on any
// store a recipient's pending count does.
const benchRecipients = 256

// registerCallers is the registering goroutines per core, as many
// connections would be: on JetStream each commit is a round trip.
const registerCallers = 8

// recipients makes the benchmark's recipients, running.
func (n *benchNode) recipients(b *testing.B) {
	b.Helper()
	for i := range benchRecipients {
		if _, err := n.core.Store.EnsureRecipient(context.Background(), "r"+strconv.Itoa(i), time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNode is registrations and fires per second through one node
// on each backend, side by side in one run (docs/BENCHMARKS.md, "The
// cluster"):
//   - register: Scheduler.Register as the API calls it (the recipient's
//     check, admit, an id, the row committed fenced on its recipient,
//     armed), from 16 goroutines over 256 recipients, the loop stopped;
//   - fire: b.N watches due now, registered first, then the loop started
//     and timed until every one is settled with its mailbox message
//     (read the row, settle and mail in one commit), the scheduler's
//     default 4 workers.
func BenchmarkNode(b *testing.B) {
	benchBackends(b, func(b *testing.B, be *benchBackend) {
		b.Run("op=register", func(b *testing.B) {
			n := newBenchNode(b, be, "", "", 0)
			n.recipients(b)
			every := time.Hour
			var next atomic.Int64
			lat := make([]time.Duration, b.N)
			b.SetParallelism(registerCallers)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := next.Add(1) - 1
					start := time.Now()
					if _, err := n.core.Scheduler.Register(context.Background(), scheduler.Registration{
						Kind: "hold", Recipient: store.Recipient{ID: "r" + strconv.Itoa(int(i%benchRecipients))}, Every: &every}); err != nil {
						b.Error(err)
						return
					}
					lat[i] = time.Since(start)
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "regs/s")
			reportLatency(b, lat)
		})
		b.Run("op=fire", func(b *testing.B) {
			n := newBenchNode(b, be, "", "", b.N)
			n.recipients(b)
			// The due watches, registered from 16 goroutines, untimed.
			every := time.Second
			var wg sync.WaitGroup
			var next atomic.Int64
			for range 2 * registerCallers {
				wg.Go(func() {
					for i := next.Add(1) - 1; i < int64(b.N); i = next.Add(1) - 1 {
						if _, err := n.core.Scheduler.Register(context.Background(), scheduler.Registration{
							Kind: "now", Recipient: store.Recipient{ID: "r" + strconv.Itoa(int(i%benchRecipients))}, Every: &every}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			if n.core.Scheduler.Pending() < b.N {
				b.Fatalf("%d of %d watches armed", n.core.Scheduler.Pending(), b.N)
			}
			b.ResetTimer()
			n.start()
			select {
			case <-n.deliver.done:
			case <-time.After(10 * time.Minute):
				b.Fatalf("%d of %d fired in 10 minutes", n.deliver.n.Load(), b.N)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "fires/s")
		})
	})
}

// reportLatency reports the p50 and p99 of lat in milliseconds.
func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	if len(lat) == 0 {
		return
	}
	b.ReportMetric(float64(lat[len(lat)/2])/1e6, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100])/1e6, "p99-ms")
}

// benchSize is a positive integer from the environment, or def.
func benchSize(b *testing.B, name string, def int) int {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// BenchmarkNodeMemory is what a node holds per pending watch, on each
// backend: VIGIL_BENCH_NODE_PENDING (100,000) pending rows on badger and
// VIGIL_BENCH_NODE_PENDING_NATS (20,000) in a JetStream bucket, written
// first (badger directly; JetStream copied from a badger store, as
// `vigil store copy` does, since R1 commits a few hundred registrations a
// second), then a node built over them in a new process
// (TestNodeMemoryChild), primed (badger) or joined and holding every
// partition (JetStream). node-heap is the Go heap in use after a
// collection once the node has armed them, minus once its store was
// open, over the count: the scheduler's entries and what the store
// client keeps (badger's block and index caches, warmed by the read,
// included); node-rss the same of the resident set; store-open the heap
// the open store took before any watch. Beside them, the store's bytes
// per watch (badger's tables after a close; the bucket's stream bytes
// and records) and, on JetStream, the heap the embedded servers took for
// the rows (in this process: what JetStream holds in memory per watch,
// summed over the servers).
func BenchmarkNodeMemory(b *testing.B) {
	benchBackends(b, func(b *testing.B, be *benchBackend) {
		count := benchSize(b, "VIGIL_BENCH_NODE_PENDING", 100_000)
		if be.replicas > 0 {
			count = benchSize(b, "VIGIL_BENCH_NODE_PENDING_NATS", 20_000)
		}
		// ResetTimer (b.Loop's first call) deletes reported metrics:
		// they are kept here and reported at the end.
		got := map[string]float64{}
		report := func(v float64, unit string) { got[unit] = v }
		{
			ctx := context.Background()
			dir := b.TempDir()
			fillPending(b, dir, count)
			bucket := ""
			before := liveHeap()
			if be.replicas == 0 {
				report(float64(tableBytes(b, dir))/float64(count), "disk-B/watch")
			} else {
				bucket = newBucketName()
				ad, err := natsstore.Open(ctx, natsstore.Config{URLs: be.urls, Replicas: be.replicas, Bucket: bucket})
				if err != nil {
					b.Fatal(err)
				}
				dst, err := store.New(ctx, ad)
				if err != nil {
					b.Fatal(err)
				}
				src, err := badger.OpenStore(dir, badger.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := storecopy.Copy(ctx, src, dst, storecopy.Options{}); err != nil {
					b.Fatal(err)
				}
				_ = src.Close()
				stream, err := ad.JetStream().Stream(ctx, "KV_"+bucket)
				if err != nil {
					b.Fatal(err)
				}
				info, err := stream.Info(ctx)
				if err != nil {
					b.Fatal(err)
				}
				_ = dst.Close()
				report(float64(info.State.Bytes)/float64(count), "stream-B/watch")
				report(float64(info.State.Msgs)/float64(count), "records/watch")
				report((liveHeap()-before)/float64(count), "server-heap-B/watch")
				dir = ""
			}
			res := runNodeChild(b, nodeChild{Replicas: be.replicas, URLs: be.urls, Dir: dir, Bucket: bucket, Count: count})
			for unit, v := range res {
				report(v, unit)
			}
		}
		// Measured once, whatever -benchtime asks (b.Loop runs this
		// function once and times nothing here).
		for b.Loop() {
		}
		for unit, v := range got {
			b.ReportMetric(v, unit)
		}
	})
}

// nodeChild is what TestNodeMemoryChild is to measure, from its
// environment (childEnv, as JSON).
type nodeChild struct {
	Replicas int
	URLs     []string
	Dir      string // badger's
	Bucket   string // JetStream's
	Count    int
}

const (
	childEnv    = "VIGIL_BENCH_NODE_CHILD"
	childResult = "NODE-CHILD-RESULT "
)

// runNodeChild measures a node in a new process (TestNodeMemoryChild):
// in this one the embedded servers share the heap, and their own
// allocations during the node's arming swamp the node's.
func runNodeChild(b *testing.B, c nodeChild) map[string]float64 {
	b.Helper()
	spec, err := json.Marshal(c)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNodeMemoryChild$", "-test.count=1", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		b.Fatalf("node child %s: %v\n%s", spec, err, out.Bytes())
	}
	for line := range strings.Lines(out.String()) {
		if v, ok := strings.CutPrefix(line, childResult); ok {
			var res map[string]float64
			if err := json.Unmarshal([]byte(v), &res); err != nil {
				b.Fatal(err)
			}
			return res
		}
	}
	b.Fatalf("node child %s printed no result:\n%s", spec, out.Bytes())
	return nil
}

// TestNodeMemoryChild is not a test: it is BenchmarkNodeMemory's child
// process, and skips unless the benchmark started it. It builds a node
// over the pending watches the benchmark wrote, primed or joined, and
// prints the heap and RSS it took to arm them, per watch, as one JSON
// line.
func TestNodeMemoryChild(t *testing.T) {
	spec := os.Getenv(childEnv)
	if spec == "" {
		t.Skip("BenchmarkNodeMemory's child process; it runs only under -bench")
	}
	var c nodeChild
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		t.Fatal(err)
	}
	start := liveHeap()
	var opened, openRSS float64
	be := &benchBackend{replicas: c.Replicas, urls: c.URLs}
	n := newBenchNodeThen(t, be, c.Dir, c.Bucket, 0, func() { opened, openRSS = liveHeap(), rss(t) })
	if c.Replicas > 0 {
		natstest.WaitFor(t, 5*time.Minute, "every watch armed", func() bool { return n.core.Scheduler.Pending() >= c.Count })
	}
	if got := n.core.Scheduler.Pending(); got != c.Count {
		t.Fatalf("%d of %d watches armed", got, c.Count)
	}
	if c.Replicas > 0 {
		// What the node holds once it has settled down: the one-node
		// cluster's pass over every recipient, run as it gains the job's
		// lease, holds what it reads while it runs.
		natstest.WaitFor(t, 5*time.Minute, "the pass over every recipient", func() bool { return n.core.cluster.reconciled.Load() > 0 })
	}
	armed, armedRSS := liveHeap(), rss(t)
	out, err := json.Marshal(map[string]float64{
		"node-heap-B/watch": (armed - opened) / float64(c.Count),
		"node-rss-B/watch":  (armedRSS - openRSS) / float64(c.Count),
		"store-open-MiB":    (opened - start) / (1 << 20),
	})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("%s%s\n", childResult, out)
}

// rss is the process's resident set in bytes, after returning what the
// heap can to the OS.
func rss(t testing.TB) float64 {
	debug.FreeOSMemory()
	raw, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(raw))
	pages, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatal(err)
	}
	return float64(pages * os.Getpagesize())
}

// fillPending writes count pending watches of kind "hold" over 64
// recipients into a new badger store in dir, unsynced, from 8
// goroutines, and closes it: each watch as its registration leaves it.
func fillPending(b *testing.B, dir string, count int) {
	b.Helper()
	ctx := context.Background()
	st, err := badger.OpenStore(dir, badger.Options{})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now().UTC()
	for i := range 64 {
		if _, _, err := st.PutRecipient(ctx, store.RecipientRecord{ID: "r" + strconv.Itoa(i), Status: store.StatusRunning, CreatedAt: now, UpdatedAt: now}); err != nil {
			b.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	var next atomic.Int64
	for g := range 8 {
		wg.Go(func() {
			ids := rand.NewChaCha8([32]byte{byte(g)})
			for i := next.Add(1) - 1; i < int64(count); i = next.Add(1) - 1 {
				id, err := store.NewID(now, ids)
				if err != nil {
					b.Error(err)
					return
				}
				exp := now.Add(2 * time.Hour)
				if err := st.Create(ctx, store.Watch{
					ID: id, Kind: "hold", Params: json.RawMessage(`{}`),
					Recipient: store.Recipient{ID: "r" + strconv.Itoa(int(i%64))}, State: store.Pending, Receipt: store.ReceiptNone,
					Every: store.Duration(time.Hour), CreatedAt: now, ExpiresAt: &exp,
				}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
}

// tableBytes is the size of badger's tables in dir.
func tableBytes(b *testing.B, dir string) int64 {
	b.Helper()
	ssts, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, p := range ssts {
		fi, err := os.Stat(p)
		if err != nil {
			b.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// liveHeap is the bytes of live heap objects after two collections.
func liveHeap() float64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return float64(s[0].Value.Uint64())
}
