package httpapi

// Benchmarks of the API on a real listener: the fiber server on
// 127.0.0.1, a badger store in a temporary directory (SyncWrites off
// unless a case says fsync=group or fsync=each), the scheduler, delivery
// and recipients service as vigil serve builds them.
// Run with
//
//	go test -run XXX -bench . -benchmem ./internal/httpapi/
//
// BenchmarkRegisterHTTP is POST /api/v1/watches from a load generator in
// this process: c goroutines, each with a keep-alive connection of one
// shared http.Transport. One op is one registration (201); regs/s is the
// throughput, p50-us and p99-us the latency of one request as the client
// sees it. The plugin side is a fake that admits at once (plugins=fake)
// or the real runtime over the bundled timer plugin (plugins=wasm). With
// loop=on the scheduler's loop runs as in the product, so each new watch
// is also probed once at once (probes/s); with loop=off only the
// registration path runs. fsync is the store's durability: off
// (--fsync=false), group (SyncWrites with group commit: serve's default)
// or each (badger's own SyncWrites, one fsync per commit: the --fsync of
// before group commit).
//
// BenchmarkRegisterWrk is the same through wrk(1), when it is on the PATH
// (Debian: apt-get install wrk): one wrk thread, c connections, for
// VIGIL_BENCH_WRK (default 3s).
//
// BenchmarkRegisterBesidePending is BenchmarkRegisterHTTP's serve-like
// case on an empty store and beside VIGIL_BENCH_REGISTER_PENDING pending
// watches beyond the window (default 1,000,000).
//
// BenchmarkAdmit is the plugin side of a registration alone: Admit on the
// fake and on the real runtime.
//
// BenchmarkListByRecipient is GET /api/v1/watches?recipient=r<X> for random
// X, and store.List of the same, over a store of VIGIL_BENCH_ROWS pending
// rows (default 1000000), 10 per recipient, filled by store.Create from 8
// goroutines (fill-rows/s).
//
// BenchmarkIdleLongPolls (idle_bench_test.go) is the memory of parked
// long-poll readers.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/benchtest"
	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/internal/delivery"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/lifecycle"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/internal/recipients"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/internal/wasmbuild"
	"github.com/vigilhq/vigil/plugins"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

// benchPlugins is the plugin runtime as the whole host uses it.
type benchPlugins interface {
	scheduler.Kinds
	Plugins
	Infos() []kind.Info
}

// wasmHost is the real runtime with its kinds in a registry, as serve
// wires them: the scheduler's calls go through the registry, the plugin
// routes' to the runtime.
type wasmHost struct {
	*kind.Registry
	rt *plugin.Runtime
}

func (h wasmHost) Plugins() []kind.Info                              { return h.rt.Plugins() }
func (h wasmHost) Problems() []*plugin.LoadError                     { return h.rt.Problems() }
func (h wasmHost) Reload(ctx context.Context) (plugin.Report, error) { return h.rt.Reload(ctx) }
func (h wasmHost) Close(ctx context.Context) error                   { return h.rt.Close(ctx) }

// timerFake answers like the bundled timer without wasm: admitted at once
// with the deadline at + 1 min, pending with the next check at at.
type timerFake struct{}

var timerFakeInfo = kind.Info{Kind: "timer", DefaultEvery: time.Minute, Observable: true}

func (timerFake) Infos() []kind.Info { return []kind.Info{timerFakeInfo} }

func (timerFake) Lookup(kind string) (kind.Info, bool) {
	return timerFakeInfo, kind == "timer"
}

func (timerFake) Admit(_ context.Context, kindName string, req kind.AdmitRequest) (kind.Admission, error) {
	if kindName != "timer" {
		return kind.Admission{}, &api.Error{Code: api.CodeWatchUnobservable, Message: "no plugin serves " + kindName}
	}
	var p struct {
		At time.Time `json:"at"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil || p.At.IsZero() {
		return kind.Admission{}, &api.Error{Code: api.CodeInvalidParams, Field: "params.at", Message: "required"}
	}
	return kind.Admission{Deadline: p.At.Add(time.Minute)}, nil
}

func (timerFake) Observe(_ context.Context, req abi.ObserveRequest) (kind.Observation, error) {
	return kind.Observation{Status: abi.StatusPending, Note: "not yet", NextCheck: req.Now.Add(time.Hour)}, nil
}

func (timerFake) Plugins() []kind.Info                 { return []kind.Info{timerFakeInfo} }
func (timerFake) Problems() []*plugin.LoadError        { return nil }
func (timerFake) Settled(context.Context, store.Watch) {}
func (f timerFake) Reload(context.Context) (plugin.Report, error) {
	return plugin.Report{Loaded: f.Plugins()}, nil
}

// wasmRuntime starts the real plugin runtime over the bundled set, on the
// tests' compilation cache (as internal/plugin's tests do). The caller closes
// it.
func wasmRuntime() (wasmHost, error) {
	reg := kind.NewRegistry()
	rt, err := plugin.New(context.Background(), plugin.Config{Bundled: plugins.Bundled(), CacheDir: wasmbuild.CacheDir(), Kinds: reg})
	return wasmHost{reg, rt}, err
}

// probeCount counts the scheduler's probes.
type probeCount struct{ n atomic.Int64 }

func (p *probeCount) Probe(string, string)      { p.n.Add(1) }
func (p *probeCount) Lag(string, time.Duration) {}
func (p *probeCount) Ready(int)                 {}

// benchServer is a host on a loopback listener.
type benchServer struct {
	url    string
	st     *store.Store
	sched  *scheduler.Scheduler
	del    *delivery.Delivery
	probes *probeCount
	// wake cancels the server's base context: parked long polls return,
	// as on shutdown.
	wake context.CancelFunc
	app  *fiber.App
	// stop shuts the server and the loop down; the benchmark's cleanup
	// calls it too. It leaves the store open.
	stop func()
}

type serverOpts struct {
	loop bool
	// mailboxes wraps the delivery as the API's Mailboxes, when set.
	mailboxes func(Mailboxes) Mailboxes
}

// startServer builds the host over st and pl and serves it on
// 127.0.0.1:0 until the benchmark ends.
func startServer(b *testing.B, st *store.Store, pl benchPlugins, o serverOpts) *benchServer {
	b.Helper()
	del, err := delivery.New(delivery.Config{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	probes := &probeCount{}
	sched, err := scheduler.New(scheduler.Config{Store: st, Plugins: pl, Deliver: del, Recipients: st, Metrics: probes})
	if err != nil {
		b.Fatal(err)
	}
	ctx, stopLoop := context.WithCancel(context.Background())
	loop := func() error { return nil }
	if o.loop {
		// As vigil serve: prime, then run the loop.
		if _, err := sched.Prime(ctx); err != nil {
			b.Fatal(err)
		}
		loop = lifecycle.Go(ctx, sched.Run)
	}
	var mb Mailboxes = del
	if o.mailboxes != nil {
		mb = o.mailboxes(del)
	}
	base, wake := context.WithCancel(context.Background())
	recips := recipients.New(st, sched, pl, clock.Wall{}, nil)
	app := New(Deps{Scheduler: sched, Watches: st, Mailboxes: mb, Recipients: recips, Plugins: pl, Base: base}, Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = app.Listener(ln)
	}()
	srv := &benchServer{url: "http://" + ln.Addr().String(), st: st, sched: sched, del: del, probes: probes, wake: wake, app: app}
	srv.stop = sync.OnceFunc(func() {
		wake()
		_ = app.ShutdownWithTimeout(5 * time.Second)
		<-served
		stopLoop()
		if o.loop {
			_ = loop()
		}
	})
	b.Cleanup(srv.stop)
	return srv
}

// openBenchStore opens a store in dir with the default options (fsync
// off); the benchmark's cleanup closes it (after the servers over it have
// stopped, when it is opened before them).
func openBenchStore(b *testing.B, dir string) *store.Store {
	b.Helper()
	return openBenchStoreWith(b, dir, badger.Options{})
}

func openBenchStoreWith(b *testing.B, dir string, opt badger.Options) *store.Store {
	b.Helper()
	st, err := badger.OpenStore(dir, opt)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	return st
}

// keepAlive is a client whose Transport keeps up to conns connections to
// the server open.
func keepAlive(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns,
		IdleConnTimeout: time.Minute, DisableCompression: true,
	}}
}

// ---- Registration ----

// registrations are timer watches an hour ahead over 64 recipients.
type registrations struct {
	at     string
	bodies [64][]byte
}

func newRegistrations() *registrations {
	r := &registrations{at: time.Now().UTC().Add(time.Hour).Truncate(time.Second).Format(time.RFC3339)}
	for i := range r.bodies {
		r.bodies[i] = fmt.Appendf(nil, `{"kind":"timer","params":{"at":%q},"recipient":{"id":"agent-%02d"}}`, r.at, i)
	}
	return r
}

func (r *registrations) post(client *http.Client, url string, i int) error {
	req, err := http.NewRequest(http.MethodPost, url+"/api/v1/watches", bytes.NewReader(r.bodies[i%len(r.bodies)]))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("POST /api/v1/watches: %d %s", resp.StatusCode, body)
	}
	return nil
}

// durability is one way the store acknowledges a commit.
type durability struct {
	name string
	opt  badger.Options
}

// durabilities are the three: not synced, group commit, a sync per
// commit.
func durabilities() []durability {
	return []durability{
		{"off", badger.Options{}},
		{"group", badger.Options{SyncWrites: true}},
		{"each", badger.Options{SyncWrites: true, SyncEachCommit: true}},
	}
}

// registerCases calls run for every plugin set × loop × durability ×
// connections case, with the real runtime started once for all of them.
func registerCases(b *testing.B, conns []int, run func(b *testing.B, pl benchPlugins, loop bool, opt badger.Options, c int)) {
	var rt *wasmHost
	for _, pls := range []string{"fake", "wasm"} {
		for _, loop := range []bool{false, true} {
			for _, d := range durabilities() {
				for _, c := range conns {
					name := fmt.Sprintf("plugins=%s/loop=%s/fsync=%s/conns=%d", pls, map[bool]string{false: "off", true: "on"}[loop], d.name, c)
					b.Run(name, func(b *testing.B) {
						var pl benchPlugins = timerFake{}
						if pls == "wasm" {
							if rt == nil {
								h, err := wasmRuntime()
								if err != nil {
									b.Fatal(err)
								}
								rt = &h
							}
							pl = *rt
						}
						run(b, pl, loop, d.opt, c)
					})
				}
			}
		}
	}
	if rt != nil {
		_ = rt.Close(context.Background())
	}
}

// BenchmarkRegisterHTTP is registration through HTTP with keep-alive; see
// the top of this file.
func BenchmarkRegisterHTTP(b *testing.B) {
	regs := newRegistrations()
	registerCases(b, []int{1, 8, 64}, func(b *testing.B, pl benchPlugins, loop bool, opt badger.Options, c int) {
		st := openBenchStoreWith(b, b.TempDir(), opt)
		srv := startServer(b, st, pl, serverOpts{loop: loop})
		client := keepAlive(c)
		defer client.CloseIdleConnections()
		// One request per connection first, so the timed part does not
		// open connections or create the recipients.
		var wg sync.WaitGroup
		for i := range c {
			wg.Go(func() {
				if err := regs.post(client, srv.url, i); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		probes0 := srv.probes.n.Load()
		b.ReportAllocs()
		ds := benchtest.Drive(b, c, func(i int) error { return regs.post(client, srv.url, i) })
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "regs/s")
		if loop {
			b.ReportMetric(float64(srv.probes.n.Load()-probes0)/b.Elapsed().Seconds(), "probes/s")
		}
		benchtest.Percentiles(b, ds, time.Microsecond, "us")
		// Counted in the store: the timers are due an hour on, beyond the
		// scheduler's window, so its memory holds none of them.
		counts, err := st.CountByState(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if got := counts[store.Pending]; got != b.N+c {
			b.Fatalf("%d pending after %d registrations", got, b.N+c)
		}
	})
}

// wrkScript posts timer registrations over 64 recipients and prints the
// figures on one line.
const wrkScript = `
local n = 0
request = function()
  n = n + 1
  local body = string.format('{"kind":"timer","params":{"at":"%s"},"recipient":{"id":"agent-%02d"}}', at, n % 64)
  return wrk.format("POST", "/api/v1/watches", {["Content-Type"] = "application/json"}, body)
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("VIGIL %d %d %d %d %d %d %d %d\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), e.connect + e.read + e.write + e.timeout, e.status,
    latency.mean, latency.max))
end
`

// BenchmarkRegisterWrk is registration driven by wrk; see the top of this
// file.
func BenchmarkRegisterWrk(b *testing.B) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		b.Skip("wrk is not on the PATH (Debian: apt-get install wrk)")
	}
	dur := 3 * time.Second
	if v := os.Getenv("VIGIL_BENCH_WRK"); v != "" {
		// wrk counts whole seconds, minutes or hours: "300ms" would be
		// 300 minutes to it.
		if dur, err = time.ParseDuration(v); err != nil || dur < time.Second || dur%time.Second != 0 {
			b.Fatalf("VIGIL_BENCH_WRK=%q: want a whole number of seconds, such as 3s", v)
		}
	}
	wrkDur := strconv.Itoa(int(dur/time.Second)) + "s"
	regs := newRegistrations()
	script := filepath.Join(b.TempDir(), "register.lua")
	if err := os.WriteFile(script, []byte(fmt.Sprintf("at = %q\n", regs.at)+wrkScript), 0o644); err != nil {
		b.Fatal(err)
	}
	registerCases(b, []int{8, 32, 64}, func(b *testing.B, pl benchPlugins, loop bool, opt badger.Options, c int) {
		var sum struct{ reqs, secs, p50, p99 float64 }
		for range b.N {
			st := openBenchStoreWith(b, b.TempDir(), opt)
			srv := startServer(b, st, pl, serverOpts{loop: loop})
			probes0 := srv.probes.n.Load()
			out, err := exec.Command(wrk, "-t1", "-c"+strconv.Itoa(c), "-d"+wrkDur, "-s", script, srv.url).CombinedOutput()
			if err != nil {
				b.Fatalf("wrk: %v\n%s", err, out)
			}
			probes := srv.probes.n.Load() - probes0
			var f [8]int64
			found := false
			for line := range strings.Lines(string(out)) {
				if v, ok := strings.CutPrefix(line, "VIGIL "); ok {
					for i, s := range strings.Fields(v) {
						f[i], _ = strconv.ParseInt(s, 10, 64)
					}
					found = true
				}
			}
			if !found || f[4] != 0 || f[5] != 0 {
				b.Fatalf("wrk: socket errors %d, non-2xx %d:\n%s", f[4], f[5], out)
			}
			sum.reqs += float64(f[0])
			sum.secs += float64(f[1]) / 1e6
			sum.p50 += float64(f[2])
			sum.p99 += float64(f[3])
			if loop {
				b.ReportMetric(float64(probes)/(float64(f[1])/1e6), "probes/s")
			}
			// Stopping is not part of the measurement, but with the loop
			// on it says what a shutdown costs with a probe backlog.
			b.StopTimer()
			t, p := time.Now(), srv.probes.n.Load()
			srv.stop()
			if loop {
				b.Logf("%d registrations, %d probed during the run; stopping took %s and %d more probes",
					f[0], probes, time.Since(t).Round(time.Millisecond), srv.probes.n.Load()-p)
			}
			b.StartTimer()
		}
		n := float64(b.N)
		b.ReportMetric(sum.reqs/sum.secs, "regs/s")
		b.ReportMetric(1e9*sum.secs/sum.reqs, "ns/op")
		b.ReportMetric(sum.p50/n, "p50-us")
		b.ReportMetric(sum.p99/n, "p99-us")
	})
}

// BenchmarkAdmit is the plugin side of one registration alone, the
// Admit a registration makes, without HTTP or the store: the fake and the
// real runtime over the bundled timer, from 1 goroutine and from 8 at
// once. It says how much of BenchmarkRegisterHTTP's plugins=wasm cost is
// the wasm admit.
func BenchmarkAdmit(b *testing.B) {
	params := json.RawMessage(`{"at":"` + time.Now().UTC().Add(time.Hour).Truncate(time.Second).Format(time.RFC3339) + `"}`)
	rt, err := wasmRuntime()
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(context.Background())
	for _, c := range []struct {
		name string
		pl   benchPlugins
	}{{"fake", timerFake{}}, {"wasm", rt}} {
		for _, g := range []int{1, 8} {
			b.Run(fmt.Sprintf("plugins=%s/g=%d", c.name, g), func(b *testing.B) {
				ctx := context.Background()
				b.ReportAllocs()
				ds := benchtest.Drive(b, g, func(int) error {
					_, err := c.pl.Admit(ctx, "timer", kind.AdmitRequest{Params: params})
					return err
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "admits/s")
				benchtest.Percentiles(b, ds, time.Microsecond, "us")
			})
		}
	}
}

// ---- List by recipient ----

func benchRows(b *testing.B) int {
	n := 1_000_000
	if v := os.Getenv("VIGIL_BENCH_ROWS"); v != "" {
		var err error
		if n, err = strconv.Atoi(strings.ReplaceAll(v, "_", "")); err != nil || n <= 0 {
			b.Fatalf("VIGIL_BENCH_ROWS=%q: want a positive integer", v)
		}
	}
	return n
}

// idReader is a seeded id source, one per writer.
type idReader struct{ r *rand.ChaCha8 }

func (s idReader) Read(p []byte) (int, error) { return s.r.Read(p) }

// fillRows writes n pending timer rows with store.Create from g
// goroutines, row i for recipient r<i mod recipients>, so each recipient's
// rows are spread over the whole fill.
func fillRows(st *store.Store, n, recipients, g int) error {
	ctx := context.Background()
	at := time.Now().UTC().Add(time.Hour).Truncate(time.Second)
	exp := at.Add(time.Minute)
	params := json.RawMessage(`{"at":"` + at.Format(time.RFC3339) + `"}`)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, g)
	for w := range g {
		wg.Go(func() {
			ids := idReader{rand.NewChaCha8([32]byte{byte(w), 'l', 'i', 's', 't'})}
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				now := time.Now().UTC()
				id, err := store.NewID(now, ids)
				if err == nil {
					err = st.Create(ctx, store.Watch{
						ID: id, Kind: "timer", Params: params, Recipient: store.Recipient{ID: "r" + strconv.Itoa(i%recipients)},
						State: store.Pending, Receipt: store.ReceiptNone, Every: store.Duration(time.Minute),
						CreatedAt: now, ExpiresAt: &exp,
					})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// BenchmarkListByRecipient lists one recipient's watches in a store of
// VIGIL_BENCH_ROWS rows, filled first by store.Create from 8 goroutines
// (the <when>/store cases report the rows and the fill's rows/s); see the
// top of this file.
//
//	<when>/store         store.List(Filter{Recipient}) directly
//	<when>/http/conns=c  GET /api/v1/watches?recipient=… through the
//	                     server, c clients at once (keep-alive)
//
// when is live (right after the fill, compactions may still run) or
// reopened (the store closed and opened again, as after a restart).
func BenchmarkListByRecipient(b *testing.B) {
	n := benchRows(b)
	perRecipient := 10
	recips := max(n/perRecipient, 1)
	dir := b.TempDir()
	st, err := badger.OpenStore(dir, badger.Options{}) // closed before the reopen
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := fillRows(st, n, recips, 8); err != nil {
		b.Fatal(err)
	}
	fill := time.Since(start)
	b.Logf("filled %d rows over %d recipients in %s (%.0f rows/s)", n, recips, fill.Round(time.Millisecond), float64(n)/fill.Seconds())
	want := n / recips // every recipient has at least this many
	measure := func(when string) {
		r := rand.New(rand.NewPCG(7, uint64(len(when))))
		b.Run(when+"/store", func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			ds := benchtest.Drive(b, 1, func(int) error {
				rid := "r" + strconv.Itoa(r.IntN(recips))
				ws, _, err := st.List(ctx, store.Filter{Recipient: rid})
				if err == nil && len(ws) < want {
					err = fmt.Errorf("%s: %d watches, want %d", rid, len(ws), want)
				}
				return err
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lists/s")
			benchtest.Percentiles(b, ds, time.Microsecond, "us")
			b.ReportMetric(float64(n), "rows")
			b.ReportMetric(float64(n)/fill.Seconds(), "fill-rows/s")
		})
		for _, c := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/http/conns=%d", when, c), func(b *testing.B) {
				srv := startServer(b, st, timerFake{}, serverOpts{})
				client := keepAlive(c)
				defer client.CloseIdleConnections()
				var mu sync.Mutex
				pick := func() string {
					mu.Lock()
					defer mu.Unlock()
					return "r" + strconv.Itoa(r.IntN(recips))
				}
				b.ReportAllocs()
				ds := benchtest.Drive(b, c, func(int) error {
					rid := pick()
					resp, err := client.Get(srv.url + "/api/v1/watches?recipient=" + rid)
					if err != nil {
						return err
					}
					var list api.WatchList
					err = json.NewDecoder(resp.Body).Decode(&list)
					_ = resp.Body.Close()
					if err == nil && (resp.StatusCode != http.StatusOK || len(list.Watches) < want) {
						err = fmt.Errorf("%s: %d, %d watches, want %d", rid, resp.StatusCode, len(list.Watches), want)
					}
					return err
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lists/s")
				benchtest.Percentiles(b, ds, time.Microsecond, "us")
			})
		}
	}
	measure("live")
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	st = openBenchStore(b, dir)
	measure("reopened")
}

// BenchmarkRegisterBesidePending is BenchmarkRegisterHTTP's case of
// serve's defaults (the fake plugins, the loop on, group commit, 64
// connections) on an empty store and on one already holding
// VIGIL_BENCH_REGISTER_PENDING pending timers (default 1,000,000) of
// 1,000 other recipients, due an hour to 7 days on: beyond the window,
// so in the due index only. The store is filled by store.CreateMany,
// untimed (fill_s), and the timing starts once badger's compaction of
// it has settled (its table files unchanged for 5 s); both sizes run in one run, the empty one first and
// last (pending=0, pending=N, pending=0/again), so a drift of the
// machine's load shows. Run it with enough registrations that badger
// writes tables for the empty store too (-benchtime 120000x: its three
// 16 MiB memtables hold about 40,000): fewer measure the empty store's
// memtable against the full store's compactions. tables_MiB is what
// badger wrote to table files while the registrations ran (flushes and
// compactions).
func BenchmarkRegisterBesidePending(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("VIGIL_BENCH_REGISTER_PENDING"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 0 {
			b.Fatalf("VIGIL_BENCH_REGISTER_PENDING=%q: want a count", v)
		}
	}
	regs := newRegistrations()
	const c = 64
	for _, size := range []struct {
		name string
		n    int
	}{{"pending=0", 0}, {fmt.Sprintf("pending=%d", n), n}, {"pending=0/again", 0}} {
		b.Run(size.name, func(b *testing.B) {
			dir := b.TempDir()
			st := openBenchStoreWith(b, dir, badger.Options{SyncWrites: true})
			t0 := time.Now()
			if err := fillBeyond(st, size.n); err != nil {
				b.Fatal(err)
			}
			fill := time.Since(t0)
			// badger compacts the fill's tables in the background: timed
			// while it does, the registrations would measure that.
			benchtest.WaitTables(b, dir)
			srv := startServer(b, st, timerFake{}, serverOpts{loop: true})
			client := keepAlive(c)
			defer client.CloseIdleConnections()
			var wg sync.WaitGroup
			for i := range c {
				wg.Go(func() {
					if err := regs.post(client, srv.url, i); err != nil {
						b.Error(err)
					}
				})
			}
			wg.Wait()
			b.ReportAllocs()
			before := benchtest.TableFiles(b, dir)
			ds := benchtest.Drive(b, c, func(i int) error { return regs.post(client, srv.url, i) })
			var written int64
			for name, size := range benchtest.TableFiles(b, dir) {
				if _, ok := before[name]; !ok {
					written += size
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "regs/s")
			benchtest.Percentiles(b, ds, time.Microsecond, "us")
			b.ReportMetric(fill.Seconds(), "fill_s")
			b.ReportMetric(float64(written)/(1<<20), "tables_MiB")
		})
	}
}

// fillBeyond writes n pending timers of 1,000 recipients, due an hour to
// 7 days on, many to a commit. It first marks the store as one this
// build has served since it was new (the retention's once-in-a-store's-
// life backstop run on the empty store, as a first start does), so the
// server started on it runs no start-up scan of the rows.
func fillBeyond(st *store.Store, n int) error {
	ctx := context.Background()
	now := time.Now().UTC()
	if _, err := st.PruneUnindexed(ctx, now); err != nil {
		return err
	}
	ids := rand.NewChaCha8([32]byte{'b', 'e', 'y', 'o', 'n', 'd'})
	const batch = 20_000
	ws := make([]store.Watch, 0, batch)
	for i := range n {
		id, err := store.NewID(now, ids)
		if err != nil {
			return err
		}
		at := now.Add(time.Hour + time.Duration(int64(7*24*time.Hour)/int64(n)*int64(i))).Truncate(time.Second)
		exp := at.Add(time.Minute)
		ws = append(ws, store.Watch{
			ID: id, Kind: "timer", Params: json.RawMessage(`{"at":"` + at.Format(time.RFC3339) + `"}`),
			Recipient: store.Recipient{ID: fmt.Sprintf("filler-%04d", i%1000)}, State: store.Pending, Receipt: store.ReceiptNone,
			Every: store.Duration(time.Minute), CreatedAt: now, ExpiresAt: &exp, NextCheck: at,
		})
		if len(ws) == batch || i == n-1 {
			if err := st.CreateMany(ctx, ws); err != nil {
				return err
			}
			ws = ws[:0]
		}
	}
	return nil
}
