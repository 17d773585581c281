//go:build !wasip1

package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/api/client"
)

// flaky answers each request with the next of its answers ("unavailable",
// "busy", "reset", "invalid", "ok"), the last one once they run out, and
// keeps each request's Idempotency-Key.
type flaky struct {
	mu      sync.Mutex
	answers []string
	keys    []string
	paths   []string
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.keys = append(f.keys, r.Header.Get(api.HeaderIdempotencyKey))
	f.paths = append(f.paths, r.Method+" "+r.URL.Path)
	a := f.answers[min(len(f.keys), len(f.answers))-1]
	f.mu.Unlock()
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	switch a {
	case "unavailable", "busy":
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, `{"error":{"code":"store_%s","message":"not now"}}`, a)
	case "reset":
		// The request arrived; its answer never does.
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			_ = conn.Close()
		}
	case "invalid":
		w.WriteHeader(http.StatusUnprocessableEntity)
		fmt.Fprint(w, `{"error":{"code":"invalid_params","message":"no"}}`)
	case "502", "503", "504", "500", "413":
		// A proxy in front of the host answering for it, in its own
		// words: no envelope.
		var code int
		_, _ = fmt.Sscan(a, &code)
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(code)
		fmt.Fprintf(w, "<html><body><h1>%d %s</h1></body></html>", code, http.StatusText(code))
	default:
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"id":"w1","kind":"ci","state":"pending"}`)
	}
}

func (f *flaky) seen() (keys, paths []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.keys...), append([]string(nil), f.paths...)
}

var fast = client.WithRetry(client.Retry{Attempts: 5, Within: 10 * time.Second, Backoff: time.Millisecond})

var hexKey = regexp.MustCompile(`^"[0-9a-f]{32}"$`)

// A creating call sent again after a 503 store_unavailable, a 503
// store_busy and an answer lost to a reset connection carries the same
// key each time, a fresh 128-bit one, and returns the answer that came.
func TestCreatingCallsRetryUnderOneKey(t *testing.T) {
	f := &flaky{answers: []string{"unavailable", "busy", "reset", "ok"}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	c := client.New(srv.URL, fast)
	w, err := c.CreateWatch(context.Background(), api.WatchRequest{Kind: "ci", Recipient: api.RecipientRef{ID: "a"}})
	if err != nil || w.ID != "w1" {
		t.Fatalf("%+v %v", w, err)
	}
	keys, _ := f.seen()
	if len(keys) != 4 {
		t.Fatalf("%d attempts, want 4", len(keys))
	}
	for _, k := range keys {
		if k != keys[0] || !hexKey.MatchString(k) {
			t.Fatalf("keys %q: want one fresh 128-bit key on every attempt", keys)
		}
	}
	// The next call has a key of its own.
	if _, err := c.CreateWatch(context.Background(), api.WatchRequest{Kind: "ci"}); err != nil {
		t.Fatal(err)
	}
	if keys, _ := f.seen(); keys[4] == keys[0] {
		t.Fatal("two calls shared a key")
	}
}

// A gateway in front of the host (a reverse proxy, a load balancer) that
// answers 502, 503 or 504 in its own words has not given the host's
// answer: the request may have been written, or never arrived. Such an
// answer is a lost one, sent again under the same key. Any other answer
// without the API's envelope (a 500, a proxy's 413) is returned as it
// came.
func TestAGatewaysAnswerIsALostAnswer(t *testing.T) {
	f := &flaky{answers: []string{"502", "503", "504", "ok"}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	w, err := client.New(srv.URL, fast).CreateWatch(context.Background(), api.WatchRequest{Kind: "ci", Recipient: api.RecipientRef{ID: "a"}})
	if err != nil || w.ID != "w1" {
		t.Fatalf("%+v %v", w, err)
	}
	keys, _ := f.seen()
	if len(keys) != 4 || keys[0] != keys[3] || !hexKey.MatchString(keys[0]) {
		t.Fatalf("keys %q: want four attempts under one key", keys)
	}
	for _, answer := range []string{"500", "413"} {
		f := &flaky{answers: []string{answer, "ok"}}
		srv := httptest.NewServer(f)
		_, err := client.New(srv.URL, fast).CreateWatch(context.Background(), api.WatchRequest{Kind: "ci"})
		srv.Close()
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != api.CodeInternal {
			t.Fatalf("a bare %s: %v, want it returned as the host's internal", answer, err)
		}
		if keys, _ := f.seen(); len(keys) != 1 {
			t.Fatalf("a bare %s was sent %d times, want once", answer, len(keys))
		}
	}
}

// A caller's own key (WithIdempotencyKey) is sent, the same on every
// attempt, in place of a fresh one; one that is not a key is refused
// before anything is sent.
func TestTheCallersKeyIsSent(t *testing.T) {
	f := &flaky{answers: []string{"unavailable", "ok"}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	c := client.New(srv.URL, fast)
	ctx := client.WithIdempotencyKey(context.Background(), `my"key\`)
	if _, err := c.CreateWatch(ctx, api.WatchRequest{Kind: "ci"}); err != nil {
		t.Fatal(err)
	}
	if keys, _ := f.seen(); len(keys) != 2 || keys[0] != `"my\"key\\"` || keys[1] != keys[0] {
		t.Fatalf("keys %q: want the caller's, on both attempts", keys)
	}
	_, err := c.CreateWatch(client.WithIdempotencyKey(context.Background(), "two\nlines"), api.WatchRequest{Kind: "ci"})
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeInvalidIdempotencyKey {
		t.Fatalf("a key that is not one: %v, want invalid_idempotency_key", err)
	}
	if keys, _ := f.seen(); len(keys) != 2 {
		t.Fatalf("a key that is not one was sent: %q", keys)
	}
}

// Every creating call carries a key and retries; a call that creates
// nothing (a cancel, a read) carries none and is sent once.
func TestEveryCreatingCallIsKeyed(t *testing.T) {
	f := &flaky{answers: []string{"unavailable", "ok"}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	c := client.New(srv.URL, fast)
	ctx := context.Background()
	calls := []func() error{
		func() error { _, err := c.CreateWatch(ctx, api.WatchRequest{}); return err },
		func() error { _, err := c.Record(ctx, "s", api.ObserveRequest{}); return err },
		func() error { _, err := c.ClaimWork(ctx, "w", "a"); return err },
		func() error { _, err := c.CompleteWork(ctx, "w"); return err },
		func() error { _, err := c.ReportPhase(ctx, "a", api.PhaseRequest{Name: "build"}); return err },
		func() error { _, err := c.ReportActivity(ctx, "a", api.ActivityRequest{Replies: 1}); return err },
	}
	for i, call := range calls {
		f.mu.Lock()
		f.keys, f.paths = nil, nil
		f.mu.Unlock()
		if err := call(); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		keys, paths := f.seen()
		if len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
			t.Errorf("%s: keys %q, want one key sent twice", paths[0], keys)
		}
	}
	f.mu.Lock()
	f.keys, f.paths = nil, nil
	f.mu.Unlock()
	_, err := c.CancelWatch(ctx, "w")
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeStoreUnavailable {
		t.Fatalf("a cancel: %v, want the 503 itself", err)
	}
	if keys, _ := f.seen(); len(keys) != 1 || keys[0] != "" {
		t.Fatalf("a cancel sent %q, want once and unkeyed", keys)
	}
}

// The retries are bounded: by Attempts, by Within (a wait that would end
// past it is not waited), and by the caller's context; an answer that is
// not the store's "not now" is returned at once.
func TestRetriesAreBounded(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name    string
		answers []string
		retry   client.Retry
		tries   int
		code    string
	}{
		{"attempts", []string{"unavailable"}, client.Retry{Attempts: 3, Within: time.Minute, Backoff: time.Millisecond}, 3, api.CodeStoreUnavailable},
		{"within", []string{"unavailable"}, client.Retry{Attempts: 10, Within: 50 * time.Millisecond, Backoff: 40 * time.Millisecond}, 2, api.CodeStoreUnavailable},
		{"a refusal", []string{"invalid", "ok"}, client.DefaultRetry, 1, api.CodeInvalidParams},
		{"once", []string{"unavailable", "ok"}, client.Retry{Attempts: 1}, 1, api.CodeStoreUnavailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &flaky{answers: tt.answers}
			srv := httptest.NewServer(f)
			defer srv.Close()
			_, err := client.New(srv.URL, client.WithRetry(tt.retry)).CreateWatch(ctx, api.WatchRequest{})
			var ae *api.Error
			if !errors.As(err, &ae) || ae.Code != tt.code {
				t.Fatalf("%v, want %s", err, tt.code)
			}
			if keys, _ := f.seen(); len(keys) != tt.tries {
				t.Fatalf("%d attempts, want %d", len(keys), tt.tries)
			}
		})
	}
	// The caller's context ends the waiting at once.
	f := &flaky{answers: []string{"unavailable"}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err := client.New(srv.URL, client.WithRetry(client.Retry{Attempts: 100, Within: time.Minute, Backoff: time.Second})).CreateWatch(cctx, api.WatchRequest{})
	if err == nil || time.Since(began) > 5*time.Second {
		t.Fatalf("%v after %s, want the call to end with its context", err, time.Since(began))
	}
}

// Against the real API: a registration whose first answer is lost is
// sent again under its key and answered the first answer; one watch.
func TestALostAnswerMakesOneWatch(t *testing.T) {
	f := newFixture(t)
	var mu sync.Mutex
	lost := false
	// A proxy that lets the first registration through and drops its
	// answer.
	var target string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, target+r.URL.RequestURI(), r.Body)
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		mu.Lock()
		drop := r.Method == http.MethodPost && !lost
		lost = lost || drop
		mu.Unlock()
		if drop {
			conn, _, _ := w.(http.Hijacker).Hijack()
			_ = conn.Close()
			return
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	defer proxy.Close()
	target = f.url
	c := client.New(proxy.URL, fast)
	w, err := c.CreateWatch(context.Background(), api.WatchRequest{Kind: "ci", Params: json.RawMessage(`{}`), Recipient: api.RecipientRef{ID: "agent-9"}})
	if err != nil || !lost {
		t.Fatalf("%+v %v (an answer lost: %v)", w, err, lost)
	}
	list, err := f.c.ListWatches(context.Background(), client.WatchQuery{Recipient: "agent-9"})
	if err != nil || len(list.Watches) != 1 || list.Watches[0].ID != w.ID {
		t.Fatalf("%+v %v, want the one watch %s", list, err, w.ID)
	}
}
