package fetch

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/sdk/abi"
)

// A thousand watches asking for one URL at once cause one origin
// request; after the interval, one more.
func TestCoalescing(t *testing.T) {
	release := make(chan struct{})
	srv := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		<-release
		_, _ = w.Write([]byte("shared"))
	})
	h := newHarness(t, Config{})
	ctx := t.Context()
	const n = 1000
	var wg sync.WaitGroup
	resps := make([]abi.FetchResponse, n)
	for k := range n {
		wg.Go(func() { resps[k] = h.Fetch(ctx, get(srv.URL+"/one")) })
	}
	close(release)
	wg.Wait()
	if c := srv.count.Load(); c != 1 {
		t.Fatalf("%d origin requests for %d watches", c, n)
	}
	fresh := 0
	for _, r := range resps {
		if r.Failure != nil || string(r.Body) != "shared" {
			t.Fatalf("answer %+v", r)
		}
		if !r.FromCache {
			fresh++
		}
	}
	if fresh != 1 {
		t.Fatalf("%d answers without from_cache, want the one that made the request", fresh)
	}
	if facts := h.events(t, StreamFacts); len(facts) != 1 {
		t.Fatalf("%d facts for one origin request", len(facts))
	}

	h.clock.Add(time.Second)
	if r := h.Fetch(ctx, get(srv.URL+"/one")); r.FromCache || srv.count.Load() != 2 {
		t.Fatalf("after the interval: from_cache %v, %d requests", r.FromCache, srv.count.Load())
	}
	// Another resource is its own: other headers are another request.
	other := get(srv.URL + "/one")
	other.Request.Headers = map[string]string{"Accept": "text/plain"}
	h.clock.Add(time.Second)
	if r := h.Fetch(ctx, other); r.FromCache || srv.count.Load() != 3 {
		t.Fatalf("other headers: from_cache %v, %d requests", r.FromCache, srv.count.Load())
	}
}

// A failure is held for the interval like a success.
func TestFailuresAreHeld(t *testing.T) {
	srv := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	h := newHarness(t, Config{})
	ctx := t.Context()
	first := h.Fetch(ctx, get(srv.URL+"/down"))
	if first.Status != 503 || first.FromCache {
		t.Fatalf("first: %+v", first)
	}
	h.clock.Add(999 * time.Millisecond)
	held := h.Fetch(ctx, get(srv.URL+"/down"))
	if held.Status != 503 || !held.FromCache || srv.count.Load() != 1 {
		t.Fatalf("within the interval: %+v, %d requests", held, srv.count.Load())
	}
	h.clock.Add(time.Millisecond)
	again := h.Fetch(ctx, get(srv.URL+"/down"))
	if again.FromCache || srv.count.Load() != 2 {
		t.Fatalf("after the interval: %+v, %d requests", again, srv.count.Load())
	}
	// The 503 raised the origin's interval to 2 s: the second request
	// waited the second the interval left.
	if w := h.clock.Sleeps(); len(w) != 1 || w[0] != time.Second {
		t.Fatalf("waits %v", w)
	}
	facts := h.events(t, StreamFacts)
	if len(facts) != 2 || facts[0].Type != TypeFailed || !strings.Contains(string(facts[0].Payload), `"reason":"http_status"`) {
		t.Fatalf("facts %d, first %s", len(facts), facts[0].Payload)
	}
}

// etagOrigin answers 304 to the current ETag and 200 with it otherwise.
func etagOrigin(t *testing.T, etag *string, mu *sync.Mutex) *origin {
	return newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tag := *etag
		mu.Unlock()
		if r.Header.Get("If-None-Match") == tag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", tag)
		w.Header().Set("Last-Modified", "Wed, 21 Oct 2015 07:28:00 GMT")
		_, _ = w.Write([]byte("body of " + tag))
	})
}

func TestRevalidation(t *testing.T) {
	var mu sync.Mutex
	etag := `"v1"`
	srv := etagOrigin(t, &etag, &mu)
	h := newHarness(t, Config{})
	ctx := t.Context()
	first := h.Fetch(ctx, get(srv.URL+"/doc"))
	if first.Status != 200 || first.NotModified || string(first.Body) != `body of "v1"` {
		t.Fatalf("first: %+v", first)
	}
	if srv.last().Get("If-None-Match") != "" {
		t.Fatal("the first request was conditional")
	}

	h.clock.Add(time.Second)
	second := h.Fetch(ctx, get(srv.URL+"/doc"))
	if got := srv.last(); got.Get("If-None-Match") != `"v1"` || got.Get("If-Modified-Since") != "Wed, 21 Oct 2015 07:28:00 GMT" {
		t.Fatalf("revalidation sent if-none-match %q, if-modified-since %q", got.Get("If-None-Match"), got.Get("If-Modified-Since"))
	}
	if !second.NotModified || second.FromCache || second.Status != 200 || string(second.Body) != `body of "v1"` ||
		second.Headers["etag"] != `"v1"` || second.Fingerprint != first.Fingerprint {
		t.Fatalf("a 304 answered %+v", second)
	}
	facts := h.events(t, StreamFacts)
	if len(facts) != 2 || !strings.Contains(string(facts[1].Payload), `"not_modified":true`) {
		t.Fatalf("facts %d", len(facts))
	}

	// The resource changes: the new body, and its validators from then on.
	mu.Lock()
	etag = `"v2"`
	mu.Unlock()
	h.clock.Add(time.Second)
	if third := h.Fetch(ctx, get(srv.URL+"/doc")); third.NotModified || string(third.Body) != `body of "v2"` {
		t.Fatalf("changed: %+v", third)
	}
	h.clock.Add(time.Second)
	h.Fetch(ctx, get(srv.URL+"/doc"))
	if srv.last().Get("If-None-Match") != `"v2"` {
		t.Fatal("the new validator was not kept")
	}
}

// A stored validator that could not be sent (kept under an older screen,
// say) is not sent: the request goes out unconditional, and succeeds.
func TestUnsendableStoredValidatorIsNotSent(t *testing.T) {
	var mu sync.Mutex
	etag := `"v1"`
	srv := etagOrigin(t, &etag, &mu)
	h := newHarness(t, Config{})
	ctx := t.Context()
	call := get(srv.URL + "/doc")
	h.Fetch(ctx, call)
	cmd, err := Screen(call.Request, 0)
	if err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	r := h.cache.m[resourceKey(cmd)]
	if r == nil || r.etag != `"v1"` || r.stored == nil {
		h.mu.Unlock()
		t.Fatal("nothing stored")
	}
	r.etag, r.lastModified = "\"v1\x01\"", "Wed, 21 Oct 2015\r\n07:28:00 GMT"
	h.mu.Unlock()

	h.clock.Add(time.Second)
	resp := h.Fetch(ctx, call)
	if resp.Failure != nil || resp.NotModified || resp.Status != 200 {
		t.Fatalf("answer %+v", resp)
	}
	if got := srv.last(); got.Get("If-None-Match") != "" || got.Get("If-Modified-Since") != "" {
		t.Fatalf("sent if-none-match %q, if-modified-since %q", got.Get("If-None-Match"), got.Get("If-Modified-Since"))
	}
}

// invalid_request_options, and that reason alone, clears the stored
// validators of the refused URL.
func TestInvalidRequestOptionsClearsValidators(t *testing.T) {
	var mu sync.Mutex
	etag := `"v1"`
	srv := etagOrigin(t, &etag, &mu)
	h := newHarness(t, Config{Secrets: map[string]string{"gh": "tok"}})
	ctx := t.Context()
	url := srv.URL + "/doc"
	h.Fetch(ctx, get(url))

	// Another refusal for the URL, not_granted, keeps them.
	notGranted := get(url)
	notGranted.Request.Secret = "gh"
	if reason(h.Fetch(ctx, notGranted)) != abi.FetchNotGranted {
		t.Fatal("want not_granted")
	}
	h.clock.Add(time.Second)
	h.Fetch(ctx, get(url))
	if srv.last().Get("If-None-Match") != `"v1"` {
		t.Fatal("not_granted cleared the validators")
	}

	refused := plugin.FetchCall{Kind: "probe", Entry: loopback(), Request: abi.FetchRequest{Method: "GET", URL: url + "#frag", Headers: map[string]string{"Te": "trailers"}}}
	if reason(h.Fetch(ctx, refused)) != abi.FetchInvalidRequestOptions {
		t.Fatal("want invalid_request_options")
	}
	h.clock.Add(time.Second)
	resp := h.Fetch(ctx, get(url))
	if srv.last().Get("If-None-Match") != "" || resp.NotModified || resp.Status != 200 {
		t.Fatalf("after the refusal the request was conditional: %+v", resp)
	}
}

// Room is made by dropping entries that are no longer fresh, the first to
// have stopped being fresh first; never a fresh one. When every other
// entry is fresh, the new result is not kept.
func TestCacheBounds(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	body := func(n int) *abi.FetchResponse { return &abi.FetchResponse{Status: 200, Body: make([]byte, n)} }
	c := newCache(time.Second, 11_000)
	bBody := body(3000)
	// a is fresh for a minute (a watch at 1m read it), b and c for a
	// second.
	if !c.put("a", "u", t0, update{held: body(3000)}, time.Minute) ||
		!c.put("b", "u", t0, update{held: bBody, stored: bBody, etag: `"b"`}, 0) ||
		!c.put("c", "u", t0.Add(500*time.Millisecond), update{held: body(3000)}, 0) {
		t.Fatal("an entry was refused under the bound")
	}
	// At t0+0.9s every entry is fresh: d is not kept, and nothing is
	// dropped for it.
	if c.put("d", "u", t0.Add(900*time.Millisecond), update{held: body(3000)}, 0) {
		t.Fatal("d was kept")
	}
	if len(c.m) != 3 || c.m["d"] != nil || c.bytes > c.maxBytes {
		t.Fatalf("after refusing d: %d entries, %d bytes", len(c.m), c.bytes)
	}
	// At t0+1.2s b is stale (c is fresh until t0+1.5s, a until t0+1m):
	// b goes, although it was used more recently than a.
	if _, ok := c.fresh("a", t0.Add(1200*time.Millisecond), time.Minute); !ok {
		t.Fatal("a not served")
	}
	if !c.put("e", "u", t0.Add(1200*time.Millisecond), update{held: body(3000)}, 0) {
		t.Fatal("e was not kept with a stale entry to drop")
	}
	if c.m["b"] != nil || c.m["a"] == nil || c.m["c"] == nil || c.m["e"] == nil || c.bytes > c.maxBytes {
		t.Fatalf("entries %v, %d bytes", keys(c), c.bytes)
	}
	if c.order.Len() != len(c.m) {
		t.Fatalf("order %d, map %d", c.order.Len(), len(c.m))
	}
	// A stale entry stays while there is room: a reader with a longer
	// cadence is still served by it.
	if _, ok := c.fresh("c", t0.Add(30*time.Second), time.Minute); !ok {
		t.Fatal("a stale entry was not kept for a slower reader")
	}
}

// An entry is fresh for the longest cadence among the readers it was
// fetched for or served, this generation or the one before: a result a
// one-second reader fetched and a one-minute reader was then served is
// not dropped for room within the minute, nor is the next result a
// one-second reader fetches for it.
func TestFreshnessFollowsTheSlowestReader(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	body := func(n int) *abi.FetchResponse { return &abi.FetchResponse{Status: 200, Body: make([]byte, n)} }
	c := newCache(time.Second, 8_000)
	c.put("x", "u", t0, update{held: body(3000)}, 0)
	if _, ok := c.fresh("x", t0.Add(500*time.Millisecond), time.Minute); !ok {
		t.Fatal("x not served")
	}
	c.put("y", "u", t0.Add(2*time.Second), update{held: body(3000)}, time.Minute)
	if c.put("z", "u", t0.Add(3*time.Second), update{held: body(3000)}, 0) || c.m["x"] == nil {
		t.Fatalf("x, served to a one-minute reader, was dropped for room: %v", keys(c))
	}
	// A one-second reader fetches x again: the minute reader of the
	// generation before still counts.
	c.put("x", "u", t0.Add(4*time.Second), update{held: body(3000)}, 0)
	if c.put("z", "u", t0.Add(6*time.Second), update{held: body(3000)}, 0) || c.m["x"] == nil {
		t.Fatalf("x was dropped for room: %v", keys(c))
	}
}

func keys(c *cache) []string {
	var out []string
	for k := range c.m {
		out = append(out, k)
	}
	return out
}

// Four watches of one issue at a one-minute cadence, probed 15 s apart
// for two minutes, cost two origin reads: a held result serves a reader
// while it is younger than that reader's own cadence, not only the
// issuer's 1 s interval. A reader with a shorter cadence is not served a
// result older than its own.
func TestOneReadPerResourcePerCadence(t *testing.T) {
	srv := newOrigin(t, nil)
	h := newHarness(t, Config{})
	ctx := t.Context()
	issue := get(srv.URL + "/repos/o/r/issues/7")
	issue.Every = time.Minute
	for probe := range 8 { // watches 1..4, then 1..4 again: t = 0, 15, …, 105 s
		if r := h.Fetch(ctx, issue); r.Failure != nil || string(r.Body) != "hello" {
			t.Fatalf("probe %d: %+v", probe, r)
		}
		h.clock.Add(15 * time.Second)
	}
	if n := srv.count.Load(); n != 2 {
		t.Fatalf("%d origin reads for four watches over two minutes, want 2", n)
	}

	// t = 120 s, read at 120 s. A 10 s watch at 135 s finds it 15 s old:
	// too old for it, so it reads.
	h.Fetch(ctx, issue)
	h.clock.Add(15 * time.Second)
	fast := issue
	fast.Every = 10 * time.Second
	if r := h.Fetch(ctx, fast); r.FromCache || srv.count.Load() != 4 {
		t.Fatalf("a 10 s watch was served a 15 s old result: %+v, %d reads", r, srv.count.Load())
	}
}

// A failure is held for the reader's cadence like a success.
func TestFailuresAreHeldForTheCadence(t *testing.T) {
	srv := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	})
	h := newHarness(t, Config{})
	ctx := t.Context()
	call := get(srv.URL + "/down")
	call.Every = time.Minute
	h.Fetch(ctx, call)
	h.clock.Add(59 * time.Second)
	if r := h.Fetch(ctx, call); r.Status != 502 || !r.FromCache || srv.count.Load() != 1 {
		t.Fatalf("within the cadence: %+v, %d reads", r, srv.count.Load())
	}
	h.clock.Add(time.Second)
	if r := h.Fetch(ctx, call); r.FromCache || srv.count.Load() != 2 {
		t.Fatalf("after the cadence: %+v, %d reads", r, srv.count.Load())
	}
}

// countingMetrics counts what the issuer reports.
type countingMetrics struct{ notHeld atomic.Int64 }

func (m *countingMetrics) FetchNotHeld() { m.notHeld.Add(1) }

// With the cache full of fresh results, a new resource's result is not
// held (each of its reads goes to the origin, and is counted), and the
// fresh ones keep serving without a read.
func TestFullCacheKeepsFreshEntries(t *testing.T) {
	srv := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(make([]byte, 3000))
	})
	m := &countingMetrics{}
	h := newHarness(t, Config{MaxBody: 4000, MaxCacheBytes: 8000, Metrics: m})
	ctx := t.Context()
	at := func(path string) plugin.FetchCall {
		c := get(srv.URL + path)
		c.Every = time.Minute
		return c
	}
	h.Fetch(ctx, at("/a"))
	h.Fetch(ctx, at("/b"))
	h.clock.Add(10 * time.Second)
	for range 2 {
		if r := h.Fetch(ctx, at("/c")); r.FromCache || r.Failure != nil {
			t.Fatalf("c: %+v", r)
		}
	}
	if n := srv.count.Load(); n != 4 || m.notHeld.Load() != 2 {
		t.Fatalf("%d reads, %d not held; want 4 and 2", n, m.notHeld.Load())
	}
	for _, p := range []string{"/a", "/b"} {
		if r := h.Fetch(ctx, at(p)); !r.FromCache {
			t.Fatalf("%s was dropped to make room: %+v", p, r)
		}
	}
	if n := srv.count.Load(); n != 4 {
		t.Fatalf("%d reads", n)
	}
}

// A flight that starts after another one for its resource ended (the
// caller looked at the hold just before it was filled) answers the held
// result and makes no request.
func TestFlightRechecksTheHold(t *testing.T) {
	srv := newOrigin(t, nil)
	h := newHarness(t, Config{})
	ctx := t.Context()
	call := get(srv.URL + "/x")
	if r := h.Fetch(ctx, call); r.Failure != nil {
		t.Fatal(r.Failure)
	}
	cmd, err := Screen(call.Request, 0)
	if err != nil {
		t.Fatal(err)
	}
	o := h.issue(ctx, occasionOf("late", "probe", cmd), call, cmd, resourceKey(cmd), time.Second)
	if !o.held || string(o.resp.Body) != "hello" || srv.count.Load() != 1 {
		t.Fatalf("late flight: held %v, %d requests", o.held, srv.count.Load())
	}
	if facts := h.events(t, StreamFacts); len(facts) != 1 {
		t.Fatalf("%d facts", len(facts))
	}
}

// A plugin that could not extract what it needs from an answer tells the
// host, which forgets that answer's validators: the next fetch is
// unconditional, so a 304 cannot re-confirm the broken extraction. A
// report about other bytes than the stored ones forgets nothing.
func TestExtractionFailedForgetsValidators(t *testing.T) {
	var mu sync.Mutex
	etag := `"v1"`
	srv := etagOrigin(t, &etag, &mu)
	h := newHarness(t, Config{})
	ctx := t.Context()
	call := get(srv.URL + "/doc")
	first := h.Fetch(ctx, call)
	report := func(fp string) abi.ExtractionFailedResponse {
		return h.ExtractionFailed(ctx, plugin.ExtractionCall{Kind: call.Kind, Entry: call.Entry,
			Request: abi.ExtractionFailedRequest{Request: call.Request, Fingerprint: fp}})
	}

	// Other bytes (a later answer's, say): the stored validators stay.
	if r := report(fingerprint([]byte("other bytes"))); r.Forgot || r.Failure != nil {
		t.Fatalf("a report on other bytes: %+v", r)
	}
	h.clock.Add(time.Second)
	if r := h.Fetch(ctx, call); !r.NotModified || srv.last().Get("If-None-Match") != `"v1"` {
		t.Fatalf("after a report on other bytes the fetch was not conditional: %+v", r)
	}

	if r := report(first.Fingerprint); !r.Forgot || r.Failure != nil {
		t.Fatalf("report: %+v", r)
	}
	h.clock.Add(time.Second)
	r := h.Fetch(ctx, call)
	if got := srv.last(); got.Get("If-None-Match") != "" || got.Get("If-Modified-Since") != "" {
		t.Fatalf("after the report the fetch was conditional: if-none-match %q", got.Get("If-None-Match"))
	}
	if r.NotModified || r.Status != 200 || string(r.Body) != `body of "v1"` {
		t.Fatalf("after the report: %+v", r)
	}
	// The full answer stored its validators again.
	h.clock.Add(time.Second)
	if r := h.Fetch(ctx, call); !r.NotModified {
		t.Fatalf("the next fetch: %+v", r)
	}
	if facts := h.events(t, StreamFacts); len(facts) != 4 {
		t.Fatalf("%d facts: a report is no origin request", len(facts))
	}
}

// A report is screened and granted like the fetch it is about.
func TestExtractionFailedRefusals(t *testing.T) {
	h := newHarness(t, Config{})
	ctx := t.Context()
	fp := fingerprint(nil)
	for _, tc := range []struct {
		name   string
		call   plugin.ExtractionCall
		reason string
	}{
		{"no fingerprint", plugin.ExtractionCall{Kind: "probe", Entry: loopback(),
			Request: abi.ExtractionFailedRequest{Request: abi.FetchRequest{Method: "GET", URL: "http://127.0.0.1/x"}}}, abi.FetchInvalidRequestOptions},
		{"upper-case fingerprint", plugin.ExtractionCall{Kind: "probe", Entry: loopback(),
			Request: abi.ExtractionFailedRequest{Request: abi.FetchRequest{Method: "GET", URL: "http://127.0.0.1/x"}, Fingerprint: strings.ToUpper(fp)}}, abi.FetchInvalidRequestOptions},
		{"a request the screen refuses", plugin.ExtractionCall{Kind: "probe", Entry: loopback(),
			Request: abi.ExtractionFailedRequest{Request: abi.FetchRequest{Method: "POST", URL: "http://127.0.0.1/x"}, Fingerprint: fp}}, abi.FetchInvalidRequestOptions},
		{"a host not granted", plugin.ExtractionCall{Kind: "probe", Entry: loopback(),
			Request: abi.ExtractionFailedRequest{Request: abi.FetchRequest{Method: "GET", URL: "http://example.org/x"}, Fingerprint: fp}}, abi.FetchNotGranted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.ExtractionFailed(ctx, tc.call)
			if r.Forgot || r.Failure == nil || r.Failure.Reason != tc.reason {
				t.Fatalf("answer %+v %+v", r, r.Failure)
			}
		})
	}
	if dls, _ := h.DeadLetters(ctx, 0, 10); len(dls) != 0 {
		t.Fatalf("a refused report was dead-lettered: %+v", dls)
	}
}
