package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api/webhooks"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/lifecycle"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

// pushMetrics counts push transitions and lets a test wait for them.
type pushMetrics struct {
	mu     sync.Mutex
	cond   *sync.Cond
	counts map[store.PushState]int
}

func newPushMetrics() *pushMetrics {
	m := &pushMetrics{counts: map[store.PushState]int{}}
	m.cond = sync.NewCond(&m.mu)
	return m
}

func (m *pushMetrics) Delivery(store.Receipt, string) {}

func (m *pushMetrics) Push(s store.PushState) {
	m.mu.Lock()
	m.counts[s]++
	m.cond.Broadcast()
	m.mu.Unlock()
}

// await waits until n pushes have entered state. The bound only turns a
// hang into a failure; nothing waits on it to pass.
func (m *pushMetrics) await(t *testing.T, state store.PushState, n int) {
	t.Helper()
	timedOut := false
	stop := time.AfterFunc(10*time.Second, func() {
		m.mu.Lock()
		timedOut = true
		m.cond.Broadcast()
		m.mu.Unlock()
	})
	defer stop.Stop()
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.counts[state] < n && !timedOut {
		m.cond.Wait()
	}
	if m.counts[state] < n {
		t.Fatalf("waited for %d pushes %s; counts %v", n, state, m.counts)
	}
}

func (m *pushMetrics) count(state store.PushState) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[state]
}

// rig is a delivery and an outbox over a real store, on a fake clock.
type rig struct {
	t       *testing.T
	dir     string
	st      *store.Store
	clock   *fakeclock.Clock
	metrics *pushMetrics
	outbox  *Outbox
	d       *Delivery
}

func newRig(t *testing.T, workers int, schedule ...time.Duration) *rig {
	t.Helper()
	r := &rig{t: t, dir: t.TempDir(), clock: fakeclock.At(t0), metrics: newPushMetrics()}
	r.open(workers, schedule)
	return r
}

// open opens the store in r.dir and builds the outbox and the delivery
// over it; the outbox is not started.
func (r *rig) open(workers int, schedule []time.Duration) {
	r.t.Helper()
	st, err := badger.OpenStore(r.dir, badger.Options{})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { _ = st.Close() })
	r.st = st
	r.outbox, err = NewOutbox(OutboxConfig{Store: st, Guard: loopbackGuard(), Clock: r.clock, Metrics: r.metrics,
		Workers: workers, Schedule: schedule, Timeout: 5 * time.Second})
	if err != nil {
		r.t.Fatal(err)
	}
	r.d, err = New(Config{Store: st, Outbox: r.outbox, Clock: r.clock, Metrics: r.metrics})
	if err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) start() {
	r.t.Helper()
	stop := lifecycle.Go(context.Background(), r.outbox.Run)
	r.t.Cleanup(func() { // before the store closes
		if err := stop(); err != nil {
			r.t.Error(err)
		}
	})
}

// push reads the push of rid's message seq.
func (r *rig) push(rid string, seq uint64) store.Push {
	r.t.Helper()
	msgs, err := r.st.ReadMailbox(context.Background(), rid, seq-1, 1)
	if err != nil || len(msgs) != 1 || msgs[0].Push == nil {
		r.t.Fatalf("message %s/%d: %+v %v", rid, seq, msgs, err)
	}
	return *msgs[0].Push
}

// receiver is a webhook receiver on 127.0.0.1 whose answers the test
// scripts: answer is called with each request's message and its number
// (from 1).
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	seqs   []uint64
	heads  []http.Header
	bodies [][]byte
	answer func(w http.ResponseWriter, r *http.Request, m store.Message, n int)
}

func newReceiver(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, m store.Message, n int)) *receiver {
	t.Helper()
	rc := &receiver{answer: answer}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m store.Message
		_ = json.Unmarshal(b, &m)
		rc.mu.Lock()
		rc.seqs = append(rc.seqs, m.Seq)
		rc.heads = append(rc.heads, r.Header.Clone())
		rc.bodies = append(rc.bodies, b)
		n := len(rc.seqs)
		rc.mu.Unlock()
		rc.answer(w, r, m, n)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) got() []uint64 {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.seqs)
}

func status(code int) func(http.ResponseWriter, *http.Request, store.Message, int) {
	return func(w http.ResponseWriter, _ *http.Request, _ store.Message, _ int) { w.WriteHeader(code) }
}

// A 2xx delivers the push: signed per Standard Webhooks, the body is the
// mailbox message byte for byte, and webhook-id is the message's id.
func TestPushIsSignedAndDelivered(t *testing.T) {
	r := newRig(t, 2)
	rc := newReceiver(t, status(http.StatusNoContent))
	recipient(t, r.st, "a", store.StatusRunning, rc.srv.URL+"/hook")
	r.start()
	mail(t, r.d, r.st, "a")
	r.metrics.await(t, store.PushDelivered, 1)
	p := r.push("a", 1)
	if p.State != store.PushDelivered || p.Attempts != 1 || p.LastError != "" {
		t.Fatalf("push %+v", p)
	}
	msgs, _ := r.st.ReadMailbox(context.Background(), "a", 0, 1)
	want, _ := json.Marshal(msgs[0])
	if string(rc.bodies[0]) != string(want) {
		t.Fatalf("body %s, message %s", rc.bodies[0], want)
	}
	if rc.heads[0].Get("webhook-id") != msgs[0].ID.String() {
		t.Fatalf("webhook-id %q, message %s", rc.heads[0].Get("webhook-id"), msgs[0].ID)
	}
	if err := webhooks.Verify(secret, rc.heads[0], rc.bodies[0], t0, 0); err != nil {
		t.Fatalf("signature: %v", err)
	}
	if _, ok := r.outbox.NextRetry(); ok {
		t.Fatal("a retry is scheduled with nothing to retry")
	}
}

// Each class of answer, and of failure to get one, and what it leads to.
func TestRetryClasses(t *testing.T) {
	refusedURL := func(t *testing.T) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		_ = ln.Close() // nothing listens there now
		return "http://" + addr + "/hook"
	}
	tests := []struct {
		name string
		// answer is the receiver's first answer; later ones are 200.
		answer    func(http.ResponseWriter, *http.Request, store.Message, int)
		refused   bool // no receiver: the connection is refused
		state     store.PushState
		next      time.Duration // retrying: when the next attempt is due
		lastError string
	}{
		{name: "connection refused", refused: true, state: store.PushRetrying, next: 5 * time.Second, lastError: "connection refused"},
		{name: "503 with Retry-After", answer: func(w http.ResponseWriter, _ *http.Request, _ store.Message, _ int) {
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(http.StatusServiceUnavailable)
		}, state: store.PushRetrying, next: 120 * time.Second, lastError: "status 503"},
		{name: "429", answer: status(http.StatusTooManyRequests), state: store.PushRetrying, next: 5 * time.Second, lastError: "status 429"},
		{name: "500", answer: status(http.StatusInternalServerError), state: store.PushRetrying, next: 5 * time.Second, lastError: "status 500"},
		{name: "400", answer: status(http.StatusBadRequest), state: store.PushFailed, lastError: "status 400"},
		{name: "302", answer: status(http.StatusFound), state: store.PushFailed, lastError: "status 302"},
		{name: "410", answer: status(http.StatusGone), state: store.PushFailed, lastError: "status 410"},
		{name: "headers sent, no answer", answer: func(w http.ResponseWriter, _ *http.Request, _ store.Message, _ int) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close() // the request arrived; no answer ever comes
			}
		}, state: store.PushUnknown, lastError: "the request went out and no answer came"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, 2)
			var rc *receiver
			url := ""
			if tt.refused {
				url = refusedURL(t)
			} else {
				rc = newReceiver(t, func(w http.ResponseWriter, req *http.Request, m store.Message, n int) {
					if n == 1 {
						tt.answer(w, req, m, n)
						return
					}
					w.WriteHeader(http.StatusOK)
				})
				url = rc.srv.URL + "/hook"
			}
			recipient(t, r.st, "a", store.StatusRunning, url)
			r.start()
			mail(t, r.d, r.st, "a")
			r.metrics.await(t, tt.state, 1)
			p := r.push("a", 1)
			if p.State != tt.state || p.Attempts != 1 || p.LastError != tt.lastError {
				t.Fatalf("push %+v", p)
			}
			switch tt.state {
			case store.PushRetrying:
				if p.NextAttempt == nil || !p.NextAttempt.Equal(t0.Add(tt.next)) {
					t.Fatalf("next attempt %v, want %v", p.NextAttempt, t0.Add(tt.next))
				}
				if at, ok := r.outbox.NextRetry(); !ok || !at.Equal(t0.Add(tt.next)) {
					t.Fatalf("scheduled %v %v", at, ok)
				}
				if tt.refused {
					return
				}
				// At its time, the same message with the same id.
				r.clock.Add(tt.next)
				r.metrics.await(t, store.PushDelivered, 1)
				if got := rc.got(); len(got) != 2 || got[0] != 1 || got[1] != 1 {
					t.Fatalf("requests %v", got)
				}
				if a, b := rc.heads[0].Get("webhook-id"), rc.heads[1].Get("webhook-id"); a == "" || a != b {
					t.Fatalf("webhook-id %q then %q", a, b)
				}
				if p := r.push("a", 1); p.State != store.PushDelivered || p.Attempts != 2 {
					t.Fatalf("after the retry: %+v", p)
				}
			default:
				if _, ok := r.outbox.NextRetry(); ok {
					t.Fatalf("a %s push is scheduled again", tt.state)
				}
				r.clock.Add(48 * time.Hour)
				if got := rc.got(); len(got) != 1 {
					t.Fatalf("requests %v", got)
				}
			}
			rec, _ := r.st.GetRecipient(context.Background(), "a")
			if disabled := rec.Webhook.DisabledAt != nil; disabled != (tt.name == "410") {
				t.Fatalf("webhook %+v", rec.Webhook)
			}
			if tt.name == "410" {
				// Said on the recipient, and no push is written after it.
				if rec.Webhook.DisabledReason == "" {
					t.Fatalf("webhook %+v", rec.Webhook)
				}
				mail(t, r.d, r.st, "a")
				if msgs, _ := r.st.ReadMailbox(context.Background(), "a", 1, 1); len(msgs) != 1 || msgs[0].Push != nil {
					t.Fatalf("after 410: %+v", msgs)
				}
			}
		})
	}
}

// After the last attempt of the schedule a retryable push is failed.
func TestRetriesRunOut(t *testing.T) {
	r := newRig(t, 1, 0, time.Second, time.Minute)
	rc := newReceiver(t, status(http.StatusBadGateway))
	recipient(t, r.st, "a", store.StatusRunning, rc.srv.URL)
	r.start()
	mail(t, r.d, r.st, "a")
	r.metrics.await(t, store.PushRetrying, 1)
	r.clock.Add(time.Second)
	r.metrics.await(t, store.PushRetrying, 2)
	if p := r.push("a", 1); !p.NextAttempt.Equal(t0.Add(time.Second + time.Minute)) {
		t.Fatalf("push %+v", p)
	}
	r.clock.Add(time.Minute)
	r.metrics.await(t, store.PushFailed, 1)
	if p := r.push("a", 1); p.State != store.PushFailed || p.Attempts != 3 || len(rc.got()) != 3 {
		t.Fatalf("push %+v, %d requests", p, len(rc.got()))
	}
}

// First attempts go out in mailbox order, one request of a recipient at a
// time, however many workers are free.
func TestFirstAttemptsInMailboxOrder(t *testing.T) {
	r := newRig(t, 4)
	rc := newReceiver(t, status(http.StatusOK))
	recipient(t, r.st, "a", store.StatusRunning, rc.srv.URL)
	for range 6 {
		mail(t, r.d, r.st, "a") // queued before the workers start
	}
	r.start()
	for range 4 {
		mail(t, r.d, r.st, "a")
	}
	r.metrics.await(t, store.PushDelivered, 10)
	if got := rc.got(); !slices.Equal(got, []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}) {
		t.Fatalf("arrival order %v", got)
	}
}

// The order guard itself, without the network: a recipient's next push is
// not handed out while one of its requests is in flight.
func TestOneRequestPerRecipientInFlight(t *testing.T) {
	o, err := NewOutbox(OutboxConfig{Store: nopOutboxStore{}})
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= 3; seq++ {
		o.Enqueue(store.Push{Recipient: "a", Seq: seq, State: store.PushPending})
	}
	o.Enqueue(store.Push{Recipient: "b", Seq: 1, State: store.PushPending})
	o.mu.Lock()
	defer o.mu.Unlock()
	var order []pushKey
	k1, _, _ := o.take()
	k2, _, _ := o.take()
	order = append(order, k1, k2)
	// A new message of a recipient with a request in flight waits too.
	o.mu.Unlock()
	o.Enqueue(store.Push{Recipient: "a", Seq: 4, State: store.PushPending})
	o.mu.Lock()
	if k, _, ok := o.take(); ok {
		t.Fatalf("handed out %v while a/%d and b/%d are in flight", k, k1.seq, k2.seq)
	}
	o.done(k1, true)
	k3, _, _ := o.take()
	order = append(order, k3)
	want := []pushKey{{"a", 1}, {"b", 1}, {"a", 2}}
	if !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
}

// A message waiting for its retry does not hold back the ones after it.
func TestARetryDoesNotBlockLaterMessages(t *testing.T) {
	r := newRig(t, 2)
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, m store.Message, _ int) {
		if m.Seq == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	recipient(t, r.st, "a", store.StatusRunning, rc.srv.URL)
	r.start()
	for range 3 {
		mail(t, r.d, r.st, "a")
	}
	// The clock never moves: 2 and 3 go while 1 waits for its retry.
	r.metrics.await(t, store.PushDelivered, 2)
	if p := r.push("a", 1); p.State != store.PushRetrying {
		t.Fatalf("push 1 %+v", p)
	}
	if got := rc.got(); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Fatalf("arrivals %v", got)
	}
}

// A webhook that takes its time (it answers only when the test lets it,
// as one that answers after 8 s would) holds one worker: another
// recipient's message goes out meanwhile.
func TestASlowWebhookDoesNotDelayAnotherRecipient(t *testing.T) {
	r := newRig(t, 4)
	release := make(chan struct{})
	entered := make(chan struct{}, 5)
	slow := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ store.Message, _ int) {
		entered <- struct{}{}
		<-release
		w.WriteHeader(http.StatusOK)
	})
	fast := newReceiver(t, status(http.StatusOK))
	recipient(t, r.st, "slow", store.StatusRunning, slow.srv.URL)
	recipient(t, r.st, "fast", store.StatusRunning, fast.srv.URL)
	r.start()
	for range 5 {
		mail(t, r.d, r.st, "slow")
	}
	<-entered // the slow receiver holds its first request
	mail(t, r.d, r.st, "fast")
	r.metrics.await(t, store.PushDelivered, 1)
	if got := fast.got(); len(got) != 1 {
		t.Fatalf("fast recipient: %v", got)
	}
	if got := slow.got(); len(got) != 1 {
		t.Fatalf("the slow recipient has %d requests in flight", len(got))
	}
	close(release)
	r.metrics.await(t, store.PushDelivered, 6)
}

// A restart finds a push marked sending (the process died with its
// request in flight) and records it unknown; it is never sent again,
// while the push after it, still pending, goes out.
func TestSendingIsUnknownAfterARestart(t *testing.T) {
	r := newRig(t, 2)
	rc := newReceiver(t, status(http.StatusOK))
	recipient(t, r.st, "a", store.StatusRunning, rc.srv.URL)
	mail(t, r.d, r.st, "a")
	mail(t, r.d, r.st, "a")
	// The outbox begins the first push, and the process dies there.
	if _, _, _, err := r.st.BeginPush(context.Background(), "a", 1, t0); err != nil {
		t.Fatal(err)
	}
	_ = r.st.Close()

	r.open(2, nil) // restart on the same directory
	r.start()
	r.metrics.await(t, store.PushUnknown, 1) // Run recovers first
	if p := r.push("a", 1); p.State != store.PushUnknown || p.Attempts != 1 {
		t.Fatalf("push 1 after the restart: %+v", p)
	}
	r.metrics.await(t, store.PushDelivered, 1)
	r.clock.Add(48 * time.Hour)
	// Mailbox order per recipient: had 1 been sent again it would have
	// gone before 2.
	if got := rc.got(); !slices.Equal(got, []uint64{2}) {
		t.Fatalf("requests after the restart: %v", got)
	}
	if n := r.metrics.count(store.PushUnknown); n != 1 {
		t.Fatalf("unknown counted %d times", n)
	}
}

// A notice re-reads the recipient just before its push: one that stopped
// after the change was mailed is not sent to.
func TestNoticeIsNotPushedToARecipientThatStopped(t *testing.T) {
	r := newRig(t, 1)
	rc := newReceiver(t, status(http.StatusOK))
	recipient(t, r.st, "a", store.StatusRunning, rc.srv.URL)
	ctx := context.Background()
	id := pendingKind(t, r.st, "a", "ticket")
	change := &store.Message{Kind: "ticket", Type: store.MessageChanged, Outcome: store.Outcome{Result: "changed"}}
	if mailed, err := r.d.Carry(ctx, id, []byte(`{}`), 1, "", change); err != nil || !mailed {
		t.Fatalf("carry: %v %v", mailed, err)
	}
	recipient(t, r.st, "a", store.StatusStopped, rc.srv.URL)
	r.start()
	r.metrics.await(t, store.PushFailed, 1)
	if p := r.push("a", 1); p.State != store.PushFailed || p.LastError != "the recipient is stopped" {
		t.Fatalf("push %+v", p)
	}
	if got := rc.got(); len(got) != 0 {
		t.Fatalf("a notice reached a stopped recipient: %v", got)
	}
}

// nopOutboxStore stands in where no store call is made.
type nopOutboxStore struct{ OutboxStore }

// A receiver's Retry-After holds a push at most maxRetryAfter, never a
// negative time, and nothing when it cannot be read.
func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name, v string
		want    time.Duration
	}{
		{"absent", "", 0},
		{"seconds", "120", 120 * time.Second},
		{"seconds past the bound", "604800", maxRetryAfter},
		{"an HTTP date", now.Add(time.Hour).Format(http.TimeFormat), time.Hour},
		{"an HTTP date past the bound", now.Add(48 * time.Hour).Format(http.TimeFormat), maxRetryAfter},
		{"an HTTP date already past", now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{"negative seconds", "-5", 0},
		{"unreadable", "soon", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := retryAfter(tt.v, now); got != tt.want {
				t.Fatalf("retryAfter(%q) = %v, want %v", tt.v, got, tt.want)
			}
		})
	}
}

// The outbox's pool is 4 workers by default and never more than 16,
// whatever it is asked for.
func TestOutboxWorkers(t *testing.T) {
	st := newRig(t, 1).st
	for _, tt := range []struct{ asked, want int }{{0, 4}, {-3, 4}, {1, 1}, {16, 16}, {100, 16}} {
		o, err := NewOutbox(OutboxConfig{Store: st, Workers: tt.asked})
		if err != nil {
			t.Fatal(err)
		}
		if o.cfg.Workers != tt.want {
			t.Fatalf("Workers %d: %d workers, want %d", tt.asked, o.cfg.Workers, tt.want)
		}
	}
}

// failingBegin is the store with BeginPush failing, as a store error
// that marks nothing.
type failingBegin struct {
	*store.Store
	err error
}

func (f failingBegin) BeginPush(context.Context, string, uint64, time.Time) (store.Push, store.Message, store.RecipientRecord, error) {
	return store.Push{}, store.Message{}, store.RecipientRecord{}, f.err
}

// A store error starting a push marks nothing and leaves the push in the
// outbox, retried after the schedule's first wait.
func TestPushRetriedAfterAStoreError(t *testing.T) {
	r := newRig(t, 1)
	recipient(t, r.st, "a", store.StatusRunning, "https://example.org/hook")
	mail(t, r.d, r.st, "a")
	o, err := NewOutbox(OutboxConfig{Store: failingBegin{r.st, errors.New("disk on fire")}, Clock: r.clock, Metrics: r.metrics})
	if err != nil {
		t.Fatal(err)
	}
	if final := o.attempt(context.Background(), pushKey{"a", 1}, true); final {
		t.Fatal("the push left the outbox after a store error")
	}
	if at, ok := o.NextRetry(); !ok || !at.Equal(t0.Add(RetrySchedule()[1])) {
		t.Fatalf("retry at %v (%v), want %v", at, ok, t0.Add(RetrySchedule()[1]))
	}
	if p := r.push("a", 1); p.State != store.PushPending || p.Attempts != 0 {
		t.Fatalf("push %+v", p)
	}
}

// stoppingAtBegin is the store, with the host stopping just after a push
// was marked sending: its context ends before the request goes out.
type stoppingAtBegin struct {
	*store.Store
	stop context.CancelFunc
}

func (s stoppingAtBegin) BeginPush(ctx context.Context, rid string, seq uint64, at time.Time) (store.Push, store.Message, store.RecipientRecord, error) {
	defer s.stop()
	return s.Store.BeginPush(context.WithoutCancel(ctx), rid, seq, at)
}

// A push the host stops before sending is put back as it was: pending,
// its attempt not counted, for the next start to send.
func TestPushNotSentWhenStopping(t *testing.T) {
	r := newRig(t, 1)
	rc := newReceiver(t, status(http.StatusNoContent))
	recipient(t, r.st, "a", store.StatusRunning, rc.srv.URL+"/hook")
	mail(t, r.d, r.st, "a")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o, err := NewOutbox(OutboxConfig{Store: stoppingAtBegin{r.st, cancel}, Guard: loopbackGuard(), Clock: r.clock, Metrics: r.metrics})
	if err != nil {
		t.Fatal(err)
	}
	o.attempt(ctx, pushKey{"a", 1}, true)
	if p := r.push("a", 1); p.State != store.PushPending || p.Attempts != 0 || p.NextAttempt != nil {
		t.Fatalf("push %+v", p)
	}
	if got := rc.got(); len(got) != 0 {
		t.Fatalf("requests %v", got)
	}
}

// A retry that comes due while its timer is being armed (the clock moved
// between the outbox reading it and arming the timer, which then counts
// from the moved clock) is sent, not left to a timer a whole interval on.
func TestARetryDueWhileItsTimerIsArmedIsSent(t *testing.T) {
	r := newRig(t, 2)
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ store.Message, n int) {
		if n == 1 {
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	var once sync.Once
	r.clock.OnArm(func(d time.Duration) {
		if d == 120*time.Second {
			once.Do(func() { r.clock.Add(d) })
		}
	})
	recipient(t, r.st, "a", store.StatusRunning, rc.srv.URL+"/hook")
	r.start()
	mail(t, r.d, r.st, "a")
	r.metrics.await(t, store.PushDelivered, 1)
	if got := rc.got(); len(got) != 2 {
		t.Fatalf("requests %v, want the first attempt and its retry", got)
	}
}
