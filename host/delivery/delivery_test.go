package delivery

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api/webhooks"
	"github.com/vigilhq/vigil/host/netguard"
	"github.com/vigilhq/vigil/store"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

type idSource struct{ r *rand.ChaCha8 }

func (s idSource) Read(p []byte) (int, error) { return s.r.Read(p) }

func loopbackGuard() *netguard.Guard {
	return netguard.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
}

func newDelivery(t *testing.T, st Store, guard *netguard.Guard, timeout time.Duration) *Delivery {
	t.Helper()
	d, err := New(Config{Store: st, Guard: guard, Timeout: timeout, Clock: fixedClock{time.Now()}, IDs: idSource{rand.NewChaCha8([32]byte{3})}})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func openStore(t *testing.T) *store.Badger {
	t.Helper()
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func recipient(t *testing.T, st *store.Badger, id string, status store.RecipientStatus, hook string) {
	t.Helper()
	r := store.RecipientRecord{ID: id, Status: status, CreatedAt: t0, UpdatedAt: t0}
	if hook != "" {
		r.Webhook = &store.Webhook{URL: hook, Secret: secret}
	}
	if _, _, err := st.PutRecipient(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

func fired() store.Message {
	return store.Message{Kind: "timer", Type: store.MessageFired, Outcome: store.Outcome{Result: "fired"}, At: t0}
}

func TestMailboxDelivery(t *testing.T) {
	st := openStore(t)
	d := newDelivery(t, st, nil, time.Second)
	ctx := context.Background()
	recipient(t, st, "a", store.StatusRunning, "")
	recipient(t, st, "p", store.StatusPaused, "")

	if got := d.Send(ctx, store.Recipient{ID: "a"}, fired()); got != store.ReceiptDelivered {
		t.Fatalf("running: %s", got)
	}
	if got := d.Send(ctx, store.Recipient{ID: "p"}, fired()); got != store.ReceiptRejected {
		t.Fatalf("paused: %s", got)
	}
	if got := d.Send(ctx, store.Recipient{ID: "nobody"}, fired()); got != store.ReceiptRejected {
		t.Fatalf("unknown: %s", got)
	}
	msgs, err := d.Read(ctx, "a", 0, 10, 0)
	if err != nil || len(msgs) != 1 || msgs[0].Seq != 1 || msgs[0].Type != store.MessageFired || msgs[0].ID == (store.ID{}) {
		t.Fatalf("read: %+v %v", msgs, err)
	}
	if msgs, _ := d.Read(ctx, "p", 0, 10, 0); len(msgs) != 0 {
		t.Fatalf("a rejected message landed: %+v", msgs)
	}
	if _, err := d.Read(ctx, "nobody", 0, 10, 0); err == nil {
		t.Fatal("read of an unknown recipient")
	}
}

// hookServer records webhook requests and answers with status.
type hookServer struct {
	mu     sync.Mutex
	bodies [][]byte
	heads  []http.Header
	status int
	hits   atomic.Int64
}

func (h *hookServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.hits.Add(1)
	b, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.bodies = append(h.bodies, b)
	h.heads = append(h.heads, r.Header.Clone())
	h.mu.Unlock()
	w.WriteHeader(h.status)
}

func TestWebhookIsSignedAndClassified(t *testing.T) {
	tests := []struct {
		status int
		want   store.Receipt
	}{
		{200, store.ReceiptDelivered},
		{204, store.ReceiptDelivered},
		{302, store.ReceiptRejected},
		{404, store.ReceiptRejected},
		{410, store.ReceiptRejected},
		{500, store.ReceiptUnknown},
		{503, store.ReceiptUnknown},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			hs := &hookServer{status: tt.status}
			srv := httptest.NewServer(hs)
			defer srv.Close()
			st := openStore(t)
			recipient(t, st, "a", store.StatusRunning, srv.URL+"/hook")
			d := newDelivery(t, st, loopbackGuard(), 2*time.Second)
			if got := d.Send(context.Background(), store.Recipient{ID: "a"}, fired()); got != tt.want {
				t.Fatalf("receipt %s, want %s", got, tt.want)
			}
			if hs.hits.Load() != 1 {
				t.Fatalf("%d requests", hs.hits.Load())
			}
			// The mailbox copy is written whatever the webhook said.
			msgs, _ := d.Read(context.Background(), "a", 0, 10, 0)
			if len(msgs) != 1 {
				t.Fatalf("mailbox: %+v", msgs)
			}
			var body store.Message
			if err := json.Unmarshal(hs.bodies[0], &body); err != nil || body.Seq != 1 || body.ID != msgs[0].ID {
				t.Fatalf("body %s: %v", hs.bodies[0], err)
			}
			if hs.heads[0].Get("webhook-id") != msgs[0].ID.String() {
				t.Fatalf("webhook-id %q, message %s", hs.heads[0].Get("webhook-id"), msgs[0].ID)
			}
			if err := webhooks.Verify(secret, hs.heads[0], hs.bodies[0], time.Now(), 0); err != nil {
				t.Fatalf("signature: %v", err)
			}
		})
	}
}

// A receiver that takes the request and never answers: unknown, one POST,
// no retry.
func TestWebhookThatNeverAnswersIsUnknownAndNotRetried(t *testing.T) {
	var hits atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = io.ReadAll(r.Body)
		<-release
	}))
	defer func() { close(release); srv.Close() }()
	st := openStore(t)
	recipient(t, st, "a", store.StatusRunning, srv.URL)
	d := newDelivery(t, st, loopbackGuard(), 300*time.Millisecond)
	if got := d.Send(context.Background(), store.Recipient{ID: "a"}, fired()); got != store.ReceiptUnknown {
		t.Fatalf("receipt %s", got)
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("%d POSTs", n)
	}
}

// A receiver that refuses the connection: nothing was sent, so rejected.
func TestWebhookRefusedConnectionIsRejected(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now
	st := openStore(t)
	recipient(t, st, "a", store.StatusRunning, "http://"+addr+"/hook")
	d := newDelivery(t, st, loopbackGuard(), time.Second)
	if got := d.Send(context.Background(), store.Recipient{ID: "a"}, fired()); got != store.ReceiptRejected {
		t.Fatalf("receipt %s", got)
	}
}

// A loopback webhook without the operator's allow is refused before any
// request goes out.
func TestWebhookDestinationGuard(t *testing.T) {
	hs := &hookServer{status: 200}
	srv := httptest.NewServer(hs)
	defer srv.Close()
	st := openStore(t)
	recipient(t, st, "a", store.StatusRunning, srv.URL)
	d := newDelivery(t, st, nil, time.Second) // the default guard: no allow
	if got := d.Send(context.Background(), store.Recipient{ID: "a"}, fired()); got != store.ReceiptRejected {
		t.Fatalf("receipt %s", got)
	}
	if n := hs.hits.Load(); n != 0 {
		t.Fatalf("the guard let %d requests through", n)
	}
}

// raceStore lets the append see a running recipient and a later read see
// it stopped: the moment between a notice's append and its POST.
type raceStore struct {
	Store
	stopped store.RecipientRecord
}

func (r raceStore) GetRecipient(context.Context, string) (store.RecipientRecord, error) {
	return r.stopped, nil
}

func TestNotifyNeverReachesARecipientThatStopped(t *testing.T) {
	hs := &hookServer{status: 200}
	srv := httptest.NewServer(hs)
	defer srv.Close()
	st := openStore(t)
	recipient(t, st, "a", store.StatusRunning, srv.URL)
	rec, _ := st.GetRecipient(context.Background(), "a")
	rec.Status = store.StatusStopped
	d := newDelivery(t, raceStore{Store: st, stopped: rec}, loopbackGuard(), time.Second)

	if got := d.Notify(context.Background(), store.Recipient{ID: "a"}, fired()); got != store.ReceiptRejected {
		t.Fatalf("notify: %s", got)
	}
	if n := hs.hits.Load(); n != 0 {
		t.Fatalf("notify POSTed to a stopped recipient (%d)", n)
	}
	// Send is the outcome a registration asked for: the append's check is
	// the one that counts.
	if got := d.Send(context.Background(), store.Recipient{ID: "a"}, fired()); got != store.ReceiptDelivered || hs.hits.Load() != 1 {
		t.Fatalf("send: %s, %d POSTs", got, hs.hits.Load())
	}
}

// A long-poll reader on an empty mailbox returns as soon as a message
// lands, with no polling loop: it waits on the hub.
func TestLongPollWakesOnAppend(t *testing.T) {
	st := openStore(t)
	recipient(t, st, "a", store.StatusRunning, "")
	d := newDelivery(t, st, nil, time.Second)
	got := make(chan []store.Message, 1)
	go func() {
		msgs, _ := d.Read(context.Background(), "a", 0, 10, time.Minute)
		got <- msgs
	}()
	// Wait until the reader is parked on the hub.
	for {
		d.hub.mu.Lock()
		_, parked := d.hub.ch["a"]
		d.hub.mu.Unlock()
		if parked {
			break
		}
		select {
		case msgs := <-got:
			t.Fatalf("returned before any message: %+v", msgs)
		default:
		}
	}
	d.Send(context.Background(), store.Recipient{ID: "a"}, fired())
	if msgs := <-got; len(msgs) != 1 || msgs[0].Seq != 1 {
		t.Fatalf("woke with %+v", msgs)
	}
}

func TestLongPollReturnsEmptyAtItsBound(t *testing.T) {
	st := openStore(t)
	recipient(t, st, "a", store.StatusRunning, "")
	d := newDelivery(t, st, nil, time.Second)
	start := time.Now()
	msgs, err := d.Read(context.Background(), "a", 0, 10, 50*time.Millisecond)
	if err != nil || len(msgs) != 0 {
		t.Fatalf("%+v %v", msgs, err)
	}
	if time.Since(start) < 50*time.Millisecond {
		t.Fatal("returned before its wait")
	}
}

// Across reconnects, a reader passing its cursor sees every message once.
func TestCursorNeverMissesOrRepeats(t *testing.T) {
	st := openStore(t)
	recipient(t, st, "a", store.StatusRunning, "")
	d := newDelivery(t, st, nil, time.Second)
	ctx := context.Background()
	var seen []uint64
	cursor := uint64(0)
	for i := range 10 {
		d.Send(ctx, store.Recipient{ID: "a"}, fired())
		if i%3 == 0 {
			continue // the reader is away for a while
		}
		msgs, _ := d.Read(ctx, "a", cursor, 2, 0) // small pages
		for _, m := range msgs {
			seen = append(seen, m.Seq)
			cursor = m.Seq
		}
	}
	for {
		msgs, _ := d.Read(ctx, "a", cursor, 2, 0)
		if len(msgs) == 0 {
			break
		}
		for _, m := range msgs {
			seen = append(seen, m.Seq)
			cursor = m.Seq
		}
	}
	for i, s := range seen {
		if s != uint64(i+1) {
			t.Fatalf("seen %v", seen)
		}
	}
	if len(seen) != 10 {
		t.Fatalf("seen %v", seen)
	}
}
