package fetch

import (
	"net/http"
	"testing"
	"time"

	"github.com/vigilhq/vigil/sdk/abi"
)

const budget = time.Hour

func TestPacer(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	const o = "https://a.example:443"
	p := newPacer(time.Second, 30*time.Minute)
	expect := func(at time.Time, want time.Duration) {
		t.Helper()
		wait, ok := p.reserve(o, at, budget)
		if !ok || wait != want {
			t.Fatalf("reserve at +%s = %s, %v; want %s", at.Sub(t0), wait, ok, want)
		}
	}

	// The minimum interval: the first goes at once, the next a second on,
	// and one asking after the interval goes at once again.
	expect(t0, 0)
	expect(t0, time.Second)
	expect(t0.Add(5*time.Second), 0)

	// 429 or 503: 2 s, 4 s, 8 s, and no further.
	now := t0.Add(10 * time.Second)
	for _, step := range []time.Duration{2, 4, 8, 8, 8} {
		step *= time.Second
		expect(now, 0)
		p.refused(o, now, 0)
		expect(now, step)
		now = now.Add(step + 10*time.Second) // past the slot, within the quiet period
	}
	// The raised interval spaces ordinary requests too.
	expect(now, 0)
	expect(now, 8*time.Second)

	// A longer Retry-After is honoured for the next request.
	now = now.Add(time.Minute)
	expect(now, 0)
	p.refused(o, now, 30*time.Second)
	expect(now, 30*time.Second)

	// Quiet for the period: back to the minimum.
	now = now.Add(30*time.Minute + time.Second)
	expect(now, 0)
	expect(now, time.Second)
	p.refused(o, now.Add(time.Second), 0)
	expect(now.Add(time.Second), 2*time.Second) // the steps start over

	// Retry-After is capped at the quiet period.
	q := newPacer(time.Second, 10*time.Minute)
	q.refused(o, t0, 1000*time.Hour)
	if wait, _ := q.reserve(o, t0, 1000*time.Hour); wait != 10*time.Minute {
		t.Fatalf("an unbounded Retry-After: wait %s", wait)
	}

	// Other origins are paced on their own.
	if wait, _ := p.reserve("https://b.example:443", now, budget); wait != 0 {
		t.Fatalf("another origin waits %s", wait)
	}
}

func TestPacerWaitBeyondBudgetTakesNoSlot(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	const o = "http://a.example:80"
	p := newPacer(time.Second, 30*time.Minute)
	p.reserve(o, t0, budget)
	p.refused(o, t0, 30*time.Second)
	if wait, ok := p.reserve(o, t0, 5*time.Second); ok || wait != 30*time.Second {
		t.Fatalf("reserve with 5 s left = %s, %v; want 30s, refused", wait, ok)
	}
	// The refused request took no slot: the next with time to wait gets
	// the same one.
	if wait, ok := p.reserve(o, t0, time.Minute); !ok || wait != 30*time.Second {
		t.Fatalf("reserve with a minute left = %s, %v", wait, ok)
	}
}

func TestPacerForgetsIdleOrigins(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	p := newPacer(time.Second, 30*time.Minute)
	p.reserve("http://a:80", t0, budget)
	p.reserve("http://b:80", t0, budget)
	p.refused("http://b:80", t0, 0)
	p.reserve("http://c:80", t0.Add(time.Minute), budget)
	if _, ok := p.hosts["http://a:80"]; ok {
		t.Fatal("an idle origin is still kept")
	}
	if _, ok := p.hosts["http://b:80"]; !ok {
		t.Fatal("an origin within its quiet period was forgotten")
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"30":                            30 * time.Second,
		" 5 ":                           5 * time.Second,
		"0":                             0,
		"-3":                            0,
		"soon":                          0,
		"":                              0,
		"Tue, 01 Jan 2030 00:01:00 GMT": time.Minute,
		"Mon, 31 Dec 2029 00:00:00 GMT": 0,
	} {
		if got := retryAfter(v, now); got != want {
			t.Errorf("retryAfter(%q) = %s, want %s", v, got, want)
		}
	}
}

// Through the issuer: a 429 with Retry-After 30 paces the origin; a
// command with 5 s left is rate_limited at once, without waiting and
// without a request; one with a minute left waits its turn and goes.
func TestRateLimitedWithoutWaiting(t *testing.T) {
	srv := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/first" {
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusTooManyRequests)
		}
	})
	h := newHarness(t, Config{})
	ctx := t.Context()
	if resp := h.Fetch(ctx, get(srv.URL+"/first")); resp.Status != 429 || resp.Failure != nil {
		t.Fatalf("first: %+v", resp)
	}
	short := get(srv.URL + "/second")
	short.Request.TimeoutSeconds = 5
	if resp := h.Fetch(ctx, short); reason(resp) != abi.FetchRateLimited {
		t.Fatalf("second: %+v", resp)
	}
	if w := h.clock.Sleeps(); len(w) != 0 {
		t.Fatalf("waited %v for a request that was refused", w)
	}
	if srv.count.Load() != 1 {
		t.Fatalf("%d requests", srv.count.Load())
	}
	long := get(srv.URL + "/second")
	long.Request.TimeoutSeconds = 60
	if resp := h.Fetch(ctx, long); resp.Status != 200 {
		t.Fatalf("third: %+v", resp)
	}
	if w := h.clock.Sleeps(); len(w) != 1 || w[0] != 30*time.Second {
		t.Fatalf("waits %v, want one of 30s", w)
	}
	if srv.count.Load() != 2 {
		t.Fatalf("%d requests", srv.count.Load())
	}
}
