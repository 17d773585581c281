package hooks

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/lifecycle"
	"github.com/vigilhq/vigil/sdk/abi"
)

// fakeWake answers keys (or err) and records the events; fakePoke records
// the keys it was asked to poke.
type fakeWake struct {
	mu     sync.Mutex
	keys   []string
	err    error
	events []abi.WakeRequest
}

func (f *fakeWake) Wake(_ context.Context, kind string, ev abi.WakeRequest) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, ev)
	return f.keys, f.err
}

type fakePoke struct {
	mu    sync.Mutex
	kinds []string
	keys  [][]string
}

func (f *fakePoke) PokeKeys(_ context.Context, kind string, keys []string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.kinds = append(f.kinds, kind)
	f.keys = append(f.keys, keys)
	return len(keys), nil
}

type countMap struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *countMap) Hook(source, outcome string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[source+"/"+outcome]++
}

func (c *countMap) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k]
}

func signed(body []byte) http.Header {
	return http.Header{HeaderGitHubSignature: {SignGitHub(ghSecret, body)}, HeaderGitHubEvent: {"check_suite"}}
}

func newTestReceiver(w *fakeWake, p *fakePoke, c *countMap, queue int) *Receiver {
	return NewReceiver(ReceiverConfig{Sources: testSources(), Wake: w, Poke: p, Counter: c, Clock: fakeclock.At(t0), Queue: queue})
}

func TestReceiverWakesAndPokes(t *testing.T) {
	w, p, c := &fakeWake{keys: []string{"https://forge/repos/o/r/commits/abc"}}, &fakePoke{}, &countMap{}
	r := newTestReceiver(w, p, c, 4)
	stop := lifecycle.Go(context.Background(), r.Run)
	defer stop()
	body := []byte(`{"action":"completed"}`)
	if queued, err := r.Accept("github", signed(body), body); err != nil || !queued {
		t.Fatalf("Accept = %v, %v", queued, err)
	}
	waitHandled(t, r, 1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.keys) != 1 || p.kinds[0] != "ci" || p.keys[0][0] != "https://forge/repos/o/r/commits/abc" {
		t.Fatalf("poked %v %v", p.kinds, p.keys)
	}
	if w.events[0].Event != "check_suite" || w.events[0].Source != abi.SourceGitHub || string(w.events[0].Body) != string(body) {
		t.Fatalf("woke with %+v", w.events[0])
	}
	if c.get("github/accepted") != 1 || c.get("github/woken") != 1 {
		t.Fatalf("counts %v", c.m)
	}
}

// TestReceiverForgedNothingWoken: a forged signature is refused and
// counted, and its event reaches no wake.
func TestReceiverForgedNothingWoken(t *testing.T) {
	w, p, c := &fakeWake{keys: []string{"k"}}, &fakePoke{}, &countMap{}
	r := newTestReceiver(w, p, c, 4)
	body := []byte(`{"action":"completed"}`)
	if _, err := r.Accept("github", signed([]byte(`{"action":"other"}`)), body); !errors.Is(err, ErrUnverified) {
		t.Fatalf("Accept = %v", err)
	}
	if _, err := r.Accept("nope", signed(body), body); !errors.Is(err, ErrUnknownSource) {
		t.Fatalf("Accept = %v", err)
	}
	if len(r.queue) != 0 || c.get("github/unverified") != 1 || c.get("unknown/unverified") != 1 {
		t.Fatalf("queued %d, counts %v", len(r.queue), c.m)
	}
}

// TestReceiverQueueBound: a full queue refuses with ErrBusy rather than
// growing.
func TestReceiverQueueBound(t *testing.T) {
	c := &countMap{}
	r := newTestReceiver(&fakeWake{}, &fakePoke{}, c, 2)
	body := []byte(`{}`)
	for i := range 2 {
		if _, err := r.Accept("github", signed(body), body); err != nil {
			t.Fatal(i, err)
		}
	}
	if _, err := r.Accept("github", signed(body), body); !errors.Is(err, ErrBusy) {
		t.Fatalf("the third: %v, want ErrBusy", err)
	}
	if len(r.queue) != 2 || c.get("github/busy") != 1 {
		t.Fatalf("queued %d, counts %v", len(r.queue), c.m)
	}
}

// TestReceiverFaultWakesNothing: a wake that fails pokes nothing and is
// counted.
func TestReceiverFaultWakesNothing(t *testing.T) {
	w, p, c := &fakeWake{keys: []string{"k"}, err: errors.New("plugin fault")}, &fakePoke{}, &countMap{}
	r := newTestReceiver(w, p, c, 4)
	stop := lifecycle.Go(context.Background(), r.Run)
	defer stop()
	body := []byte(`{}`)
	if _, err := r.Accept("github", signed(body), body); err != nil {
		t.Fatal(err)
	}
	waitHandled(t, r, 1)
	if len(p.keys) != 0 || c.get("github/fault") != 1 {
		t.Fatalf("poked %v, counts %v", p.keys, c.m)
	}
}

// TestReceiverReplayAccepted: a Standard Webhooks retry of an event
// already taken is answered without queueing it again.
func TestReceiverReplayAccepted(t *testing.T) {
	c := &countMap{}
	r := newTestReceiver(&fakeWake{}, &fakePoke{}, c, 4)
	body := []byte(`{"type":"url.changed"}`)
	h := stdHeaders(t, "msg_1", t0, body)
	for i, want := range []bool{true, false} {
		queued, err := r.Accept("standard", h, body)
		if err != nil || queued != want {
			t.Fatalf("%d: %v %v", i, queued, err)
		}
	}
	if len(r.queue) != 1 || c.get("standard/replayed") != 1 {
		t.Fatalf("queued %d, counts %v", len(r.queue), c.m)
	}
}

func waitHandled(t *testing.T, r *Receiver, n uint64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for r.Handled() < n {
		if time.Now().After(deadline) {
			t.Fatalf("handled %d of %d", r.Handled(), n)
		}
		time.Sleep(time.Millisecond)
	}
}
