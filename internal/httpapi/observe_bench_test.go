package httpapi

// Benchmarks of observe over HTTP, on the host of bench_test.go plus the
// observer: the fiber server on 127.0.0.1, a badger store in a temporary
// directory with the default options, the scheduler's loop (Prime, Start)
// and the observer's router (Observer.Run) on the wall clock, as vigil
// serve runs them. Run with
//
//	go test -run XXX -bench Observe -benchmem ./internal/httpapi/
//
// BenchmarkObserveRecordHTTP is POST /api/v1/scopes/support/observe from c
// goroutines, each with a keep-alive connection of one shared
// http.Transport (every connection opened before the clock starts). One op
// is one record; items/s is the throughput, p50-us and p99-us the latency
// of one request as the client sees it. Cases:
//
//	items=new        distinct items, four to a thread (201 each)
//	items=duplicate  exact repeats of 1024 items recorded before the clock
//	                 starts (200, "duplicate": true): the de-duplication
//	                 check through HTTP
//	router=on        the router turns the items into Work beside the
//	                 requests; routed/s is how many it routed while the
//	                 clock ran (below items/s: it fell behind)
//	router=off       recording only
//	limiter=off      observe Options Rate and RunPerMinute -1: no budget
//	limiter=default  the documented defaults (100 items/s, burst 200 per
//	                 principal; 1000 new items a minute per run), with
//	                 requests spread over 256 principals so no request is
//	                 refused (a 429 fails the benchmark)
//	principals=N     N=0: no tokens (every request is the local principal);
//	                 else N bearer tokens, request i sent with token i mod N
//
// BenchmarkObserveWakeHTTP is the time from POSTing a follow-up item of a
// claimed Work's thread to the parked observe.thread watch's message being
// readable in the mailbox (Delivery.Read after the cursor, limit 1,
// waiting). Each op: (untimed) register the next wait and wait until its
// registration probe has parked it; (timed) POST the item, then the read.
// p50-us and p99-us are that time, p50-post-us and p99-post-us the POST
// alone. Each Work serves 100 waits, then the next op moves to a new one
// (all opened and claimed before the clock starts). load=N records N other
// items a second beside it the whole time, each on a thread of its own,
// from 4 more keep-alive clients (paced every 10 ms; load-items/s is the
// rate reached): the router routes them in order with the follow-ups, and
// each starts a Work. The in-process version, with the time split into
// stages, is BenchmarkThreadWake in internal/observe.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/authz"
	"github.com/vigilhq/vigil/internal/authztest"
	"github.com/vigilhq/vigil/internal/benchtest"
	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/internal/delivery"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/lifecycle"
	"github.com/vigilhq/vigil/internal/observe"
	"github.com/vigilhq/vigil/internal/recipients"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/store"
)

// observeBenchText is an item's text: a short chat message.
const observeBenchText = "printer on fire in room 4\\nsince 9am; the queue is stuck and jobs pile up"

type observeServerOpts struct {
	// rate is the observe Options Rate (0: the default budgets; -1: none,
	// RunPerMinute -1 too).
	rate float64
	// principals is how many bearer tokens (0: none, the local principal).
	principals int
	router     bool
}

// observeServer is the host with an observer on a loopback listener.
type observeServer struct {
	url    string
	st     *store.Store
	sched  *scheduler.Scheduler
	del    *delivery.Delivery
	ob     *observe.Observer
	tokens []string // tokens[i] authenticates principal p<i>
}

func startObserveServer(b *testing.B, o observeServerOpts) *observeServer {
	b.Helper()
	st := openBenchStore(b, b.TempDir())
	del, err := delivery.New(delivery.Config{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	srv := &observeServer{st: st, del: del}
	reporters := []string{kind.LocalPrincipal}
	var tokens map[string]string
	if o.principals > 0 {
		tokens = map[string]string{}
		for i := range o.principals {
			p := fmt.Sprintf("p%03d", i)
			tok := fmt.Sprintf("token-of-%s-0123456789abcdef", p)
			tokens[tok] = p
			srv.tokens = append(srv.tokens, tok)
			reporters = append(reporters, p)
		}
	}
	cfg := observe.Config{Scopes: map[string]observe.Scope{"support": {
		Observe: []observe.Entry{{Sources: []observe.Source{{Name: "slack-help", Reporters: reporters}}}},
		Routes:  []observe.Route{{Source: "slack-help"}},
	}}}
	oo := observe.Options{Store: st, Clock: clock.Wall{}, Rate: o.rate, Principal: store.ValidRecipientID}
	if o.rate < 0 {
		oo.RunPerMinute = -1
	}
	ob, err := observe.New(oo, cfg)
	if err != nil {
		b.Fatal(err)
	}
	kinds := kind.NewRegistry()
	timer, _ := kind.Of(kindsAsMulti{timerFake{}}, "timer")
	if err := errors.Join(kinds.Register("plugins", timer), ob.Register(kinds)); err != nil {
		b.Fatal(err)
	}
	sched, err := scheduler.New(scheduler.Config{Store: st, Plugins: kinds, Deliver: del, Recipients: st})
	if err != nil {
		b.Fatal(err)
	}
	ob.SetWaker(sched)
	srv.sched, srv.ob = sched, ob
	ctx, stopLoops := context.WithCancel(context.Background())
	if _, err := sched.Prime(ctx); err != nil {
		b.Fatal(err)
	}
	loop := lifecycle.Go(ctx, sched.Run)
	routed := func() error { return nil }
	if o.router {
		routed = lifecycle.Go(ctx, ob.Run)
	}
	base, wake := context.WithCancel(context.Background())
	recips := recipients.New(st, sched, kinds, clock.Wall{}, nil)
	app := New(Deps{Scheduler: sched, Watches: st, Mailboxes: del, Recipients: recips, Plugins: timerFake{}, Observe: ob, Base: base},
		Options{Auth: benchGuard(b, tokens)})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = app.Listener(ln)
	}()
	srv.url = "http://" + ln.Addr().String()
	// Registered after openBenchStore's cleanup, so it runs before the
	// store closes.
	b.Cleanup(func() {
		wake()
		_ = app.ShutdownWithTimeout(5 * time.Second)
		<-served
		stopLoops()
		_ = loop()
		if o.router {
			_ = routed()
		}
	})
	return srv
}

// observeBody is item prefix<i> of thread T<i/4>.
func observeBody(prefix string, i int) []byte {
	return fmt.Appendf(nil, `{"item":"%s%d","thread":"T%d","text":"%s"}`, prefix, i, i/4, observeBenchText)
}

// record POSTs body with the token of principal i (none without tokens)
// and checks the status.
func (s *observeServer) record(client *http.Client, i int, body []byte, want int) error {
	req, err := http.NewRequest(http.MethodPost, s.url+"/api/v1/scopes/support/observe", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if len(s.tokens) > 0 {
		req.Header.Set("Authorization", "Bearer "+s.tokens[i%len(s.tokens)])
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	got, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("POST observe %s: %d %s, want %d", body, resp.StatusCode, got, want)
	}
	return nil
}

// observeRouterCursor is the router's cursor in the store (the observe
// package's unexported routerCursor).
const observeRouterCursor = "observe.router"

// BenchmarkObserveRecordHTTP is recording through HTTP; see the top of
// this file.
func BenchmarkObserveRecordHTTP(b *testing.B) {
	const repeats = 1024
	type tc struct {
		items      string
		router     bool
		rate       float64
		principals int
		conns      int
	}
	cases := []tc{
		{"new", true, -1, 0, 1},
		{"new", true, -1, 0, 8},
		{"new", true, -1, 0, 32},
		{"new", false, -1, 0, 8},
		{"new", false, -1, 0, 32},
		{"new", true, -1, 256, 32},
		{"new", true, 0, 256, 32},
		{"duplicate", true, -1, 0, 1},
		{"duplicate", true, -1, 0, 8},
	}
	for _, c := range cases {
		limiter := map[bool]string{true: "off", false: "default"}[c.rate < 0]
		name := fmt.Sprintf("items=%s/router=%s/limiter=%s/principals=%d/conns=%d",
			c.items, map[bool]string{false: "off", true: "on"}[c.router], limiter, c.principals, c.conns)
		b.Run(name, func(b *testing.B) {
			srv := startObserveServer(b, observeServerOpts{rate: c.rate, principals: c.principals, router: c.router})
			client := keepAlive(c.conns)
			defer client.CloseIdleConnections()
			// One request per connection first, so the timed part opens no
			// connection; then the items the duplicate case repeats.
			var wg sync.WaitGroup
			for i := range c.conns {
				wg.Go(func() {
					if err := srv.record(client, i, observeBody("warm", i), http.StatusCreated); err != nil {
						b.Error(err)
					}
				})
			}
			wg.Wait()
			want := http.StatusCreated
			if c.items == "duplicate" {
				want = http.StatusOK
				for i := range repeats {
					if err := srv.record(client, i, observeBody("m", i), http.StatusCreated); err != nil {
						b.Fatal(err)
					}
				}
			}
			ctx := context.Background()
			cur0, err := srv.st.RouterCursor(ctx, observeRouterCursor)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			ds := benchtest.Drive(b, c.conns, func(i int) error {
				if c.items == "duplicate" {
					i %= repeats
				}
				return srv.record(client, i, observeBody("m", i), want)
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
			benchtest.Percentiles(b, ds, time.Microsecond, "us")
			if c.router && c.items == "new" {
				cur, err := srv.st.RouterCursor(ctx, observeRouterCursor)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(cur-cur0)/b.Elapsed().Seconds(), "routed/s")
			}
		})
	}
}

// wakeLoads are the background recording rates of BenchmarkObserveWakeHTTP,
// in items/s (0: none).
var wakeLoads = []int{0, 2000, 5000}

// wakeTurns is how many waits each Work serves before the next op of
// BenchmarkObserveWakeHTTP moves to a new one (see BenchmarkThreadWake in
// internal/observe for why the number matters).
const wakeTurns = 100

// openWorks opens n threads W0 … W<n-1> in process: records each one's
// opener, routes them, and claims each Work for recipient (which gives it
// the opener, so a wait registered next parks). It returns the Works in
// order.
func openWorks(b *testing.B, ob *observe.Observer, n int, recipient string) []store.Work {
	b.Helper()
	ctx := context.Background()
	for k := range n {
		rec := observe.Record{Item: fmt.Sprint("opener-", k), Thread: fmt.Sprint("W", k), Text: "printer on fire"}
		if _, err := ob.Record(ctx, kind.LocalPrincipal, "support", rec); err != nil {
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
		w, ok := byThread[fmt.Sprint("observe/support/slack-help/W", k)]
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

// BenchmarkObserveWakeHTTP is the time from an HTTP record to the parked
// watch's mailbox message; see the top of this file.
func BenchmarkObserveWakeHTTP(b *testing.B) {
	for _, load := range wakeLoads {
		b.Run(fmt.Sprintf("load=%d", load), func(b *testing.B) { benchWake(b, load) })
	}
}

func benchWake(b *testing.B, load int) {
	const recipient = "responder"
	srv := startObserveServer(b, observeServerOpts{rate: -1, router: true})
	client := keepAlive(1)
	defer client.CloseIdleConnections()
	ctx := context.Background()
	// One request first, so the timed part opens no connection.
	if err := srv.record(client, 0, []byte(`{"item":"hello","thread":"hello"}`), http.StatusCreated); err != nil {
		b.Fatal(err)
	}
	works := openWorks(b, srv.ob, (b.N+wakeTurns-1)/wakeTurns, recipient)
	loaded := startWakeLoad(b, srv, load)
	var cur uint64
	total := make([]time.Duration, 0, b.N)
	posts := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		k := i / wakeTurns
		if err := apitest.ParkThreadWatch(srv.sched, works[k], recipient); err != nil {
			b.Fatal(err)
		}
		item := fmt.Sprint("f", i)
		body := []byte(`{"item":"` + item + `","thread":"W` + fmt.Sprint(k) + `","text":"still burning"}`)
		b.StartTimer()
		t := time.Now()
		err := srv.record(client, 0, body, http.StatusCreated)
		posted := time.Since(t)
		var msgs []store.Message
		if err == nil {
			msgs, err = srv.del.Read(ctx, recipient, cur, 1, 10*time.Second)
		}
		d := time.Since(t)
		b.StopTimer()
		if err == nil {
			err = apitest.CheckWake(msgs, item)
		}
		if err != nil {
			b.Fatal(err)
		}
		total = append(total, d)
		posts = append(posts, posted)
		cur = msgs[0].Seq
		b.StartTimer()
	}
	b.StopTimer()
	benchtest.Percentiles(b, total, time.Microsecond, "us")
	benchtest.Percentiles(b, posts, time.Microsecond, "post-us")
	if load > 0 {
		n, secs := loaded()
		b.ReportMetric(float64(n)/secs, "load-items/s")
	}
}

// startWakeLoad records rate new items a second (on threads of their
// own, so they wake nothing) from 4 keep-alive clients until the benchmark
// ends, paced every 10 ms. The returned func stops the load and says how
// many it recorded in how many seconds.
func startWakeLoad(b *testing.B, srv *observeServer, rate int) func() (int, float64) {
	if rate <= 0 {
		return func() (int, float64) { return 0, 0 }
	}
	const conns = 4
	client := keepAlive(conns)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var n int
	var failed error
	start := time.Now()
	for g := range conns {
		wg.Go(func() {
			const tick = 10 * time.Millisecond
			per := max(rate*int(tick/time.Millisecond)/1000/conns, 1) // items each tick
			t := time.NewTicker(tick)
			defer t.Stop()
			for i := 0; ; {
				select {
				case <-stop:
					return
				case <-t.C:
				}
				for range per {
					k := (i*conns + g) * 4 // observeBody puts item k on thread T<k/4>: one item a thread
					if err := srv.record(client, 0, observeBody("load", k), http.StatusCreated); err != nil {
						mu.Lock()
						failed = err
						mu.Unlock()
						return
					}
					i++
				}
				mu.Lock()
				n += per
				mu.Unlock()
			}
		})
	}
	var once sync.Once
	var secs float64
	halt := func() (int, float64) {
		once.Do(func() {
			close(stop)
			wg.Wait()
			secs = time.Since(start).Seconds()
			client.CloseIdleConnections()
		})
		mu.Lock()
		defer mu.Unlock()
		if failed != nil {
			b.Fatal(failed)
		}
		return n, secs
	}
	b.Cleanup(func() { halt() })
	return halt
}

// benchGuard is the policy of tokens, or the local one without any.
func benchGuard(b *testing.B, tokens map[string]string) *authz.Guard {
	if len(tokens) == 0 {
		return nil
	}
	return authztest.Guard(b, tokens)
}

// kindsAsMulti serves the scheduler's kinds as the plugin runtime serves
// its own (kind.Multi), for kind.Of: admission by the params alone.
type kindsAsMulti struct{ scheduler.Kinds }

func (m kindsAsMulti) Admit(ctx context.Context, name string, params json.RawMessage) (kind.Admission, error) {
	return m.Kinds.Admit(ctx, name, kind.AdmitRequest{Params: params})
}
