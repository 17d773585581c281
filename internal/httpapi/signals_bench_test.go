package httpapi

// BenchmarkSignalToMailbox is a signal's answer through the real API over
// badger: POST /api/v1/signals/{token} on a loopback listener, the
// signal settled and mailed (one settle-and-mail transaction, the
// scheduler's loop running as in serve), and the recipient's parked long
// poll (GET …/mailbox?wait=30s) answering with the message. conns
// goroutines each answer signals of a recipient of their own, one at a
// time, each with its own keep-alive connection and its recipient's long
// poll. p50/p99-post-us is the POST's latency (its 200 comes after the
// mail is durable); p50/p99-mail-us is from the POST's start to the long
// poll's answer holding the message: what the figure (p99 ≤ 10 ms)
// is about. The signals are registered before the timer starts.
//
//	go test -run XXX -bench BenchmarkSignalToMailbox -benchtime 2000x ./internal/httpapi/

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/benchtest"
	"github.com/vigilhq/vigil/internal/captoken"
	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/internal/delivery"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/lifecycle"
	"github.com/vigilhq/vigil/internal/recipients"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/internal/signal"
	"github.com/vigilhq/vigil/store"
)

func BenchmarkSignalToMailbox(b *testing.B) {
	for _, d := range durabilities()[:2] { // off, group (serve's default)
		for _, conns := range []int{1, 8} {
			b.Run(fmt.Sprintf("fsync=%s/conns=%d", d.name, conns), func(b *testing.B) {
				benchSignals(b, d, conns)
			})
		}
	}
}

func benchSignals(b *testing.B, d durability, conns int) {
	st := openBenchStoreWith(b, b.TempDir(), d.opt)
	reg := kind.NewRegistry()
	if err := (signal.Kind{}).Register(reg); err != nil {
		b.Fatal(err)
	}
	del, err := delivery.New(delivery.Config{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	sched, err := scheduler.New(scheduler.Config{Store: st, Plugins: reg, Deliver: del, Recipients: st})
	if err != nil {
		b.Fatal(err)
	}
	ctx, stopLoop := context.WithCancel(context.Background())
	if _, err := sched.Prime(ctx); err != nil {
		b.Fatal(err)
	}
	loop := lifecycle.Go(ctx, sched.Run)
	base, wake := context.WithCancel(context.Background())
	app := New(Deps{Scheduler: sched, Watches: st, Mailboxes: del, Recipients: recipients.New(st, sched, reg, clock.Wall{}, nil), Base: base,
		Signals: signal.NewService(st, sched)}, Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = app.Listener(ln) }()
	url := "http://" + ln.Addr().String()
	b.Cleanup(func() {
		wake()
		_ = app.ShutdownWithTimeout(5 * time.Second)
		<-served
		stopLoop()
		_ = loop()
	})

	// b.N signals, dealt round robin to the conns recipients.
	tokens := make([]string, b.N)
	for i := range tokens {
		tok, err := captoken.New(rand.Reader)
		if err != nil {
			b.Fatal(err)
		}
		tokens[i] = tok
		if _, err := sched.Register(ctx, scheduler.Registration{Kind: signal.Name, Params: json.RawMessage(`{"title":"Go?"}`),
			Recipient: store.Recipient{ID: fmt.Sprintf("agent-%d", i%conns)}, Token: tok}); err != nil {
			b.Fatal(err)
		}
	}
	// Each recipient's long poll, parked, hands each message it reads to
	// the goroutine answering that recipient's signals.
	arrived := make([]chan time.Time, conns)
	var readers sync.WaitGroup
	rctx, stopReaders := context.WithCancel(context.Background())
	for g := range conns {
		arrived[g] = make(chan time.Time, b.N)
		readers.Go(func() { readMailbox(rctx, url, fmt.Sprintf("agent-%d", g), arrived[g]) })
	}
	defer func() { stopReaders(); wake(); readers.Wait() }()
	time.Sleep(50 * time.Millisecond) // the long polls parked

	clients := make([]*http.Client, conns)
	for g := range clients {
		clients[g] = keepAlive(1)
	}
	var mu sync.Mutex
	var posts, mails []time.Duration
	benchtest.Drive(b, conns, func(i int) error {
		g := i % conns
		start := time.Now()
		resp, err := clients[g].Post(url+SignalsPath+tokens[i], "application/json", bytes.NewReader([]byte(`{"outcome":"approve"}`)))
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("POST the signal: %d %s", resp.StatusCode, body)
		}
		posted := time.Since(start)
		var at time.Time
		select {
		case at = <-arrived[g]:
		case <-time.After(10 * time.Second):
			return fmt.Errorf("signal %d: no message within 10 s", i)
		}
		mu.Lock()
		posts, mails = append(posts, posted), append(mails, at.Sub(start))
		mu.Unlock()
		return nil
	})
	benchtest.Percentiles(b, posts, time.Microsecond, "post-us")
	benchtest.Percentiles(b, mails, time.Microsecond, "mail-us")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "signals/s")
}

// readMailbox long-polls rid's mailbox until ctx ends, sending the time
// each message was read.
func readMailbox(ctx context.Context, url, rid string, out chan<- time.Time) {
	hc := keepAlive(1)
	var after uint64
	for ctx.Err() == nil {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/api/v1/recipients/%s/mailbox?wait=30s&after=%d", url, rid, after), nil)
		if err != nil {
			return
		}
		resp, err := hc.Do(req)
		if err != nil {
			return
		}
		var mb api.Mailbox
		err = json.NewDecoder(resp.Body).Decode(&mb)
		_ = resp.Body.Close()
		now := time.Now()
		if err != nil {
			return
		}
		for range mb.Messages {
			out <- now
		}
		if mb.Next > after {
			after = mb.Next
		}
	}
}
