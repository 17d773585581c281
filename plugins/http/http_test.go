package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/fakeforge"
	"github.com/vigilhq/vigil/plugins/internal/plugintest"
	"github.com/vigilhq/vigil/sdk"
	"github.com/vigilhq/vigil/sdk/abi"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

var granted = sdk.Grants{Capabilities: []string{"fetch"}, FetchHosts: []string{"*"}}

// fetcher reaches the fake server; a hang comes back as a timeout after
// 50 ms, not the plugin's 4 s.
// fetcher gives a request up to 2 s: a hung path (Hang) costs its test
// that much, and a loaded machine never turns a slow answer into a timeout.
var fetcher = fakeforge.Fetcher{MaxTimeout: 2 * time.Second}

func observeJSON(t *testing.T, params string, baseline json.RawMessage) abi.ObserveResponse {
	t.Helper()
	got, err := sdk.NewHarness(Plugin).Observe(abi.ObserveRequest{
		Kind: Kind, WatchID: "w1", Now: now, Attempt: 1, Params: json.RawMessage(params), Baseline: baseline,
	}, fetcher)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestObserve(t *testing.T) {
	ff := fakeforge.New(t)
	ff.SetPage("/health", 200, `{"status":"ok","checks":[{"name":"db","ok":true,"lag":1.0}],"n":10}`)
	ff.SetPage("/starting", 200, `{"status":"starting"}`)
	ff.SetPage("/text", 200, "deploy 42 is live")
	ff.SetPage("/gone", 404, "not here, but ok")
	ff.SetPage("/teapot", 418, "")
	ff.Fail("/busy", 503, 0)
	ff.Fail("/limited", 429, 30*time.Second)
	ff.Hang("/slow", time.Hour)
	u := ff.URL()

	tests := []struct {
		name   string
		params string
		status string // wanted status; settled means result "ok"
		note   string // wanted note (pending)
	}{
		{"any 2xx by default", `{"url":"` + u + `/health"}`, abi.StatusSettled, ""},
		{"404 is not a 2xx", `{"url":"` + u + `/gone"}`, abi.StatusPending, "answered 404, waiting for a 2xx"},
		{"expect status", `{"url":"` + u + `/teapot","expect":{"status":418}}`, abi.StatusSettled, ""},
		{"expect status unmet", `{"url":"` + u + `/health","expect":{"status":204}}`, abi.StatusPending, "answered 200, waiting for 204"},
		{"waiting for a 503 settles on it", `{"url":"` + u + `/busy","expect":{"status":503}}`, abi.StatusSettled, ""},
		{"body_contains", `{"url":"` + u + `/text","expect":{"body_contains":"42 is live"}}`, abi.StatusSettled, ""},
		{"body_contains unmet", `{"url":"` + u + `/text","expect":{"body_contains":"43"}}`, abi.StatusPending, "body does not contain 43"},
		{"body_contains on an error page is not met", `{"url":"` + u + `/gone","expect":{"body_contains":"ok"}}`, abi.StatusPending, "answered 404, waiting for a 2xx"},
		{"json_path string", `{"url":"` + u + `/health","expect":{"json_path":{"path":"status","equals":"ok"}}}`, abi.StatusSettled, ""},
		{"json_path into an array", `{"url":"` + u + `/health","expect":{"json_path":{"path":"checks.0.ok","equals":true}}}`, abi.StatusSettled, ""},
		{"json_path number by value", `{"url":"` + u + `/health","expect":{"json_path":{"path":"checks.0.lag","equals":1}}}`, abi.StatusSettled, ""},
		{"json_path object by value", `{"url":"` + u + `/health","expect":{"json_path":{"path":"checks.0","equals":{"ok":true,"lag":1e0,"name":"db"}}}}`, abi.StatusSettled, ""},
		{"json_path unmet", `{"url":"` + u + `/starting","expect":{"json_path":{"path":"status","equals":"ok"}}}`, abi.StatusPending, `status is "starting", waiting for "ok"`},
		{"json_path absent", `{"url":"` + u + `/health","expect":{"json_path":{"path":"checks.1.ok","equals":true}}}`, abi.StatusPending, "checks.1.ok is absent"},
		{"json_path on text", `{"url":"` + u + `/text","expect":{"json_path":{"path":"a","equals":1}}}`, abi.StatusPending, "body is not JSON"},
		{"every expectation must hold", `{"url":"` + u + `/starting","expect":{"status":200,"body_contains":"starting","json_path":{"path":"status","equals":"ok"}}}`,
			abi.StatusPending, `status is "starting", waiting for "ok"`},
		{"all hold", `{"url":"` + u + `/health","expect":{"status":200,"body_contains":"db","json_path":{"path":"n","equals":10.0}}}`, abi.StatusSettled, ""},
		{"503 could not tell", `{"url":"` + u + `/busy"}`, abi.StatusPending, "could not tell: server answered 503"},
		{"503 with an expectation could not tell", `{"url":"` + u + `/busy","expect":{"body_contains":"x"}}`, abi.StatusPending, "could not tell: server answered 503"},
		{"429 could not tell", `{"url":"` + u + `/limited"}`, abi.StatusPending, "could not tell: server answered 429"},
		{"timeout could not tell", `{"url":"` + u + `/slow"}`, abi.StatusPending, "could not tell: fetch timeout"},
		{"refused connection could not tell", `{"url":"http://127.0.0.1:1/"}`, abi.StatusPending, "could not tell: fetch connect_failed"},
		{"503 in change mode could not tell", `{"url":"` + u + `/busy","change":true}`, abi.StatusPending, "could not tell: server answered 503"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := observeJSON(t, tt.params, nil)
			if got.Status != tt.status || got.Note != tt.note || len(got.Baseline) != 0 {
				t.Fatalf("observe = %+v, want %s %q", got, tt.status, tt.note)
			}
			if got.Status == abi.StatusSettled {
				var d okDetail
				if err := json.Unmarshal(got.Outcome.Detail, &d); err != nil || got.Outcome.Result != "ok" ||
					d.Status == 0 || d.At != "2026-11-30T12:00:00Z" || !strings.HasPrefix(got.Outcome.Summary, "GET ") {
					t.Fatalf("outcome = %+v (%v)", got.Outcome, err)
				}
			}
		})
	}
}

// Change mode: the first answer is recorded silently, the same answer is
// no change, and another body settles "changed". Driven through observe
// itself; TestChangeThroughTheSDK runs the same through the wire.
func TestObserveChange(t *testing.T) {
	ff := fakeforge.New(t)
	ff.SetPage("/release", 200, `{"version":"1.0"}`)
	p := Params{URL: ff.URL() + "/release", Change: true}
	look := func(base json.RawMessage) sdk.Result {
		t.Helper()
		r, err := observe(p, sdk.Input{Kind: Kind, Now: now, Attempt: 1, Baseline: base}.WithFetcher(fetcher))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	first := look(nil)
	b, hasBase := first.Baseline()
	base, _ := b.(baseline)
	if _, settled := first.Outcome(); first.Status() != abi.StatusPending || settled || !hasBase || len(base.Fingerprint) != 64 {
		t.Fatalf("first observation = %+v, want pending with a fingerprint baseline", first)
	}
	recorded, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}

	same := look(recorded)
	if _, has := same.Baseline(); same.Status() != abi.StatusPending || has || same.Note() != "unchanged since the first check" {
		t.Fatalf("same body = %+v", same)
	}

	ff.SetPage("/release", 200, `{"version":"1.1"}`)
	changed := look(recorded)
	o, _ := changed.Outcome()
	d, _ := o.Detail.(changedDetail)
	if changed.Status() != abi.StatusSettled || o.Result != "changed" || d.Before != base.Fingerprint ||
		d.After == base.Fingerprint || len(d.After) != 64 || d.Status != 200 {
		t.Fatalf("new body = %+v", changed)
	}

	// An unreadable baseline is replaced, not settled on.
	again := look(json.RawMessage(`{"fingerprint":7}`))
	if _, has := again.Baseline(); again.Status() != abi.StatusPending || !has {
		t.Fatalf("bad baseline = %+v", again)
	}
}

// The same, through the SDK's wire dispatch: change mode answers a
// baseline from a kind that is not standing, which the host records for
// every kind.
func TestChangeThroughTheSDK(t *testing.T) {
	ff := fakeforge.New(t)
	ff.SetPage("/release", 200, `{"version":"1.0"}`)
	params := json.RawMessage(`{"url":"` + ff.URL() + `/release","change":true}`)
	h := sdk.NewHarness(Plugin)
	req := abi.ObserveRequest{Kind: Kind, WatchID: "w1", Now: now, Attempt: 1, Params: params}
	first, err := h.Observe(req, fetcher)
	if err != nil || first.Status != abi.StatusPending || len(first.Baseline) == 0 {
		t.Fatalf("first = %+v %v", first, err)
	}
	ff.SetPage("/release", 200, `{"version":"1.1"}`)
	req.Baseline = first.Baseline
	changed, err := h.Observe(req, fetcher)
	if err != nil || changed.Status != abi.StatusSettled || changed.Outcome.Result != "changed" {
		t.Fatalf("changed = %+v %v", changed, err)
	}
}

// The host's fingerprint is what change mode compares; without one (a
// test fetcher), the body's SHA-256 stands in.
func TestChangeUsesTheHostFingerprint(t *testing.T) {
	body := func(fp string) sdk.Fetcher {
		return sdk.FetcherFunc(func(sdk.FetchRequest) (sdk.FetchResponse, error) {
			return sdk.FetchResponse{Status: 200, Body: []byte("same"), Fingerprint: fp}, nil
		})
	}
	p := Params{URL: "https://example.com/", Change: true}
	in := sdk.Input{Kind: Kind, Now: now, Baseline: json.RawMessage(`{"fingerprint":"aaa"}`)}
	got, err := observe(p, in.WithFetcher(body("bbb")))
	if err != nil || got.Status() != abi.StatusSettled {
		t.Fatalf("observe = %+v %v", got, err)
	}
	got, err = observe(p, in.WithFetcher(body("aaa")))
	if err != nil || got.Status() != abi.StatusPending {
		t.Fatalf("observe = %+v %v", got, err)
	}
}

// The request is a bounded GET of the URL as given, with no header and no
// secret.
func TestObserveRequest(t *testing.T) {
	var got []sdk.FetchRequest
	f := sdk.FetcherFunc(func(r sdk.FetchRequest) (sdk.FetchResponse, error) {
		got = append(got, r)
		return sdk.FetchResponse{Status: 200}, nil
	})
	const u = "https://status.example.com/h?x=1"
	if _, err := observe(Params{URL: u}, sdk.Input{Now: now}.WithFetcher(f)); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Method != "GET" || got[0].URL != u || got[0].TimeoutSeconds != fetchTimeout ||
		got[0].Secret != "" || len(got[0].Headers) != 0 {
		t.Fatalf("requests = %+v", got)
	}
	// A fetcher's own error, with no failure reason, is pending too.
	boom := sdk.FetcherFunc(func(sdk.FetchRequest) (sdk.FetchResponse, error) { return sdk.FetchResponse{}, errors.New("boom") })
	if r, err := observe(Params{URL: u}, sdk.Input{Now: now}.WithFetcher(boom)); err != nil || r.Note() != "could not tell: boom" {
		t.Fatalf("observe = %+v %v", r, err)
	}
}

func TestAdmit(t *testing.T) {
	const setting = "kinds.http.fetch_hosts"
	only := sdk.Grants{Capabilities: []string{"fetch"}, FetchHosts: []string{"status.example.com", "*.example.org"}}
	tests := []struct {
		name    string
		params  string
		grants  sdk.Grants
		field   string // want invalid_params naming this field
		setting string // want unobservable naming this setting
	}{
		{name: "ok", params: `{"url":"https://status.example.com/"}`, grants: only},
		{name: "ok under a wildcard", params: `{"url":"https://a.example.org/x"}`, grants: only},
		{name: "ok with *", params: `{"url":"http://anything.test:8080/","change":true}`, grants: granted},
		{name: "ok, every expectation", params: `{"url":"https://a.example.org/","expect":{"status":204,"body_contains":"x","json_path":{"path":"a.0","equals":null}}}`, grants: only},
		{name: "host not granted", params: `{"url":"https://other.example.com/"}`, grants: only, setting: setting},
		{name: "nothing granted", params: `{"url":"https://status.example.com/"}`, grants: sdk.Grants{Capabilities: []string{"fetch"}}, setting: setting},
		{name: "relative", params: `{"url":"/x"}`, grants: granted, field: "url"},
		{name: "ftp", params: `{"url":"ftp://example.com/"}`, grants: granted, field: "url"},
		{name: "credentials", params: `{"url":"https://u:p@example.com/"}`, grants: granted, field: "url"},
		{name: "status out of range", params: `{"url":"https://example.com/","expect":{"status":42}}`, grants: granted, field: "expect.status"},
		{name: "empty path segment", params: `{"url":"https://example.com/","expect":{"json_path":{"path":"a..b","equals":1}}}`, grants: granted, field: "expect.json_path.path"},
		{name: "no equals", params: `{"url":"https://example.com/","expect":{"json_path":{"path":"a"}}}`, grants: granted, field: "expect.json_path.equals"},
		{name: "change and expect", params: `{"url":"https://example.com/","change":true,"expect":{"status":200}}`, grants: granted, field: "change"},
		{name: "unknown field", params: `{"url":"https://example.com/","colour":1}`, grants: granted, field: "colour"},
		{name: "an empty label", params: `{"url":"https://a..example.com/"}`, grants: granted, field: "url"},
		{name: "a port out of range", params: `{"url":"https://example.com:0/"}`, grants: granted, field: "url"},
		{name: "a loopback URL is the host's to judge", params: `{"url":"http://127.0.0.1/"}`, grants: granted},
	}
	h := sdk.NewHarness(Plugin)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := h.Admit(abi.AdmitRequest{Kind: Kind, Params: json.RawMessage(tt.params), Grants: tt.grants})
			if err != nil {
				t.Fatal(err)
			}
			plugintest.CheckAdmit(t, got, tt.field, tt.setting, "not granted")
		})
	}
}

func TestJSONEqual(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{`1`, `1.0`, true},
		{`1`, `1e0`, true},
		{`100`, `1E2`, true},
		{`0.5`, `5e-1`, true},
		{`-0`, `0`, true},
		{`0.000`, `0e5`, true},
		{`12345678901234567890`, `12345678901234567891`, false},
		{`1e999999999`, `1e999999999`, true},
		{`1e999999999`, `1e999999998`, false},
		{`1e99999999999999999999`, `1e99999999999999999999`, true},
		{`1`, `"1"`, false},
		{`null`, `null`, true},
		{`null`, `false`, false},
		{`{"a":[1,{"b":2}]}`, `{"a":[1.0,{"b":2e0}]}`, true},
		{`{"a":1}`, `{"a":1,"b":2}`, false},
		{`[1,2]`, `[2,1]`, false},
	}
	for _, tt := range tests {
		a, err := decodeJSON([]byte(tt.a))
		if err != nil {
			t.Fatal(err)
		}
		b, err := decodeJSON([]byte(tt.b))
		if err != nil {
			t.Fatal(err)
		}
		if got := equal(a, b); got != tt.want {
			t.Errorf("equal(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

// The schema is what the host checks before admit; the harness does not
// run it, so compile it here as the host does.
func TestSchema(t *testing.T) {
	example, err := json.Marshal(Plugin.Example)
	if err != nil {
		t.Fatal(err)
	}
	plugintest.CheckSchema(t, schema, map[string]bool{
		string(example): true,
		`{"url":"https://a.test/","change":true}`:                                      true,
		`{"url":"https://a.test/","expect":{"json_path":{"path":"a.0","equals":[1]}}}`: true,
		`{}`:                              false,
		`{"url":"a.test"}`:                false,
		`{"url":"https://a.test/","x":1}`: false,
		`{"url":"https://a.test/","expect":{"x":1}}`:                                        false,
		`{"url":"https://a.test/","expect":{"status":700}}`:                                 false,
		`{"url":"https://a.test/","expect":{"body_contains":""}}`:                           false,
		`{"url":"https://a.test/","expect":{"json_path":{"path":"a"}}}`:                     false,
		`{"url":"https://a.test/","expect":{"json_path":{"path":"a.","equals":1}}}`:         false,
		`{"url":"https://a.test/","expect":{"json_path":{"path":"a","equals":1,"x":true}}}`: false,
		`{"url":"https://a.test/","change":"yes"}`:                                          false,
	})
	if err := admit(Plugin.Example, granted); err != nil {
		t.Errorf("the example does not admit: %v", err)
	}
}

func TestDescribe(t *testing.T) {
	d, err := sdk.NewHarness(Plugin).Describe()
	if err != nil {
		t.Fatal(err)
	}
	if d.Kind != Kind || d.Standing || d.DefaultEvery != "30s" || len(d.Capabilities) != 1 || d.Capabilities[0] != "fetch" {
		t.Fatalf("describe = %+v", d)
	}
}

// A call for another kind is a routing bug: an error, never pending.
func TestWrongKind(t *testing.T) {
	h := sdk.NewHarness(Plugin)
	params := json.RawMessage(`{"url":"https://example.com/"}`)
	var wk *sdk.WrongKindError
	if _, err := h.Observe(abi.ObserveRequest{Kind: "ci", Now: now, Params: params}, fetcher); !errors.As(err, &wk) {
		t.Fatalf("observe of kind ci = %v", err)
	}
	if _, err := h.Admit(abi.AdmitRequest{Kind: "ci", Params: params, Grants: granted}); !errors.As(err, &wk) {
		t.Fatalf("admit of kind ci = %v", err)
	}
}

// An admitted watch names its URL as the destination it fetches, with the
// param, so the host can refuse a loopback or private one at registration.
func TestAdmitNamesTheURL(t *testing.T) {
	h := sdk.NewHarness(Plugin)
	for _, u := range []string{"https://status.example.com/x?y=1", "http://127.0.0.1:8080/", "http://2130706433/"} {
		got, err := h.Admit(abi.AdmitRequest{Kind: Kind, Params: json.RawMessage(`{"url":"` + u + `"}`), Grants: granted})
		if err != nil || !got.OK || len(got.Destinations) != 1 || got.Destinations[0] != (abi.Destination{Target: u, Field: "url"}) {
			t.Fatalf("%s: admit = %+v, %v", u, got, err)
		}
	}
}

// reporter answers every GET with one body and records the extraction
// failures reported to it.
type reporter struct {
	body    string
	reports []sdk.ExtractionFailedRequest
}

func (r *reporter) Fetch(req sdk.FetchRequest) (sdk.FetchResponse, error) {
	return sdk.FetchResponse{Status: 200, Body: []byte(r.body), Fingerprint: "fp-" + r.body}, nil
}

func (r *reporter) ExtractionFailed(req sdk.ExtractionFailedRequest) (sdk.ExtractionFailedResponse, error) {
	r.reports = append(r.reports, req)
	return sdk.ExtractionFailedResponse{Forgot: true}, nil
}

// Where json_path cannot extract anything (the body is not JSON, nothing
// is at the path) the plugin tells the host, naming the request as it was
// made and the answer's fingerprint, and still answers pending; a value
// that is there but not the one wanted, or an unmet status or text, is no
// failed extraction.
func TestExtractionFailureIsReported(t *testing.T) {
	const u = "https://status.example.com/health"
	jp := func(path, equals string) *Expect {
		return &Expect{JSONPath: &JSONPath{Path: path, Equals: json.RawMessage(equals)}}
	}
	for _, tc := range []struct {
		name     string
		expect   *Expect
		body     string
		reported bool
	}{
		{"not JSON", jp("status", `"ok"`), "<html>maintenance</html>", true},
		{"path absent", jp("status", `"ok"`), `{"state":"ok"}`, true},
		{"path through a scalar", jp("status.code", `1`), `{"status":"ok"}`, true},
		{"another value", jp("status", `"ok"`), `{"status":"starting"}`, false},
		{"met", jp("status", `"ok"`), `{"status":"ok"}`, false},
		{"text absent", &Expect{BodyContains: "live"}, "<html>maintenance</html>", false},
		{"status unmet", &Expect{Status: 204}, "{}", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &reporter{body: tc.body}
			got, err := observe(Params{URL: u, Expect: tc.expect}, sdk.Input{Now: now}.WithFetcher(r))
			if err != nil {
				t.Fatal(err)
			}
			if tc.reported != (len(r.reports) == 1) || len(r.reports) > 1 {
				t.Fatalf("reports %+v, want reported %v (%s)", r.reports, tc.reported, got.Note())
			}
			if tc.reported {
				rep := r.reports[0]
				if got.Status() != abi.StatusPending || rep.Fingerprint != "fp-"+tc.body || rep.Request.URL != u ||
					rep.Request.Method != "GET" || rep.Request.TimeoutSeconds != fetchTimeout {
					t.Fatalf("observe %s %q, report %+v", got.Status(), got.Note(), rep)
				}
			}
		})
	}
}

// Admit names the URL as the server sees it as the watch's partition key:
// one page written two ways is one key, two pages are two.
func TestAdmitNamesThePartitionKey(t *testing.T) {
	h := sdk.NewHarness(Plugin)
	key := func(u string) string {
		t.Helper()
		got, err := h.Admit(abi.AdmitRequest{Kind: Kind, Params: json.RawMessage(`{"url":` + strconvQuote(u) + `}`), Grants: granted})
		if err != nil || !got.OK {
			t.Fatalf("%s: %+v %v", u, got, err)
		}
		return got.PartitionKey
	}
	same := [][]string{
		{"https://status.example.com/api/health?x=1", "HTTPS://Status.Example.COM:443/api/health?x=1#top", "https://status.example.com/api/health?x=1#"},
		{"http://example.com/", "http://example.com", "http://EXAMPLE.com:80"},
		{"http://[2606:2800:220:1::1]:8080/a", "http://[2606:2800:220:1::1]:8080/a#b"},
	}
	for _, group := range same {
		want := key(group[0])
		if want != group[0] && group[0] != "http://example.com/" {
			t.Fatalf("%s: key %q, want the URL itself", group[0], want)
		}
		for _, u := range group[1:] {
			if got := key(u); got != want {
				t.Fatalf("%s: key %q, want %q as for %s", u, got, want, group[0])
			}
		}
	}
	differ := []string{"https://status.example.com/api/health", "http://status.example.com/api/health", "https://status.example.com/api/Health",
		"https://status.example.com:8443/api/health", "https://status.example.com/api/health?x=2", "https://other.example.com/api/health"}
	seen := map[string]string{}
	for _, u := range differ {
		k := key(u)
		if prev, dup := seen[k]; dup {
			t.Fatalf("%s and %s share the key %q", u, prev, k)
		}
		seen[k] = u
	}
	// A URL whose key would be over the ABI's bound goes as a digest.
	long := "https://example.com/" + strings.Repeat("a", abi.MaxPartitionKey)
	if k := key(long); len(k) > abi.MaxPartitionKey || !strings.HasPrefix(k, "sha256:") || k != key(long+"#frag") {
		t.Fatalf("long key %q", k)
	}
	// A refusal names none.
	got, err := h.Admit(abi.AdmitRequest{Kind: Kind, Params: json.RawMessage(`{"url":"ftp://example.com/"}`), Grants: granted})
	if err != nil || got.OK || got.PartitionKey != "" {
		t.Fatalf("refusal: %+v %v", got, err)
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
