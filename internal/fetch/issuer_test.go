package fetch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// Every row of the refusal table, through the issuer: refused as
// invalid_request_options, nothing reaches the origin, a fact and a dead
// letter are written, and no header value reaches either or the log.
func TestFetchRefusalTable(t *testing.T) {
	srv := newOrigin(t, nil)
	h := newHarness(t, Config{Secrets: map[string]string{"gh": "tok-SECRET-VALUE"}})
	entry := loopback()
	entry.Secrets = []string{"gh"}
	ctx := t.Context()
	for n, row := range refusalRows(srv.URL) {
		t.Run(row.name, func(t *testing.T) {
			resp := h.Fetch(ctx, plugin.FetchCall{Kind: "probe", Entry: entry, Request: row.req})
			if reason(resp) != abi.FetchInvalidRequestOptions {
				t.Fatalf("answer %+v, want invalid_request_options", resp)
			}
			if resp.Status != 0 || resp.Body != nil || resp.FromCache {
				t.Fatalf("a refusal carries a response: %+v", resp)
			}
			if c := srv.count.Load(); c != 0 {
				t.Fatalf("%d requests reached the origin", c)
			}
			dls, err := h.DeadLetters(ctx, 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if len(dls) != n+1 {
				t.Fatalf("%d dead letters after %d refusals", len(dls), n+1)
			}
			dl := dls[n]
			if dl.Reason != abi.FetchInvalidRequestOptions || dl.Kind != "probe" || dl.CommandID == "" || dl.Method != clip(row.req.Method) || dl.Message != resp.Failure.Message {
				t.Fatalf("dead letter %+v", dl)
			}
			if len(dl.HeaderNames) != min(len(row.req.Headers), MaxHeaders+1) {
				t.Fatalf("dead letter names %d headers, the command had %d", len(dl.HeaderNames), len(row.req.Headers))
			}
			if _, err := h.log.EventByKey(ctx, StreamFacts, dl.CommandID+":"+dl.OccurredAt.UTC().Format(time.RFC3339Nano)); err != nil {
				t.Fatalf("no fetch.failed fact for the refusal: %v", err)
			}
		})
	}
	all := h.everything(t)
	for _, secret := range []string{sentinel, "SSSS", "user:pw", "tok-SECRET-VALUE"} {
		if strings.Contains(all, secret) {
			t.Fatalf("%q reached a fact, a dead letter or the log", secret)
		}
	}
}

// The accepted edges of the table, as the origin receives them.
func TestFetchAcceptedEdges(t *testing.T) {
	srv := newOrigin(t, nil)
	h := newHarness(t, Config{})
	ctx := t.Context()
	for _, tc := range []struct {
		name    string
		headers map[string]string
		check   func(t *testing.T, got http.Header)
	}{
		{"default user-agent", nil, func(t *testing.T, got http.Header) {
			if ua := got.Values("User-Agent"); len(ua) != 1 || ua[0] != "vigil" {
				t.Fatalf("user-agent lines %q, want exactly [vigil]", ua)
			}
		}},
		{"a capitalised User-Agent replaces the default", map[string]string{"User-Agent": "Mine/1.0 (+https://x.example)"}, func(t *testing.T, got http.Header) {
			if ua := got.Values("User-Agent"); len(ua) != 1 || ua[0] != "Mine/1.0 (+https://x.example)" {
				t.Fatalf("user-agent lines %q, want exactly the plugin's", ua)
			}
		}},
		{"a lower-case user-agent replaces the default", map[string]string{"user-agent": "low/1"}, func(t *testing.T, got http.Header) {
			if ua := got.Values("User-Agent"); len(ua) != 1 || ua[0] != "low/1" {
				t.Fatalf("user-agent lines %q", ua)
			}
		}},
		{"inner spaces sent as is", map[string]string{"X-Q": "a  b   c"}, func(t *testing.T, got http.Header) {
			if v := got.Values("X-Q"); len(v) != 1 || v[0] != "a  b   c" {
				t.Fatalf("x-q %q", v)
			}
		}},
		{"surrounding whitespace trimmed", map[string]string{"Accept": "  text/html\t "}, func(t *testing.T, got http.Header) {
			if v := got.Values("Accept"); len(v) != 1 || v[0] != "text/html" {
				t.Fatalf("accept %q", v)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := srv.count.Load()
			call := get(srv.URL + "/edge")
			call.Request.Headers = tc.headers
			resp := h.Fetch(ctx, call)
			if resp.Failure != nil || resp.Status != 200 {
				t.Fatalf("answer %+v", resp)
			}
			if srv.count.Load() != before+1 {
				t.Fatal("no request reached the origin")
			}
			tc.check(t, srv.last())
		})
	}
}

func TestNotGranted(t *testing.T) {
	srv := newOrigin(t, nil)
	h := newHarness(t, Config{Secrets: map[string]string{"gh": "tok-SECRET-VALUE", "other": "x"}})
	ctx := t.Context()
	for _, tc := range []struct {
		name    string
		call    plugin.FetchCall
		setting string
	}{
		{"host not granted", plugin.FetchCall{Kind: "probe", Entry: plugin.Entry{FetchHosts: []string{"example.org"}, PrivateRanges: []string{"127.0.0.1/32"}},
			Request: abi.FetchRequest{Method: "GET", URL: srv.URL}}, "kinds.probe.fetch_hosts"},
		{"no hosts at all", plugin.FetchCall{Kind: "probe", Entry: plugin.Entry{PrivateRanges: []string{"127.0.0.1/32"}},
			Request: abi.FetchRequest{Method: "GET", URL: srv.URL}}, "kinds.probe.fetch_hosts"},
		{"secret not granted to the kind", plugin.FetchCall{Kind: "probe", Entry: func() plugin.Entry { e := loopback(); e.Secrets = []string{"other"}; return e }(),
			Request: abi.FetchRequest{Method: "GET", URL: srv.URL, Secret: "gh"}}, "kinds.probe.secrets"},
		{"secret not in the host's configuration", plugin.FetchCall{Kind: "probe", Entry: func() plugin.Entry { e := loopback(); e.Secrets = []string{"missing"}; return e }(),
			Request: abi.FetchRequest{Method: "GET", URL: srv.URL, Secret: "missing"}}, "secrets.missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := h.Fetch(ctx, tc.call)
			if reason(resp) != abi.FetchNotGranted || !strings.Contains(resp.Failure.Message, tc.setting) {
				t.Fatalf("answer %+v, want not_granted naming %s", resp.Failure, tc.setting)
			}
		})
	}
	if srv.count.Load() != 0 {
		t.Fatal("a request not granted reached the origin")
	}
	if dls, _ := h.DeadLetters(ctx, 0, 100); len(dls) != 4 {
		t.Fatalf("%d dead letters, want 4", len(dls))
	}
	if strings.Contains(h.everything(t), "tok-SECRET-VALUE") {
		t.Fatal("a secret value was recorded")
	}
}

func TestDestinationGuard(t *testing.T) {
	ctx := t.Context()
	anyHost := plugin.Entry{FetchHosts: []string{"*"}}

	t.Run("a name resolving to loopback", func(t *testing.T) {
		srv := newOrigin(t, nil)
		res := staticResolver(map[string]string{"inside.test": "127.0.0.1"})
		h := newHarness(t, Config{Resolver: res})
		_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
		resp := h.Fetch(ctx, plugin.FetchCall{Kind: "probe", Entry: anyHost, Request: abi.FetchRequest{Method: "GET", URL: "http://inside.test:" + port + "/"}})
		if reason(resp) != abi.FetchDestinationRefused || !strings.Contains(resp.Failure.Message, "inside.test resolves to 127.0.0.1") {
			t.Fatalf("answer %+v", resp.Failure)
		}
		// Refused at the check, before the transport was involved: the
		// name was looked up once, not again by a dial.
		if res.calls.Load() != 1 {
			t.Fatalf("%d lookups", res.calls.Load())
		}
		if srv.count.Load() != 0 {
			t.Fatal("the request reached the loopback server")
		}
		if dls, _ := h.DeadLetters(ctx, 0, 10); len(dls) != 1 || dls[0].Reason != abi.FetchDestinationRefused {
			t.Fatalf("dead letters %+v", dls)
		}
	})

	t.Run("a literal loopback address", func(t *testing.T) {
		srv := newOrigin(t, nil)
		h := newHarness(t, Config{})
		resp := h.Fetch(ctx, plugin.FetchCall{Kind: "probe", Entry: anyHost, Request: abi.FetchRequest{Method: "GET", URL: srv.URL}})
		if reason(resp) != abi.FetchDestinationRefused || srv.count.Load() != 0 {
			t.Fatalf("answer %+v, %d requests", resp.Failure, srv.count.Load())
		}
	})

	// DNS rebinding: the name answers a public address when it is
	// checked, and loopback when the transport dials it. The dial-time
	// check refuses it.
	t.Run("a name that rebinds between the check and the dial", func(t *testing.T) {
		srv := newOrigin(t, nil)
		res := &fakeResolver{answer: func(_ string, call int64) ([]netip.Addr, error) {
			if call == 1 {
				return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
			}
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}}
		h := newHarness(t, Config{Resolver: res})
		_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
		resp := h.Fetch(ctx, plugin.FetchCall{Kind: "probe", Entry: anyHost, Request: abi.FetchRequest{Method: "GET", URL: "http://rebind.test:" + port + "/"}})
		if reason(resp) != abi.FetchDestinationRefused || !strings.Contains(resp.Failure.Message, "127.0.0.1") {
			t.Fatalf("answer %+v", resp.Failure)
		}
		if res.calls.Load() < 2 {
			t.Fatalf("resolved %d times: the dial did not resolve again", res.calls.Load())
		}
		if srv.count.Load() != 0 {
			t.Fatal("the rebound name reached the loopback server")
		}
	})

	t.Run("a redirect to the metadata address", func(t *testing.T) {
		srv := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		})
		h := newHarness(t, Config{})
		entry := loopback()
		entry.FetchHosts = []string{"*"}
		resp := h.Fetch(ctx, plugin.FetchCall{Kind: "probe", Entry: entry, Request: abi.FetchRequest{Method: "GET", URL: srv.URL + "/go"}})
		if reason(resp) != abi.FetchDestinationRefused || !strings.HasPrefix(resp.Failure.Message, "redirect to 169.254.169.254") {
			t.Fatalf("answer %+v", resp.Failure)
		}
		if srv.count.Load() != 1 {
			t.Fatalf("%d requests, want the first hop only", srv.count.Load())
		}
	})

	t.Run("a redirect to a host not granted", func(t *testing.T) {
		srv := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://elsewhere.example/", http.StatusFound)
		})
		h := newHarness(t, Config{})
		resp := h.Fetch(ctx, get(srv.URL+"/go"))
		if reason(resp) != abi.FetchNotGranted || !strings.Contains(resp.Failure.Message, "kinds.probe.fetch_hosts") {
			t.Fatalf("answer %+v", resp.Failure)
		}
	})

	t.Run("redirects within the grant are followed, up to the limit", func(t *testing.T) {
		srv := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
			var n int
			_, _ = fmt.Sscanf(r.URL.Path, "/hop/%d", &n)
			if n > 0 {
				http.Redirect(w, r, fmt.Sprintf("/hop/%d", n-1), http.StatusFound)
				return
			}
			_, _ = w.Write([]byte("arrived"))
		})
		h := newHarness(t, Config{MaxRedirects: 3})
		if resp := h.Fetch(ctx, get(srv.URL+"/hop/3")); resp.Failure != nil || string(resp.Body) != "arrived" {
			t.Fatalf("three hops: %+v", resp)
		}
		if resp := h.Fetch(ctx, get(srv.URL+"/hop/4")); reason(resp) != abi.FetchUnavailable {
			t.Fatalf("four hops: %+v", resp.Failure)
		}
	})

	t.Run("with 127.0.0.1/32 granted the loopback server is reachable", func(t *testing.T) {
		srv := newOrigin(t, nil)
		h := newHarness(t, Config{})
		resp := h.Fetch(ctx, get(srv.URL+"/"))
		if resp.Failure != nil || resp.Status != 200 || string(resp.Body) != "hello" || srv.count.Load() != 1 {
			t.Fatalf("answer %+v", resp)
		}
	})
}

// The dial is checked on its own: a dialer whose guard refuses loopback
// refuses a literal loopback address it is handed.
func TestDialerChecksEveryAddress(t *testing.T) {
	srv := newOrigin(t, nil)
	h := newHarness(t, Config{})
	dial := h.dialer(h.route(nil).guard)
	c, err := dial(t.Context(), "tcp", srv.Listener.Addr().String())
	if err == nil {
		_ = c.Close()
		t.Fatal("the guarded dialer connected to loopback")
	}
	if e := classify(err); e.Reason != abi.FetchDestinationRefused {
		t.Fatalf("dial error %v classified %s", err, e.Reason)
	}
	allowed := h.dialer(h.route([]string{"127.0.0.1/32"}).guard)
	c, err = allowed(t.Context(), "tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
}

// An attached secret reaches the origin as a bearer authorization, and
// nowhere else: not the response, not a fact, not a log line. Header
// values are never recorded either.
func TestSecretAndHeaderValuesStayOnTheWire(t *testing.T) {
	const secret = "s3cr3t-TOKEN-VALUE"
	const value = "header-VALUE-sentinel"
	var gotAuth, gotCustom string
	var mu sync.Mutex
	srv := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gotAuth, gotCustom = r.Header.Get("Authorization"), r.Header.Get("X-Custom")
		mu.Unlock()
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusForbidden)
		}
		_, _ = w.Write([]byte("body"))
	})
	h := newHarness(t, Config{Secrets: map[string]string{"gh": secret}})
	entry := loopback()
	entry.Secrets = []string{"gh"}
	ctx := t.Context()
	for _, path := range []string{"/ok", "/fail"} {
		resp := h.Fetch(ctx, plugin.FetchCall{Kind: "probe", Entry: entry, Request: abi.FetchRequest{
			Method: "GET", URL: srv.URL + path, Secret: "gh", Headers: map[string]string{"X-Custom": value}}})
		mu.Lock()
		if gotAuth != "Bearer "+secret || gotCustom != value {
			t.Fatalf("%s: the origin got authorization %q, x-custom %q", path, gotAuth, gotCustom)
		}
		mu.Unlock()
		b, _ := json.Marshal(resp)
		if strings.Contains(string(b), secret) {
			t.Fatalf("%s: the secret is in the response", path)
		}
	}
	// A refused command with the same header value, and a failing log line.
	h.Fetch(ctx, plugin.FetchCall{Kind: "probe", Entry: entry, Request: abi.FetchRequest{
		Method: "GET", URL: srv.URL + "/refused", Secret: "gh", Headers: map[string]string{"X-Custom": value, "Upgrade": value}}})
	all := h.everything(t)
	for _, s := range []string{secret, value} {
		if strings.Contains(all, s) {
			t.Fatalf("%q reached a fact or the log:\n%s", s, all)
		}
	}
	if !strings.Contains(all, "x-custom") {
		t.Fatal("header names were not recorded")
	}
	if len(h.events(t, StreamFacts)) != 3 {
		t.Fatalf("%d facts, want 3", len(h.events(t, StreamFacts)))
	}
}

// A secret does not follow a redirect to another host, another port or
// another scheme: net/http alone would copy it to the same name on
// another port, or to a subdomain.
func TestSecretDoesNotFollowARedirectElsewhere(t *testing.T) {
	var mu sync.Mutex
	var auth []string
	record := func(r *http.Request) {
		mu.Lock()
		auth = append(auth, r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
	}
	other := newOrigin(t, func(w http.ResponseWriter, r *http.Request) { record(r) })
	srv := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		record(r)
		switch r.URL.Path {
		case "/go":
			http.Redirect(w, r, other.URL+"/there", http.StatusFound)
		case "/same":
			http.Redirect(w, r, "/here", http.StatusFound)
		}
	})
	h := newHarness(t, Config{Secrets: map[string]string{"gh": "tok"}})
	entry := loopback()
	entry.Secrets = []string{"gh"}
	for _, path := range []string{"/go", "/same"} {
		resp := h.Fetch(t.Context(), plugin.FetchCall{Kind: "probe", Entry: entry, Request: abi.FetchRequest{Method: "GET", URL: srv.URL + path, Secret: "gh"}})
		if resp.Failure != nil {
			t.Fatal(resp.Failure)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"/go Bearer tok", "/there ", "/same Bearer tok", "/here Bearer tok"}
	if fmt.Sprint(auth) != fmt.Sprint(want) {
		t.Fatalf("authorization per hop: %q, want %q", auth, want)
	}
}

func TestFactKeys(t *testing.T) {
	srv := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/gone" {
			w.WriteHeader(http.StatusGone)
		}
		_, _ = w.Write([]byte("x"))
	})
	h := newHarness(t, Config{})
	ctx := t.Context()
	h.Fetch(ctx, get(srv.URL+"/ok"))
	h.Fetch(ctx, get(srv.URL+"/gone"))
	h.Fetch(ctx, get("ftp://nope/"))
	evs := h.events(t, StreamFacts)
	if len(evs) != 3 {
		t.Fatalf("%d facts", len(evs))
	}
	var ok struct {
		CommandID   string `json:"command_id"`
		Status      int    `json:"status"`
		Fingerprint string `json:"fingerprint"`
		Bytes       int    `json:"bytes"`
		URL         string `json:"url"`
	}
	if err := json.Unmarshal(evs[0].Payload, &ok); err != nil {
		t.Fatal(err)
	}
	if evs[0].Type != TypeSucceeded || evs[0].Key != ok.CommandID || ok.CommandID == "" || ok.Status != 200 || ok.Bytes != 1 ||
		ok.Fingerprint != fingerprint([]byte("x")) || ok.URL != srv.URL+"/ok" {
		t.Fatalf("success fact %s %s %+v", evs[0].Type, evs[0].Key, ok)
	}
	for _, e := range evs[1:] {
		var f struct {
			CommandID  string    `json:"command_id"`
			Reason     string    `json:"reason"`
			OccurredAt time.Time `json:"occurred_at"`
		}
		if err := json.Unmarshal(e.Payload, &f); err != nil {
			t.Fatal(err)
		}
		if e.Type != TypeFailed || e.Key != f.CommandID+":"+f.OccurredAt.UTC().Format(time.RFC3339Nano) || f.CommandID == ok.CommandID {
			t.Fatalf("failure fact %s %s %+v", e.Type, e.Key, f)
		}
	}
	if !strings.Contains(string(evs[1].Payload), `"reason":"http_status"`) || !strings.Contains(string(evs[1].Payload), `"status":410`) {
		t.Fatalf("a 410 fact: %s", evs[1].Payload)
	}
}

// failingLog refuses every event.
type failingLog struct{}

func (failingLog) AppendEvent(context.Context, store.Event) (store.Event, bool, error) {
	return store.Event{}, false, errors.New("disk full")
}

func TestEventLogFailureNeverFailsTheFetch(t *testing.T) {
	srv := newOrigin(t, nil)
	h := newHarness(t, Config{Log: failingLog{}})
	if resp := h.Fetch(t.Context(), get(srv.URL)); resp.Failure != nil || resp.Status != 200 {
		t.Fatalf("answer %+v", resp)
	}
	if !strings.Contains(h.out.String(), "event not recorded") {
		t.Fatal("the failure was not logged")
	}
	if _, err := h.DeadLetters(t.Context(), 0, 10); !errors.Is(err, ErrNoReader) {
		t.Fatalf("DeadLetters on an unreadable log: %v", err)
	}
}

// fakeNearlyFullLog is the badger event log on a disk the test fills, as
// the store decides on one: while clientsRefused is set, a write with a
// client's margin (store.ClientWrite) is refused, as the store refuses
// one once the free space is under its reserve plus ClientMargin; while
// full is set, every write is. For tests only.
type fakeNearlyFullLog struct {
	*store.Store
	clientsRefused, full atomic.Bool
}

func (l *fakeNearlyFullLog) AppendEvent(ctx context.Context, e store.Event) (store.Event, bool, error) {
	if l.full.Load() || (l.clientsRefused.Load() && store.IsClientWrite(ctx)) {
		return store.Event{}, false, &store.StorageFullError{Dir: "/var/lib/vigil/store", Free: 1 << 20, Need: 2 << 20}
	}
	return l.Store.AppendEvent(ctx, e)
}

// A fetch's facts and dead letters yield to the settlements of the
// watches already acknowledged: they are written with a client's margin,
// so once a nearly full disk refuses clients' writes a fetch records
// nothing, and the room the store keeps for the host's own writes is
// left to the settlements and their mail (on a disk left so, 200 http
// watches' facts spent that room in about 20 s, and no timer fired
// after). The fetch itself goes on.
func TestFactsYieldToSettlementsOnANearlyFullDisk(t *testing.T) {
	srv := newOrigin(t, nil)
	log := &fakeNearlyFullLog{Store: mustOpenStore(t)}
	h := newHarness(t, Config{Log: log})
	h.log = log.Store
	log.clientsRefused.Store(true)
	if resp := h.Fetch(t.Context(), get(srv.URL+"/a")); resp.Failure != nil || resp.Status != 200 {
		t.Fatalf("answer %+v", resp)
	}
	if resp := h.Fetch(t.Context(), get("ftp://example.com/")); resp.Failure == nil {
		t.Fatalf("a refused command answered %+v", resp)
	}
	if n, d := len(h.events(t, StreamFacts)), len(h.events(t, StreamDeadLetters)); n != 0 || d != 0 {
		t.Fatalf("with clients' writes refused, %d facts and %d dead letters were written with the host's margin", n, d)
	}
	log.clientsRefused.Store(false)
	if resp := h.Fetch(t.Context(), get(srv.URL+"/b")); resp.Failure != nil {
		t.Fatalf("answer %+v", resp)
	}
	if n := len(h.events(t, StreamFacts)); n != 1 {
		t.Fatalf("with room again, %d facts, want 1", n)
	}
}

// A disk that refuses facts is said once, not per fetch, and once more
// when facts are recorded again; any other failure of the event log is
// still said per event.
func TestAFullDiskIsLoggedOnceByTheIssuer(t *testing.T) {
	srv := newOrigin(t, nil)
	log := &fakeNearlyFullLog{Store: mustOpenStore(t)}
	h := newHarness(t, Config{Log: log})
	refused := func() int { return strings.Count(h.out.String(), "not recorded while the store's disk is full") }
	again := func() int { return strings.Count(h.out.String(), "recorded again") }
	for round := 1; round <= 2; round++ {
		log.full.Store(true)
		for i := range 5 {
			if resp := h.Fetch(t.Context(), get(fmt.Sprintf("%s/%d/%d", srv.URL, round, i))); resp.Failure != nil {
				t.Fatalf("answer %+v", resp)
			}
		}
		if refused() != round || strings.Contains(h.out.String(), "event not recorded") {
			t.Fatalf("round %d, five fetches on a full disk: %d lines saying so, want %d:\n%s", round, refused(), round, h.out)
		}
		log.full.Store(false)
		for i := range 2 {
			_ = h.Fetch(t.Context(), get(fmt.Sprintf("%s/%d/again/%d", srv.URL, round, i)))
		}
		if again() != round {
			t.Fatalf("round %d, facts recorded again: %d lines saying so, want %d:\n%s", round, again(), round, h.out)
		}
	}
}

func TestBodyCap(t *testing.T) {
	srv := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("b", len(r.URL.Path)-1)))
	})
	h := newHarness(t, Config{MaxBody: 16})
	ctx := t.Context()
	if resp := h.Fetch(ctx, get(srv.URL+"/"+strings.Repeat("x", 16))); resp.Failure != nil || len(resp.Body) != 16 {
		t.Fatalf("16 bytes: %+v", resp)
	}
	if resp := h.Fetch(ctx, get(srv.URL+"/"+strings.Repeat("x", 17))); reason(resp) != abi.FetchTooLarge || resp.Body != nil {
		t.Fatalf("17 bytes: %+v", resp)
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	h := newHarness(t, Config{})
	call := get(srv.URL)
	call.Request.TimeoutSeconds = 0.05
	done := make(chan abi.FetchResponse, 1)
	go func() { done <- h.Fetch(t.Context(), call) }()
	h.clock.AwaitTimer(t, 50*time.Millisecond)
	h.clock.Add(50 * time.Millisecond)
	if resp := answer(t, done); reason(resp) != abi.FetchTimeout || !strings.Contains(resp.Failure.Message, "50ms") {
		t.Fatalf("answer %+v", resp.Failure)
	}

	// The caller's own deadline bounds the fetch too.
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	h2 := newHarness(t, Config{Clock: clock.Wall{}})
	if resp := h2.Fetch(ctx, get(srv.URL+"/deadline")); reason(resp) != abi.FetchTimeout {
		t.Fatalf("answer %+v", resp.Failure)
	}
}

// A call whose deadline has passed by the issuer's clock is answered a
// timeout at once: nothing is sent, and there is no fact and no dead
// letter, since nothing was tried and nothing refused.
func TestDeadlinePassedSendsNothing(t *testing.T) {
	srv := newOrigin(t, nil)
	h := newHarness(t, Config{})
	// The fake clock's now is years ahead of the wall clock, so the
	// context itself is not done: only the issuer's comparison ends it.
	ctx, cancel := context.WithDeadline(t.Context(), h.clock.Now())
	defer cancel()
	if resp := h.Fetch(ctx, get(srv.URL)); reason(resp) != abi.FetchTimeout {
		t.Fatalf("answer %+v", resp.Failure)
	}
	if srv.count.Load() != 0 {
		t.Fatal("the request reached the origin")
	}
	if facts := h.events(t, StreamFacts); len(facts) != 0 {
		t.Fatalf("%d facts", len(facts))
	}
	if dls, _ := h.DeadLetters(t.Context(), 0, 10); len(dls) != 0 {
		t.Fatalf("dead letters %+v", dls)
	}
}

// trickle is an origin that answers its headers and a first chunk at once,
// then one more chunk each time next is sent to, until it closes or the
// test ends.
func trickle(t *testing.T, next <-chan struct{}) *origin {
	quit := make(chan struct{})
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		f := w.(http.Flusher)
		_, _ = w.Write([]byte("chunk"))
		f.Flush()
		for {
			select {
			case _, ok := <-next:
				if !ok {
					return
				}
				_, _ = w.Write([]byte("chunk"))
				f.Flush()
			case <-r.Context().Done():
				return
			case <-quit:
				return
			}
		}
	})
	// Before the server's Close, which waits for the handler.
	t.Cleanup(func() { close(quit) })
	return o
}

// sendOrEnd lets the trickle send its next chunk, failing the test when
// the fetch has ended instead.
func sendOrEnd(t *testing.T, next chan<- struct{}, done <-chan abi.FetchResponse) {
	t.Helper()
	select {
	case next <- struct{}{}:
	case r := <-done:
		t.Fatalf("the fetch ended early: %+v %+v", r, r.Failure)
	}
}

// answer is the fetch's answer; a fetch that never ends fails the test
// rather than hanging it.
func answer(t *testing.T, done <-chan abi.FetchResponse) abi.FetchResponse {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the fetch did not end")
		return abi.FetchResponse{}
	}
}

// The command's timeout bounds each operation, not the whole fetch: a body
// that arrives a chunk every 0.9 of the timeout, over 3.6 timeouts, is
// read whole.
func TestTimeoutBoundsEachOperation(t *testing.T) {
	next := make(chan struct{})
	srv := trickle(t, next)
	h := newHarness(t, Config{})
	call := get(srv.URL)
	call.Request.TimeoutSeconds = 1
	done := make(chan abi.FetchResponse, 1)
	go func() { done <- h.Fetch(t.Context(), call) }()
	for range 4 {
		h.clock.AwaitTimer(t, time.Second)
		h.clock.Add(900 * time.Millisecond)
		sendOrEnd(t, next, done)
	}
	h.clock.AwaitTimer(t, time.Second)
	close(next)
	resp := answer(t, done)
	if resp.Failure != nil || string(resp.Body) != strings.Repeat("chunk", 5) {
		t.Fatalf("answer %+v", resp)
	}
}

// The whole fetch is bounded by MaxFetchTime: past it, the fetch is a
// timeout (the plugin cannot tell), not a refusal, and nothing is
// dead-lettered.
func TestWholeFetchBound(t *testing.T) {
	next := make(chan struct{})
	defer close(next)
	srv := trickle(t, next)
	h := newHarness(t, Config{MaxTimeout: time.Second, MaxFetchTime: 2 * time.Second})
	call := get(srv.URL)
	done := make(chan abi.FetchResponse, 1)
	go func() { done <- h.Fetch(t.Context(), call) }()
	// 0.9 s and 1.8 s: within the bound, each chunk within its timeout.
	for range 2 {
		h.clock.AwaitTimer(t, time.Second)
		h.clock.Add(900 * time.Millisecond)
		sendOrEnd(t, next, done)
	}
	// 2.7 s: past the whole-fetch bound, although the last chunk came
	// 0.9 s ago.
	h.clock.AwaitTimer(t, time.Second)
	h.clock.Add(900 * time.Millisecond)
	resp := answer(t, done)
	if reason(resp) != abi.FetchTimeout || !strings.Contains(resp.Failure.Message, "fetch.max_fetch_time") {
		t.Fatalf("answer %+v", resp.Failure)
	}
	if dls, _ := h.DeadLetters(t.Context(), 0, 10); len(dls) != 0 {
		t.Fatalf("a fetch past its bound was dead-lettered: %+v", dls)
	}
}

// The wait for the origin's turn is the issuer's own, not an operation
// of the fetch: the command's timeout does not run through it. A resolve
// that takes 0.6 s and then a wait of 0.9 s for the origin, under a
// timeout of 1 s, is no timeout, though the request goes 1.5 s after the
// fetch began.
func TestPacingWaitIsNoOperation(t *testing.T) {
	srv := newOrigin(t, nil)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	var slow atomic.Bool
	var h *harness
	res := &fakeResolver{answer: func(string, int64) ([]netip.Addr, error) {
		if slow.Swap(false) {
			h.clock.Add(600 * time.Millisecond)
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}}
	h = newHarness(t, Config{Resolver: res, MinInterval: 1500 * time.Millisecond})
	entry := loopback()
	entry.FetchHosts = []string{"inside.test"}
	call := func(path string) plugin.FetchCall {
		return plugin.FetchCall{Kind: "probe", Entry: entry,
			Request: abi.FetchRequest{Method: "GET", URL: "http://inside.test:" + port + path, TimeoutSeconds: 1}}
	}
	if r := h.Fetch(t.Context(), call("/a")); r.Failure != nil {
		t.Fatal(r.Failure)
	}
	slow.Store(true)
	r := h.Fetch(t.Context(), call("/b"))
	if r.Failure != nil || string(r.Body) != "hello" {
		t.Fatalf("answer %+v %+v", r, r.Failure)
	}
	if w := h.clock.Sleeps(); len(w) != 1 || w[0] != 900*time.Millisecond {
		t.Fatalf("waits %v, want one of 0.9 s", w)
	}
}

func TestConnectFailed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	h := newHarness(t, Config{Resolver: staticResolver(nil)})
	ctx := t.Context()
	resp := h.Fetch(ctx, get("http://"+addr+"/"))
	if reason(resp) != abi.FetchConnectFailed {
		t.Fatalf("refused connection: %+v", resp.Failure)
	}
	if again := h.Fetch(ctx, get("http://"+addr+"/")); reason(again) != abi.FetchConnectFailed || !again.FromCache {
		t.Fatalf("the failure was not held: %+v", again)
	}
	dns := get("http://nowhere.test/")
	dns.Entry.FetchHosts = []string{"*"}
	if resp := h.Fetch(ctx, dns); reason(resp) != abi.FetchConnectFailed {
		t.Fatalf("DNS failure: %+v", resp.Failure)
	}
	if dls, _ := h.DeadLetters(ctx, 0, 10); len(dls) != 0 {
		t.Fatalf("a connect failure was dead-lettered: %+v", dls)
	}
}

func TestNewConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"default timeout over the maximum", Config{MaxTimeout: 10 * time.Second, DefaultTimeout: 20 * time.Second}},
		{"secret value with a line end", Config{Secrets: map[string]string{"gh": "tok-SECRET-VALUE\r\nX-Injected: 1"}}},
		{"empty secret value", Config{Secrets: map[string]string{"gh": ""}}},
		{"secret name out of the grammar", Config{Secrets: map[string]string{"Bad Name": "tok-SECRET-VALUE"}}},
		{"user agent with a control byte", Config{UserAgent: "vigil\n"}},
		{"cache smaller than a body", Config{MaxBody: 1 << 20, MaxCacheBytes: 1 << 10}},
		{"whole-fetch bound under the operation timeout", Config{MaxTimeout: 30 * time.Second, MaxFetchTime: 29 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.cfg); err == nil {
				t.Fatal("accepted")
			} else if strings.Contains(err.Error(), "tok-SECRET-VALUE") {
				t.Fatalf("the error quotes a secret value: %v", err)
			}
		})
	}
	i, err := New(Config{MaxTimeout: 10 * time.Second, MinInterval: -1, MaxRedirects: -3})
	if err != nil {
		t.Fatal(err)
	}
	c := i.cfg
	if c.DefaultTimeout != 10*time.Second || c.MaxFetchTime != 120*time.Second || c.MinInterval != time.Second || c.MaxRedirects != 5 || c.MaxBody != 1<<20 ||
		c.QuietPeriod != 30*time.Minute || c.UserAgent != "vigil" || c.MaxCacheBytes != 64<<20 {
		t.Fatalf("defaults %+v", c)
	}
}
