package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/api/webhooks"
	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/observe"
	"github.com/vigilhq/vigil/internal/recipients"
)

// The fuzz targets of the REST API's parsers of outside input: the
// request bodies (through decode, the one strict decoder, and through
// each route's handler over the real core), the mailbox cursor and the
// SSE Last-Event-ID. Every refusal is a client's mistake: an envelope
// whose code's status is the response's, 4xx, never 5xx.

// fuzzAPI is the API over apitest's stack (a badger store in a temporary
// directory, the scheduler, recipients, observe) and the fake kinds, its
// fasthttp handler called in process: no socket, no listener.
type fuzzAPI struct {
	app  *fiber.App
	h    fasthttp.RequestHandler
	work string // the id of one Work of scope support
}

// fakeTimerKinds are the fake kinds and a fake timer, whose admit names
// a natural deadline (its params' at plus a minute) as the bundled
// timer's does, so a registration's expires_at can be held to it. For
// tests only.
func fakeTimerKinds() apitest.FakePlugins {
	p := fakePlugins()
	p.Add(kind.Info{Kind: "timer", DefaultEvery: time.Minute, Observable: true, Source: "bundled", SHA256: strings.Repeat("7", 64)})
	p.OnAdmit(func(name string, req kind.AdmitRequest) (kind.Admission, error) {
		if name != "timer" {
			if strings.Contains(string(req.Params), `"bad"`) {
				return kind.Admission{}, &api.Error{Code: api.CodeInvalidParams, Field: "params.bad", Message: "bad"}
			}
			return kind.Admission{}, nil
		}
		var p struct {
			At time.Time `json:"at"`
		}
		if err := json.Unmarshal(req.Params, &p); err != nil || p.At.IsZero() {
			return kind.Admission{}, &api.Error{Code: api.CodeInvalidParams, Field: "params.at", Message: "want an RFC 3339 instant"}
		}
		return kind.Admission{Deadline: p.At.Add(time.Minute)}, nil
	})
	return p
}

// timerDeadline is a fake timer's natural deadline, as fakeTimerKinds
// admits it; false for any other registration.
func timerDeadline(req api.WatchRequest) (time.Time, bool) {
	var p struct {
		At time.Time `json:"at"`
	}
	if req.Kind != "timer" || json.Unmarshal(req.Params, &p) != nil || p.At.IsZero() {
		return time.Time{}, false
	}
	return p.At.Add(time.Minute), true
}

func newFuzzAPI(f *testing.F) *fuzzAPI {
	f.Helper()
	st := apitest.NewStack(f, apitest.Config{Plugins: fakeTimerKinds(), Clock: fakeclock.At(t0)})
	ob, err := observe.New(observe.Options{Store: st.Store, Clock: fakeclock.At(t0), Waker: st.Scheduler, Rate: -1, RunPerMinute: -1}, observeConfig())
	if err != nil {
		f.Fatal(err)
	}
	app := New(Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients, Plugins: fakePlugins(), Observe: ob},
		Options{BodyLimit: 1 << 20})
	a := &fuzzAPI{app: app, h: app.Handler()}
	status, b := a.do("POST", "/api/v1/scopes/support/observe", nil, []byte(`{"item":"m1","thread":"T1","text":"hi","source":"slack-help"}`))
	if status != 201 {
		f.Fatalf("record: %d %s", status, b)
	}
	if _, err := ob.RouteAll(context.Background()); err != nil {
		f.Fatal(err)
	}
	status, b = a.do("GET", "/api/v1/scopes/support/work", nil, nil)
	var wl api.WorkList
	if err := json.Unmarshal(b, &wl); status != 200 || err != nil || len(wl.Work) != 1 {
		f.Fatalf("work: %d %s", status, b)
	}
	a.work = wl.Work[0].ID
	if status, b := a.do("PUT", "/api/v1/recipients/agent-1", nil, []byte(`{"status":"running"}`)); status != 200 {
		f.Fatalf("recipient: %d %s", status, b)
	}
	if status, b := a.do("PUT", "/api/v1/recipients/paused-1", nil, []byte(`{"status":"paused"}`)); status != 200 {
		f.Fatalf("recipient: %d %s", status, b)
	}
	return a
}

// do serves one request; header is name, value pairs.
func (a *fuzzAPI) do(method, uri string, header []string, body []byte) (int, []byte) {
	var req fasthttp.Request
	req.Header.SetMethod(method)
	req.SetRequestURI(uri)
	req.Header.SetContentType("application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	req.SetBody(body)
	var ctx fasthttp.RequestCtx
	ctx.Init(&req, nil, nil)
	a.h(&ctx)
	return ctx.Response.StatusCode(), append([]byte(nil), ctx.Response.Body()...)
}

// checkRefusal fails unless a response that is not a success is a 4xx
// error envelope whose code answers that very status.
func checkRefusal(t *testing.T, what string, status int, b []byte) {
	t.Helper()
	var env api.ErrorEnvelope
	if err := strictUnmarshal(b, &env); err != nil || env.Error.Code == "" || env.Error.Message == "" {
		t.Fatalf("%s: %d with a body that is not an error envelope: %s (%v)", what, status, b, err)
	}
	if status < 400 || status >= 500 || api.Status(env.Error.Code) != status {
		t.Fatalf("%s: %d %s: want a 4xx whose code has that status", what, status, b)
	}
}

// strictUnmarshal reads exactly one JSON value into v, refusing unknown
// fields: what the API promises its own responses hold.
func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
}

// decodeBody runs decode, the handlers' strict decoder, over body.
func (a *fuzzAPI) decodeBody(body []byte, v any) error {
	var fctx fasthttp.RequestCtx
	fctx.Request.SetBody(body)
	c := a.app.AcquireCtx(&fctx)
	defer a.app.ReleaseCtx(c)
	return decode(c, v)
}

func addBodies(f *testing.F, bodies ...string) {
	for _, b := range bodies {
		f.Add([]byte(b))
	}
}

// FuzzDecodeBody: decode, the one strict decoder of every request body,
// refuses with a typed *api.Error whose status is 400 or 422 (a field
// error names its field when the input has one), and what it accepts
// re-encodes to JSON that it accepts again and that decodes to the same
// value: nothing it reads is lost or changed on the way back out.
func FuzzDecodeBody(f *testing.F) {
	addBodies(f,
		`{"kind":"ci","params":{"a":[1,2]},"recipient":{"id":"agent-1"},"every":"30s","expires_at":"2026-12-01T00:00:00-05:00"}`,
		`{"status":"running","webhook":{"url":"https://example.com/h","secret":"whsec_MDEyMzQ1Njc4OWFiY2RlZg"},"refs":[{"kind":"ticket","params":{}}],"workspace":"/w"}`,
		`{"recipient":{"id":"agent-1"}}`,
		`{"kind":1}`, `{"kind":"ci","x":1}`, `{"kind":"ci"} {}`, `{"kind":"ci"`, `[]`, `null`, ``, " \n", `"\ud800"`,
		`{"expires_at":"2026-13-01T00:00:00Z"}`, `{"refs":[{"kind":"ticket","params":1e999}]}`, `{"Kind":"ci","KIND":"x"}`,
	)
	a := &fuzzAPI{app: fiber.New()}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, newV := range []func() any{
			func() any { return new(api.WatchRequest) },
			func() any { return new(api.RecipientRequest) },
			func() any { return new(api.ClaimRequest) },
		} {
			v := newV()
			err := a.decodeBody(body, v)
			if err != nil {
				var ae *api.Error
				if !errors.As(err, &ae) {
					t.Fatalf("%T: untyped %T: %v", v, err, err)
				}
				if s := api.Status(ae.Code); s != 400 && s != 422 {
					t.Fatalf("%T: %q: %v is a %d", v, body, err, s)
				}
				continue
			}
			enc, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("%T: %q accepted, and does not encode: %v", v, body, err)
			}
			back := newV()
			if err := a.decodeBody(enc, back); err != nil {
				t.Fatalf("%T: %q accepted as %s, which is refused: %v", v, body, enc, err)
			}
			if again, _ := json.Marshal(back); !bytes.Equal(again, enc) {
				t.Fatalf("%T: %q -> %s -> %s", v, body, enc, again)
			}
		}
	})
}

// FuzzCreateWatch: POST /api/v1/watches over the real scheduler either
// registers (201) the watch the body says, as decode reads it, or refuses
// it as the client's mistake.
func FuzzCreateWatch(f *testing.F) {
	addBodies(f,
		`{"kind":"ci","params":{},"recipient":{"id":"agent-1"}}`,
		`{"kind":"ci","params":{"repo":"a/b"},"recipient":{"id":"agent-2"},"every":"1m","expires_at":"2026-11-30T13:00:00+01:30"}`,
		`{"kind":"ticket","params":{},"recipient":{"id":"agent-1"}}`,
		`{"kind":"ci","params":{"bad":true},"recipient":{"id":"agent-1"}}`,
		`{"kind":"ci","params":{},"recipient":{"id":"agent-1"},"every":"1ns"}`,
		`{"kind":"ci","params":{},"recipient":{"id":"agent-1"},"expires_at":"9999-12-31T23:59:59-23:59"}`,
		`{"kind":"ci","params":{},"recipient":{"id":"agent-1"},"expires_at":"0000-01-01T00:00:00+23:59"}`,
		`{"kind":"nope","params":{},"recipient":{"id":"agent-1"}}`,
		`{"kind":"ci","params":[],"recipient":{"id":"a b"}}`,
		`{"kind":"","params":null}`, `{}`, ``,
		// Hostile but well-formed: each over a bound, each a 422.
		`{"kind":"ci","params":{},"recipient":{"id":"agent-1"},"every":"2562047h"}`,
		`{"kind":"ci","params":{},"recipient":{"id":"agent-1"},"every":"168h0m0.001s"}`,
		`{"kind":"ci","params":{"expect":{"json_path":{"path":"a","equals":`+strings.Repeat("[", 500)+strings.Repeat("]", 500)+`}}},"recipient":{"id":"agent-1"}}`,
		`{"kind":"ci","params":`+strings.Repeat(`{"a":`, kind.MaxParamsDepth)+`1`+strings.Repeat(`}`, kind.MaxParamsDepth)+`,"recipient":{"id":"agent-1"}}`,
		`{"kind":"ci","params":"`+strings.Repeat("x", kind.MaxParamsBytes)+`","recipient":{"id":"agent-1"}}`,
		`{"kind":"`+strings.Repeat("k", 100_000)+`","params":{},"recipient":{"id":"agent-1"}}`,
		`{"kind":"CI","params":{},"recipient":{"id":"agent-1"}}`,
		// A timer whose expires_at is before its instant (or within the
		// minute after it, its natural deadline) could only expire; at
		// its deadline and after, it is taken.
		`{"kind":"timer","params":{"at":"2026-11-30T13:00:00Z"},"recipient":{"id":"agent-1"},"expires_at":"2026-11-30T12:30:00Z"}`,
		`{"kind":"timer","params":{"at":"2026-11-30T13:00:00Z"},"recipient":{"id":"agent-1"},"expires_at":"2026-11-30T13:00:59.999Z"}`,
		`{"kind":"timer","params":{"at":"2026-11-30T13:00:00Z"},"recipient":{"id":"agent-1"},"expires_at":"2026-11-30T13:01:00Z"}`,
		`{"kind":"timer","params":{"at":"2026-11-30T13:00:00Z"},"recipient":{"id":"agent-1"},"expires_at":"2026-11-30T14:01:00+01:00"}`,
	)
	a := newFuzzAPI(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		status, b := a.do("POST", "/api/v1/watches", nil, body)
		if status != 201 {
			checkRefusal(t, "create", status, b)
			return
		}
		var req api.WatchRequest
		if err := a.decodeBody(body, &req); err != nil {
			t.Fatalf("%q registered, and decode refuses it: %v", body, err)
		}
		var w api.Watch
		if err := strictUnmarshal(b, &w); err != nil {
			t.Fatalf("response %s: %v", b, err)
		}
		if w.Kind != req.Kind || w.Recipient != req.Recipient || w.State != "pending" || !sameJSON(w.Params, req.Params) {
			t.Fatalf("%q registered as %s", body, b)
		}
		if req.Every != "" {
			d, _ := time.ParseDuration(req.Every)
			if w.Every != d.String() {
				t.Fatalf("every %q registered as %s", req.Every, w.Every)
			}
			if d > 7*24*time.Hour { // the stack's longest deadline
				t.Fatalf("every %q, past the longest deadline, registered", req.Every)
			}
		}
		if err := kind.CheckParams(req.Params); err != nil {
			t.Fatalf("params over the host's bounds registered: %v", err)
		}
		if req.ExpiresAt != nil && (w.ExpiresAt == nil || !w.ExpiresAt.Equal(*req.ExpiresAt)) {
			t.Fatalf("expires_at %s registered as %v", req.ExpiresAt, w.ExpiresAt)
		}
		if d, ok := timerDeadline(req); ok && req.ExpiresAt != nil && req.ExpiresAt.Before(d) {
			t.Fatalf("a timer expiring at %s, before its natural deadline %s, registered: it could only expire", req.ExpiresAt, d)
		}
	})
}

// sameJSON reports whether two JSON texts are the same value (absent
// reads as null).
func sameJSON(x, y json.RawMessage) bool {
	norm := func(r json.RawMessage) string {
		if len(r) == 0 {
			return "null"
		}
		var v any
		if err := json.Unmarshal(r, &v); err != nil {
			return "invalid: " + string(r)
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	return norm(x) == norm(y)
}

// FuzzPutRecipient: PUT /api/v1/recipients/{id} over the real recipients
// service either stores the recipient the path and body say, and answers
// it without its webhook's secret, or refuses as the client's mistake.
func FuzzPutRecipient(f *testing.F) {
	for _, s := range []struct{ id, body string }{
		{"agent-1", `{"status":"running"}`},
		{"agent:1@host", `{"status":"paused","workspace":"/srv/agent"}`},
		{"a", `{"status":"running","webhook":{"url":"https://example.com/h","secret":"whsec_MDEyMzQ1Njc4OWFiY2RlZg"}}`},
		{"a", `{"status":"running","webhook":{"url":"http://127.0.0.1/h","secret":"whsec_MDEyMzQ1Njc4OWFiY2RlZg"}}`},
		{"b", `{"status":"running","refs":[{"kind":"ticket","params":{"id":"T-1"}},{"kind":"ci","params":{}}]}`},
		{"b", `{"status":"stopped","refs":[{"kind":"ticket","params":"x"}]}`},
		{"c", `{"status":"running","workspace":"relative/../x"}`},
		{"a b", `{"status":"running"}`},
		{"", `{"status":"running"}`},
		{"h", `{"status":"running","heartbeats":[{"name":"backup","period":"24h","grace":"1h"},{"name":"sync","period":"5m","grace":"0s"}]}`},
		{"h", `{"status":"running","heartbeats":[{"name":"Backup!","period":"1h","grace":"1m"}]}`},
		{"h", `{"status":"running","heartbeats":[{"name":"a","period":"1ms","grace":"1s"},{"name":"a","period":"1h","grace":"1s"}]}`},
		{"h", `{"status":"running","heartbeats":[{"name":"a","period":"1h","grace":"-1s","token":"x"}]}`},
		{"d", `{"status":"asleep"}`},
		{"d", `{"status":"running","secret":"x"}`},
		// Hostile but well-formed: each over a bound, each a 422.
		{"e", `{"status":"running","webhook":{"url":"https://example.com/` + strings.Repeat("a", 200_000) + `","secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}`},
		{"e", `{"status":"running","webhook":{"url":"https://example.com/h","secret":"whsec_` + strings.Repeat("AAAA", 700<<10/4) + `"}}`},
		{"e", `{"status":"running","webhook":{"url":"https://example.com/h","secret":"whsec_AAAAAAAAAAAAAAAAAAAAAA=="}}`},
		{"e", `{"status":"running","workspace":"/` + strings.Repeat("w", 5000) + `"}`},
		{"e", `{"status":"running","refs":[{"kind":"ticket","params":` + strings.Repeat("[", 500) + strings.Repeat("]", 500) + `}]}`},
		{"e", `{"status":"running","refs":[{"kind":"` + strings.Repeat("k", 100_000) + `","params":{}}]}`},
	} {
		f.Add(s.id, []byte(s.body))
	}
	a := newFuzzAPI(f)
	f.Fuzz(func(t *testing.T, id string, body []byte) {
		status, b := a.do("PUT", "/api/v1/recipients/"+url.PathEscape(id), nil, body)
		if status != 200 {
			checkRefusal(t, "put", status, b)
			return
		}
		var req api.RecipientRequest
		if err := a.decodeBody(body, &req); err != nil {
			t.Fatalf("%q stored, and decode refuses it: %v", body, err)
		}
		var rec api.Recipient
		if err := strictUnmarshal(b, &rec); err != nil { // no secret, nor any other field
			t.Fatalf("response %s: %v", b, err)
		}
		if w := req.Webhook; w != nil && (len(w.URL) > recipients.MaxWebhookURL || webhooks.CheckSecret(w.Secret) != nil) || len(req.Workspace) > recipients.MaxWorkspace {
			t.Fatalf("a recipient over the bounds stored: %.200q", body)
		}
		for _, r := range req.Refs {
			if kind.CheckParams(r.Params) != nil {
				t.Fatalf("a ref's params over the host's bounds stored: %.200q", body)
			}
		}
		if rec.ID != id || rec.Status != req.Status || rec.Workspace != req.Workspace || len(rec.Refs) != len(req.Refs) ||
			(rec.Webhook == nil) != (req.Webhook == nil) || rec.Webhook != nil && rec.Webhook.URL != req.Webhook.URL {
			t.Fatalf("%q %q stored as %s", id, body, b)
		}
		for i := range req.Refs {
			if rec.Refs[i].Kind != req.Refs[i].Kind || !sameJSON(rec.Refs[i].Params, req.Refs[i].Params) {
				t.Fatalf("%q stored as %s", body, b)
			}
		}
	})
}

// FuzzRecordObserved: POST /api/v1/scopes/{scope}/observe over the real
// observer records (201, or 200 for a duplicate) what
// observe.DecodeRecord accepts, or refuses as the client's mistake.
func FuzzRecordObserved(f *testing.F) {
	for _, s := range []struct{ scope, body string }{
		{"support", `{"item":"m2","thread":"T1","text":"again","source":"slack-help"}`},
		{"support", `{"item":"m1","thread":"T1","text":"hi","source":"slack-help"}`},
		{"support", `{"item":"m3","thread":"T2","revision":"r2"}`},
		{"support", `{"item":"m3","thread":"T2","source":"mail"}`},
		{"closed", `{"item":"m","thread":"T","source":"mail"}`},
		{"nowhere", `{"item":"m","thread":"T"}`},
		{"support", `{"item":"","thread":"T"}`},
		{"support", `{"item":"m","thread":"T","reporter":"me"}`},
		{"support", `{"item":"m4","thread":"T","run":"nightly@1"}`},
		{"support", `{"item":"m4","thread":"T","run":""}`},
		{"gone", `{"item":"m","thread":"T"}`},
	} {
		f.Add(s.scope, []byte(s.body))
	}
	a := newFuzzAPI(f)
	f.Fuzz(func(t *testing.T, scope string, body []byte) {
		status, b := a.do("POST", "/api/v1/scopes/"+url.PathEscape(scope)+"/observe", nil, body)
		if status != 201 && status != 200 {
			checkRefusal(t, "record", status, b)
			return
		}
		rec, err := observe.DecodeRecord(body)
		if err != nil {
			t.Fatalf("%q recorded, and DecodeRecord refuses it: %v", body, err)
		}
		var res api.ObserveResult
		if err := strictUnmarshal(b, &res); err != nil || res.Duplicate != (status == 200) || res.ThreadKey == "" || res.Event.Reporter != kind.LocalPrincipal {
			t.Fatalf("%+v recorded as %d %s (%v)", rec, status, b, err)
		}
	})
}

// FuzzWorkRoutes: POST /api/v1/work/{id}/claim and /complete over the
// real observer either answer the Work, claimed by the recipient the body
// names, or refuse as the client's mistake. known swaps the fuzzed id for
// the one Work's, so the bodies reach the claim itself.
func FuzzWorkRoutes(f *testing.F) {
	for _, s := range []struct {
		id       string
		known    bool
		complete bool
		body     string
	}{
		{"", true, false, `{"recipient":{"id":"agent-1"}}`},
		{"", true, false, `{"recipient":{"id":"agent-2"}}`},
		{"", true, true, ``},
		{"", true, false, `{"recipient":{"id":""}}`},
		{"", true, false, `{"recipient":"agent-1"}`},
		{"", true, false, `{"recipient":{"id":"agent-1"},"force":true}`},
		{"01JDQ0000000000000000000000", false, false, `{"recipient":{"id":"agent-1"}}`},
		{"..", false, true, `{}`},
		{"", true, false, `{"recipient":{"id":"paused-1"}}`}, // a recipient not running claims nothing: 409
	} {
		f.Add(s.id, s.known, s.complete, []byte(s.body))
	}
	a := newFuzzAPI(f)
	f.Fuzz(func(t *testing.T, id string, known, complete bool, body []byte) {
		if known {
			id = a.work
		}
		route := "claim"
		if complete {
			route = "complete"
		}
		status, b := a.do("POST", "/api/v1/work/"+url.PathEscape(id)+"/"+route, nil, body)
		if status != 200 {
			checkRefusal(t, route, status, b)
			return
		}
		var w api.Work
		if err := strictUnmarshal(b, &w); err != nil || w.ID != a.work {
			t.Fatalf("%s %q: %s (%v)", route, id, b, err)
		}
		if complete {
			if w.State != "completed" {
				t.Fatalf("completed as %s", b)
			}
			return
		}
		var req api.ClaimRequest
		if err := a.decodeBody(body, &req); err != nil {
			t.Fatalf("%q claimed, and decode refuses it: %v", body, err)
		}
		if w.ClaimedBy != req.Recipient.ID {
			t.Fatalf("%q claimed as %s", body, b)
		}
		if req.Recipient.ID == "paused-1" {
			t.Fatalf("a paused recipient claimed: %s", b)
		}
	})
}

// decimalSeq is the reference reading of a cursor: the empty string is
// the start, else one to twenty ASCII digits whose value fits 64 bits.
func decimalSeq(s string) (uint64, bool) {
	var n uint64
	for i := 0; i < len(s); i++ {
		d := uint64(s[i] - '0')
		if s[i] < '0' || s[i] > '9' || n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// FuzzMailboxCursor: cursor, the mailbox read's and the SSE stream's
// position, takes Last-Event-ID over ?after= (a reconnecting EventSource
// sends both), reads exactly a decimal sequence number, and refuses
// anything else as a 422 naming after; a mailbox read from it answers
// next at or after it.
func FuzzMailboxCursor(f *testing.F) {
	for _, s := range []struct{ header, query string }{
		{"", ""}, {"5", ""}, {"", "5"}, {"7", "5"}, {"18446744073709551615", ""}, {"18446744073709551616", ""},
		{"", "-1"}, {"+1", ""}, {"0x10", ""}, {" 1", ""}, {"1_000", ""}, {"", "007"}, {"", "1 "}, {"x", "1"},
	} {
		f.Add(s.header, s.query)
	}
	a := newFuzzAPI(f)
	f.Fuzz(func(t *testing.T, header, query string) {
		uri := "/api/v1/recipients/agent-1/mailbox?wait=0s&after=" + url.QueryEscape(query)
		var fctx fasthttp.RequestCtx
		fctx.Request.SetRequestURI(uri)
		fctx.Request.Header.Set("Last-Event-ID", header)
		// What reaches the handler, as fasthttp reads the request.
		v := string(fctx.Request.Header.Peek("Last-Event-ID"))
		if v == "" {
			v = string(fctx.QueryArgs().Peek("after"))
		}
		c := a.app.AcquireCtx(&fctx)
		got, err := cursor(c)
		a.app.ReleaseCtx(c)
		want, ok := decimalSeq(v)
		switch {
		case ok && (err != nil || got != want):
			t.Fatalf("Last-Event-ID %q, after %q: %d %v, want %d", header, query, got, err, want)
		case !ok:
			var ae *api.Error
			if !errors.As(err, &ae) || ae.Code != api.CodeInvalidField || ae.Field != "after" || api.Status(ae.Code) != 422 {
				t.Fatalf("Last-Event-ID %q, after %q: %d %v, want a 422 naming after", header, query, got, err)
			}
		}

		status, b := a.do("GET", uri, []string{"Last-Event-ID", header}, nil)
		if status != 200 {
			checkRefusal(t, "read", status, b)
			if ok {
				t.Fatalf("cursor %q read, and the mailbox refuses it: %d %s", v, status, b)
			}
			return
		}
		var mb api.Mailbox
		if err := strictUnmarshal(b, &mb); err != nil || !ok || mb.Next < want {
			t.Fatalf("cursor %q: %s (%v)", v, b, err)
		}
	})
}

// The targets' in-process requests reach the handlers as a socket's do:
// a guard on the harness, so a target cannot pass by never arriving.
func TestFuzzAPIHarness(t *testing.T) {
	st := apitest.NewStack(t, apitest.Config{Plugins: fakePlugins(), Clock: fakeclock.At(t0)})
	app := New(Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients, Plugins: fakePlugins()}, Options{})
	a := &fuzzAPI{app: app, h: app.Handler()}
	status, b := a.do("POST", "/api/v1/watches", nil, []byte(`{"kind":"ci","params":{},"recipient":{"id":"agent-1"}}`))
	if status != 201 || !strings.Contains(string(b), `"state":"pending"`) {
		t.Fatalf("create: %d %s", status, b)
	}
	status, b = a.do("POST", "/api/v1/watches", nil, []byte(`{"kind":`))
	if status != 400 {
		t.Fatalf("malformed: %d %s", status, b)
	}
}

// FuzzIdempotencyKeyHeader: a registration with any Idempotency-Key
// header value either is refused 400 invalid_idempotency_key, exactly
// when api.ParseIdempotencyKey refuses the value, or is written once: the
// same request again under the value answers the same status and body,
// marked replayed.
func FuzzIdempotencyKeyHeader(f *testing.F) {
	for _, k := range []string{"k", `"k"`, `"a\"b"`, "", `""`, " k ", `"k`, "a b", strings.Repeat("k", 255), strings.Repeat("k", 256), "\x00", "ключ"} {
		f.Add(k)
	}
	a := newFuzzAPI(f)
	f.Fuzz(func(t *testing.T, v string) {
		for i := 0; i < len(v); i++ {
			if (v[i] < 0x20 && v[i] != '\t') || v[i] == 0x7f {
				t.Skip("not a field value HTTP can carry (a control byte)")
			}
		}
		body := []byte(`{"kind":"ci","params":{},"recipient":{"id":"agent-1"}}`)
		first, b1 := a.do("POST", "/api/v1/watches", []string{api.HeaderIdempotencyKey, v}, body)
		_, perr := api.ParseIdempotencyKey(v)
		if perr != nil {
			var env api.ErrorEnvelope
			if first != 400 || strictUnmarshal(b1, &env) != nil || env.Error.Code != api.CodeInvalidIdempotencyKey {
				t.Fatalf("key %q refused by the parser (%v): %d %s", v, perr, first, b1)
			}
			return
		}
		again, b2 := a.do("POST", "/api/v1/watches", []string{api.HeaderIdempotencyKey, v}, body)
		if first != 201 || again != 201 || string(b1) != string(b2) {
			t.Fatalf("key %q: %d %s, then %d %s: want one 201, answered again", v, first, b1, again, b2)
		}
	})
}
