package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/authztest"
	"github.com/vigilhq/vigil/internal/captoken"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/signal"
	"github.com/vigilhq/vigil/store"
)

const agentToken = "agent-1-token-for-signals"

type signalFixture struct {
	app   *fiber.App
	stack *apitest.Stack
	clock *fakeclock.Clock
}

// newSignalFixture is the API over the real core on badger, serving the
// signal kind, with bearer tokens on: agent-1 registers, and the signal's
// URL is called with none.
func newSignalFixture(t *testing.T) *signalFixture {
	t.Helper()
	reg := kind.NewRegistry()
	if err := (signal.Kind{}).Register(reg); err != nil {
		t.Fatal(err)
	}
	clk := fakeclock.At(t0)
	st := apitest.NewStack(t, apitest.Config{Plugins: reg, Clock: clk})
	app := New(Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients,
		Signals: signal.NewService(st.Store, st.Scheduler)},
		Options{Auth: authztest.Guard(t, map[string]string{agentToken: "agent-1"})})
	return &signalFixture{app: app, stack: st, clock: clk}
}

// register registers a signal for agent-1 with params and answers the
// watch and the URL's token.
func (f *signalFixture) register(t *testing.T, params string, extra string) (api.Watch, string) {
	t.Helper()
	resp, b := call(t, f.app, agentToken, "POST", "/api/v1/watches", `{"kind":"signal","recipient":{"id":"agent-1"},"params":`+params+extra+`}`)
	if resp.StatusCode != 201 {
		t.Fatalf("register: %d %s", resp.StatusCode, b)
	}
	var w api.Watch
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	i := strings.Index(w.SignalURL, SignalsPath)
	if i < 0 {
		t.Fatalf("signal_url %q", w.SignalURL)
	}
	tok := w.SignalURL[i+len(SignalsPath):]
	if _, err := captoken.Parse(tok); err != nil {
		t.Fatalf("the URL's token %q: %v", tok, err)
	}
	if resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("the registration's answer may be cached: %q", resp.Header.Get("Cache-Control"))
	}
	return w, tok
}

// signalCall sends a request to a signal's URL with no bearer token.
func signalCall(t *testing.T, app *fiber.App, method, tok, contentType, body, accept string) (*http.Response, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, SignalsPath+tok, r)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := app.Test(req, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if got := resp.Header.Get("Referrer-Policy"); got != "no-referrer" {
		t.Errorf("%s %s: Referrer-Policy %q", method, SignalsPath, got)
	}
	return resp, b
}

func signalErr(t *testing.T, b []byte) api.Error {
	t.Helper()
	var env api.ErrorEnvelope
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return env.Error
}

// A signal answers its URL once, at registration; the URL needs no bearer
// token; an outcome not offered is refused with nothing written; the
// first completion settles the watch fired and mails the outcome and
// data; a second is 409 with the first's outcome.
func TestSignalCompletesOnceThroughItsURL(t *testing.T) {
	f := newSignalFixture(t)
	w, tok := f.register(t, `{"title":"Deploy build 1423?"}`, "")
	if w.State != "pending" || w.Kind != "signal" {
		t.Fatalf("registered %+v", w)
	}
	// Never again: not in a read, a listing, or any record of the store.
	for _, path := range []string{"/api/v1/watches/" + w.ID, "/api/v1/watches?recipient=agent-1"} {
		resp, b := call(t, f.app, agentToken, "GET", path, "")
		if resp.StatusCode != 200 || bytes.Contains(b, []byte(tok)) || bytes.Contains(b, []byte("signal_url")) {
			t.Fatalf("GET %s: %d shows the token: %s", path, resp.StatusCode, b)
		}
	}
	err := f.stack.Store.ExportRecords(context.Background(), func(kv store.KeyValue) error {
		if bytes.Contains(kv.Value, []byte(tok)) || strings.Contains(kv.Key.Name, tok) {
			t.Errorf("the store keeps the token itself in %s", kv.Key.Fam)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	resp, b := signalCall(t, f.app, "GET", tok, "", "", "application/json")
	var sig api.Signal
	if resp.StatusCode != 200 || json.Unmarshal(b, &sig) != nil || sig.Title != "Deploy build 1423?" || sig.State != "pending" ||
		strings.Join(sig.Outcomes, ",") != "approve,deny" {
		t.Fatalf("GET the URL: %d %s", resp.StatusCode, b)
	}
	resp, b = signalCall(t, f.app, "POST", tok, "application/json", `{"outcome":"maybe"}`, "")
	if e := signalErr(t, b); resp.StatusCode != 422 || e.Code != api.CodeInvalidField || e.Field != "outcome" {
		t.Fatalf("an outcome not offered: %d %s", resp.StatusCode, b)
	}
	if msgs, _ := f.stack.Store.ReadMailbox(context.Background(), "agent-1", 0, 10); len(msgs) != 0 {
		t.Fatalf("a refused completion mailed %+v", msgs)
	}
	resp, b = signalCall(t, f.app, "POST", tok, "application/json", `{"outcome":"approve","data":{"by":"ana"}}`, "")
	if resp.StatusCode != 200 || json.Unmarshal(b, &sig) != nil || sig.State != "fired" || sig.Outcome != "approve" || string(sig.Data) != `{"by":"ana"}` {
		t.Fatalf("the completion: %d %s", resp.StatusCode, b)
	}
	msgs, err := f.stack.Store.ReadMailbox(context.Background(), "agent-1", 0, 10)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("mailbox %+v %v", msgs, err)
	}
	m := msgs[0]
	var d signal.Detail
	if m.Type != store.MessageFired || m.Outcome.Result != "approve" || json.Unmarshal(m.Outcome.Detail, &d) != nil ||
		d.Outcome != "approve" || string(d.Data) != `{"by":"ana"}` || d.Title != "Deploy build 1423?" || m.WatchID.String() != w.ID {
		t.Fatalf("the message %+v", m)
	}
	resp, b = signalCall(t, f.app, "POST", tok, "application/json", `{"outcome":"deny"}`, "")
	var c api.SignalConflict
	if resp.StatusCode != 409 || json.Unmarshal(b, &c) != nil || c.Error.Code != api.CodeAlreadySettled || c.Signal.Outcome != "approve" || c.Signal.State != "fired" {
		t.Fatalf("a second completion: %d %s", resp.StatusCode, b)
	}
	if msgs, _ := f.stack.Store.ReadMailbox(context.Background(), "agent-1", 0, 10); len(msgs) != 1 {
		t.Fatalf("a second completion mailed: %+v", msgs)
	}
}

// An unknown, a malformed and a pruned token answer alike: 404.
func TestSignalUnknownURLsAnswerAlike(t *testing.T) {
	f := newSignalFixture(t)
	other, _ := captoken.New(strings.NewReader(strings.Repeat("x", 16)))
	for _, tok := range []string{other, "short", strings.Repeat("%", 22), "..%2f..%2fwatches"} {
		for _, m := range []string{"GET", "POST"} {
			resp, b := signalCall(t, f.app, m, url.PathEscape(tok), "application/json", `{"outcome":"approve"}`, "application/json")
			if e := signalErr(t, b); resp.StatusCode != 404 || e.Code != api.CodeNotFound || strings.Contains(string(b), tok) {
				t.Errorf("%s %q: %d %s", m, tok, resp.StatusCode, b)
			}
		}
	}
}

// Data must meet the schema the registration gave, the field at fault
// named; nothing is written until it does.
func TestSignalDataMeetsItsSchema(t *testing.T) {
	f := newSignalFixture(t)
	_, tok := f.register(t, `{"title":"Why?","outcomes":["done"],"schema":{"type":"object","required":["reason"],"properties":{"reason":{"type":"string","maxLength":10}}}}`, "")
	for body, field := range map[string]string{
		`{"outcome":"done"}`:                                  "data",
		`{"outcome":"done","data":{}}`:                        "data.reason",
		`{"outcome":"done","data":{"reason":"far too long"}}`: "data.reason",
	} {
		resp, b := signalCall(t, f.app, "POST", tok, "application/json", body, "")
		if e := signalErr(t, b); resp.StatusCode != 422 || e.Code != api.CodeInvalidField || e.Field != field {
			t.Errorf("%s: %d %s, want field %s", body, resp.StatusCode, b, field)
		}
	}
	resp, b := signalCall(t, f.app, "POST", tok, "application/json", `{"outcome":"done","data":{"reason":"ok"}}`, "")
	if resp.StatusCode != 200 {
		t.Fatalf("data that meets the schema: %d %s", resp.StatusCode, b)
	}
	// Over the bound: refused before it is read.
	_, tok = f.register(t, `{"title":"Big?"}`, "")
	big := `{"outcome":"approve","data":{"x":"` + strings.Repeat("a", signal.MaxBody) + `"}}`
	resp, b = signalCall(t, f.app, "POST", tok, "application/json", big, "")
	if e := signalErr(t, b); resp.StatusCode != 413 || e.Code != api.CodeBodyTooLarge {
		t.Fatalf("a body over the bound: %d %s", resp.StatusCode, b)
	}
}

// A signal nobody answers expires at its deadline and is mailed, as every
// watch is; its URL then answers 409 with the expiry.
func TestSignalExpiresAsEveryWatch(t *testing.T) {
	f := newSignalFixture(t)
	exp := t0.Add(10 * time.Minute).Format(time.RFC3339)
	w, tok := f.register(t, `{"title":"Still there?"}`, `,"expires_at":"`+exp+`"`)
	if n := f.stack.Scheduler.Tick(context.Background(), t0.Add(time.Minute)); n != 0 {
		t.Fatalf("a signal was probed before its deadline: %d", n)
	}
	f.clock.Set(t0.Add(10 * time.Minute))
	f.stack.Scheduler.Tick(context.Background(), t0.Add(10*time.Minute))
	got, err := f.stack.Store.Get(context.Background(), mustID(t, w.ID))
	if err != nil || got.State != store.Expired {
		t.Fatalf("at its deadline: %s %v", got.State, err)
	}
	msgs, _ := f.stack.Store.ReadMailbox(context.Background(), "agent-1", 0, 10)
	if len(msgs) != 1 || msgs[0].Type != store.MessageExpired {
		t.Fatalf("mailbox %+v", msgs)
	}
	resp, b := signalCall(t, f.app, "POST", tok, "application/json", `{"outcome":"approve"}`, "")
	var c api.SignalConflict
	if resp.StatusCode != 409 || json.Unmarshal(b, &c) != nil || c.Signal.State != "expired" || c.Signal.Outcome != "" {
		t.Fatalf("answering an expired signal: %d %s", resp.StatusCode, b)
	}
}

// In a browser the URL is a page: what is asked, escaped, a button per
// outcome, under a policy that runs no script; its form answers it.
func TestSignalPageAsksAndAnswers(t *testing.T) {
	f := newSignalFixture(t)
	_, tok := f.register(t, `{"title":"Merge <b>#12</b>?","prompt":"It fixes the build.","outcomes":["merge","wait","close"]}`, "")
	resp, b := signalCall(t, f.app, "GET", tok, "", "", "text/html,application/xhtml+xml,*/*;q=0.8")
	page := string(b)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("the page: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") || strings.Contains(page, "<script") {
		t.Fatalf("the page's policy %q", csp)
	}
	if strings.Contains(page, "<b>#12</b>") || !strings.Contains(page, "Merge &lt;b&gt;#12&lt;/b&gt;?") || !strings.Contains(page, "It fixes the build.") {
		t.Fatalf("the page names what is asked unescaped or not at all:\n%s", page)
	}
	for _, o := range []string{"merge", "wait", "close"} {
		if !strings.Contains(page, `name="outcome" value="`+o+`"`) {
			t.Fatalf("no button for %s:\n%s", o, page)
		}
	}
	if strings.Contains(page, "http://") || strings.Contains(page, "https://") {
		t.Fatalf("the page loads an external resource:\n%s", page)
	}
	resp, b = signalCall(t, f.app, "POST", tok, "application/x-www-form-urlencoded", "outcome=wait", "text/html")
	if resp.StatusCode != 200 || !strings.Contains(string(b), "Sent: ") || !strings.Contains(string(b), ">wait<") || strings.Contains(string(b), `name="outcome"`) {
		t.Fatalf("the form's answer: %d\n%s", resp.StatusCode, b)
	}
	resp, b = signalCall(t, f.app, "POST", tok, "application/x-www-form-urlencoded", "outcome=close", "text/html")
	if resp.StatusCode != 409 || !strings.Contains(string(b), "already answered") || !strings.Contains(string(b), ">wait<") {
		t.Fatalf("a second answer from the page: %d\n%s", resp.StatusCode, b)
	}
}

// The registration's params are checked before anything is written, and
// a signal takes no cadence.
func TestSignalRegistrationRefusals(t *testing.T) {
	f := newSignalFixture(t)
	for body, field := range map[string]string{
		`{"kind":"signal","recipient":{"id":"agent-1"},"params":{}}`:                                           "params.title",
		`{"kind":"signal","recipient":{"id":"agent-1"},"params":{"title":"x","outcomes":["Yes!"]}}`:            "params.outcomes.0",
		`{"kind":"signal","recipient":{"id":"agent-1"},"params":{"title":"x","outcomes":["a","a"]}}`:           "params.outcomes.1",
		`{"kind":"signal","recipient":{"id":"agent-1"},"params":{"title":"x","outcomes":[]}}`:                  "params.outcomes",
		`{"kind":"signal","recipient":{"id":"agent-1"},"params":{"title":"x","schema":{"type":"nope"}}}`:       "params.schema",
		`{"kind":"signal","recipient":{"id":"agent-1"},"params":{"title":"x","token":"mine"}}`:                 "params",
		`{"kind":"signal","recipient":{"id":"agent-1"},"params":{"title":"x"},"every":"1m"}`:                   "every",
		`{"kind":"signal","recipient":{"id":"agent-1"},"params":{"title":"` + strings.Repeat("t", 201) + `"}}`: "params.title",
	} {
		resp, b := call(t, f.app, agentToken, "POST", "/api/v1/watches", body)
		if e := signalErr(t, b); resp.StatusCode != 422 || e.Field != field {
			t.Errorf("%.90s: %d %s, want field %s", body, resp.StatusCode, b, field)
		}
	}
	if n, err := f.stack.Store.CountPending(context.Background(), "agent-1", 10); err != nil || n != 0 {
		t.Fatalf("refused registrations wrote %d %v", n, err)
	}
}

// The log never holds a signal's token: the path is cut at it.
func TestSignalPathIsNotLogged(t *testing.T) {
	app := fiber.New()
	var got string
	app.All("/*", func(c *fiber.Ctx) error { got = logPath(c); return nil })
	for path, want := range map[string]string{
		SignalsPath + "AAAAAAAAAAAAAAAAAAAAAA":   SignalsPath + "…",
		"/API/V1/SIGNALS/AAAAAAAAAAAAAAAAAAAAAA": "/API/V1/SIGNALS/…",
		"/api/v1/watches/01h":                    "/api/v1/watches/01h",
	} {
		if _, err := app.Test(httptest.NewRequest("GET", path, nil)); err != nil || got != want {
			t.Errorf("%s logs as %q, want %q", path, got, want)
		}
	}
}

// Completions racing: exactly one wins, every other is told its outcome,
// and one message is mailed.
func TestSignalRacingCompletionsOneWins(t *testing.T) {
	f := newSignalFixture(t)
	_, tok := f.register(t, `{"title":"Who first?","outcomes":["a","b","c","d","e","f","g","h"]}`, "")
	type result struct {
		status int
		body   []byte
	}
	outs := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	results := make(chan result, len(outs))
	for _, o := range outs {
		go func() {
			req := httptest.NewRequest("POST", SignalsPath+tok, strings.NewReader(`{"outcome":"`+o+`"}`))
			req.Header.Set("Content-Type", "application/json")
			resp, err := f.app.Test(req, 10_000)
			if err != nil {
				results <- result{status: -1, body: []byte(err.Error())}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			results <- result{resp.StatusCode, b}
		}()
	}
	var winner string
	var lost []api.SignalConflict
	for range outs {
		r := <-results
		switch r.status {
		case 200:
			var s api.Signal
			if winner != "" || json.Unmarshal(r.body, &s) != nil {
				t.Fatalf("a second winner: %s (first %s)", r.body, winner)
			}
			winner = s.Outcome
		case 409:
			var c api.SignalConflict
			if err := json.Unmarshal(r.body, &c); err != nil {
				t.Fatal(err)
			}
			lost = append(lost, c)
		default:
			t.Fatalf("%d %s", r.status, r.body)
		}
	}
	for _, c := range lost {
		if c.Signal.Outcome != winner {
			t.Fatalf("a loser was told %q, the winner was %q", c.Signal.Outcome, winner)
		}
	}
	msgs, _ := f.stack.Store.ReadMailbox(context.Background(), "agent-1", 0, 100)
	if winner == "" || len(msgs) != 1 || msgs[0].Outcome.Result != winner {
		t.Fatalf("winner %q, mailbox %+v", winner, msgs)
	}
}
