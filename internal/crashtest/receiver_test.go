package crashtest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api/webhooks"
)

// An answer is what the receiver did with one request.
type answer int

const (
	answerOK    answer = iota // 204 at once
	answerRetry               // 503: vigil may send the same message again
	answerSlow                // 204 after a pause, so a kill can catch the request in flight
)

// receipt is one request the receiver got.
type receipt struct {
	id      string
	seq     uint64
	started time.Time
	answer  answer
	// finished is set once the handler returned; a request the host was
	// killed during may never finish writing its answer.
	finished bool
}

// receiver is the webhook endpoint on loopback: it verifies every
// request's Standard Webhooks signature and keeps every receipt.
type receiver struct {
	secret string
	srv    *http.Server
	ln     net.Listener
	done   chan struct{}

	mu     sync.Mutex // guards rng, byID, bad
	rng    *rand.Rand
	byID   map[string][]*receipt
	bad    []string
	served int
}

func startReceiver(t *testing.T, secret string, seed uint64) *receiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{secret: secret, ln: ln, done: make(chan struct{}),
		rng: rand.New(rand.NewPCG(seed, 0x5eed)), byID: map[string][]*receipt{}}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(r.done)
		if err := r.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("webhook receiver: %v", err)
		}
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.srv.Shutdown(ctx)
		_ = r.srv.Close()
		<-r.done
	})
	return r
}

func (r *receiver) url() string { return "http://" + r.ln.Addr().String() + "/hook" }

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	started := time.Now()
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, 1<<20))
	if err != nil {
		return
	}
	id := req.Header.Get("webhook-id")
	if err := webhooks.Verify(r.secret, req.Header, body, time.Now(), 0); err != nil {
		r.mu.Lock()
		r.bad = append(r.bad, "webhook "+id+": signature does not verify: "+err.Error())
		r.mu.Unlock()
		http.Error(w, "unverified", http.StatusUnauthorized)
		return
	}
	var msg struct {
		Seq uint64 `json:"seq"`
		ID  string `json:"id"`
	}
	if err := json.Unmarshal(body, &msg); err != nil || msg.ID != id {
		r.mu.Lock()
		r.bad = append(r.bad, "webhook "+id+": body is not its message: "+string(body))
		r.mu.Unlock()
		http.Error(w, "body", http.StatusBadRequest)
		return
	}
	rc := &receipt{id: id, seq: msg.Seq, started: started}
	r.mu.Lock()
	switch x := r.rng.IntN(100); {
	case x < 8:
		rc.answer = answerRetry
	case x < 14:
		rc.answer = answerSlow
	default:
		rc.answer = answerOK
	}
	r.byID[id] = append(r.byID[id], rc)
	r.served++
	r.mu.Unlock()

	switch rc.answer {
	case answerRetry:
		w.WriteHeader(http.StatusServiceUnavailable)
	case answerSlow:
		select {
		case <-time.After(1500 * time.Millisecond):
		case <-req.Context().Done():
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
	r.mu.Lock()
	rc.finished = true
	r.mu.Unlock()
}

// receipts is a copy of every id's receipts so far.
func (r *receiver) receipts() (map[string][]receipt, []string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]receipt, len(r.byID))
	for id, rs := range r.byID {
		for _, rc := range rs {
			out[id] = append(out[id], *rc)
		}
	}
	return out, append([]string(nil), r.bad...), r.served
}
