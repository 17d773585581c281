package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/authz"
	"github.com/vigilhq/vigil/internal/authztest"
	"github.com/vigilhq/vigil/internal/delivery"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/hosttest"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/observe"
	"github.com/vigilhq/vigil/internal/recipients"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/store"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// fakePlugins serves "ci" (settles on the first probe, refuses params
// {"bad":true}) and the standing "ticket".
func fakePlugins() apitest.FakePlugins {
	return apitest.NewFakePlugins(hosttest.CI(), hosttest.Ticket())
}

type fixture struct {
	app    *fiber.App
	st     *store.Store
	sched  *scheduler.Scheduler
	del    *delivery.Delivery
	recips *recipients.Service
	ob     *observe.Observer
}

// observeConfig is scope support, whose one source the local principal
// (a server without tokens) reports, and scope closed, which it does not.
func observeConfig() observe.Config {
	return observe.Config{Scopes: map[string]observe.Scope{
		"support": {Observe: []observe.Entry{{Sources: []observe.Source{{Name: "slack-help", Reporters: []string{kind.LocalPrincipal, "tester"}}}}}, Routes: []observe.Route{{Source: "slack-help"}}},
		"closed":  {Observe: []observe.Entry{{Sources: []observe.Source{{Name: "mail", Reporters: []string{"someone-else"}}}}}},
		"gone":    {Routes: []observe.Route{{Source: "mail"}}}, // its last observe entry removed
	}}
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	st := apitest.NewStack(t, apitest.Config{Plugins: fakePlugins(), Clock: fakeclock.At(t0)})
	app := New(Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients, Plugins: fakePlugins()},
		Options{BodyLimit: 4096, StreamWait: 50 * time.Millisecond})
	ob, err := observe.New(observe.Options{Store: st.Store, Clock: fakeclock.At(t0), Waker: st.Scheduler, Rate: 0.001, Burst: 3}, observeConfig())
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{app: app, st: st.Store, sched: st.Scheduler, del: st.Delivery, recips: st.Recipients, ob: ob}
}

func (f *fixture) do(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	resp, b := call(t, f.app, "", method, path, body)
	return resp.StatusCode, b
}

// call sends one JSON request to app, with token as its bearer token when
// it is set, and reads the whole answer.
func call(t *testing.T, app *fiber.App, token, method, path, body string) (*http.Response, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, r)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := app.Test(req, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	return resp, b
}

func TestErrorCodes(t *testing.T) {
	f := newFixture(t)
	watch := `{"kind":"ci","params":{},"recipient":{"id":"agent-1"}}`
	_, b := f.do(t, "POST", "/api/v1/watches", watch)
	var w api.Watch
	_ = json.Unmarshal(b, &w)
	f.sched.Tick(context.Background(), t0) // settles it
	_, _ = f.do(t, "PUT", "/api/v1/recipients/paused", `{"status":"paused"}`)
	tests := []struct {
		name, method, path, body string
		status                   int
		code, field, setting     string
	}{
		{"malformed json", "POST", "/api/v1/watches", `{"kind":`, 400, api.CodeMalformedJSON, "", ""},
		{"empty body", "POST", "/api/v1/watches", ``, 400, api.CodeMalformedJSON, "", ""},
		{"trailing data", "POST", "/api/v1/watches", watch + `{}`, 400, api.CodeMalformedJSON, "", ""},
		{"unknown field", "POST", "/api/v1/watches", `{"kind":"ci","params":{},"recipient":{"id":"a"},"priority":1}`, 422, api.CodeInvalidField, "priority", ""},
		{"wrong type", "POST", "/api/v1/watches", `{"kind":5}`, 422, api.CodeInvalidField, "kind", ""},
		{"no kind", "POST", "/api/v1/watches", `{"params":{},"recipient":{"id":"a"}}`, 422, api.CodeInvalidField, "kind", ""},
		{"unobservable", "POST", "/api/v1/watches", `{"kind":"gitlab","params":{},"recipient":{"id":"a"}}`, 422, api.CodeWatchUnobservable, "", "kinds.gitlab.wasm"},
		{"invalid params", "POST", "/api/v1/watches", `{"kind":"ci","params":{"bad":true},"recipient":{"id":"a"}}`, 422, api.CodeInvalidParams, "params.bad", ""},
		{"bad every", "POST", "/api/v1/watches", `{"kind":"ci","params":{},"recipient":{"id":"a"},"every":"often"}`, 422, api.CodeInvalidField, "every", ""},
		{"every too short", "POST", "/api/v1/watches", `{"kind":"ci","params":{},"recipient":{"id":"a"},"every":"10ms"}`, 422, api.CodeInvalidField, "every", ""},
		{"deadline too far", "POST", "/api/v1/watches", `{"kind":"ci","params":{},"recipient":{"id":"a"},"expires_at":"2027-01-01T00:00:00Z"}`, 422, api.CodeDeadlineTooFar, "expires_at", ""},
		{"bad recipient", "POST", "/api/v1/watches", `{"kind":"ci","params":{},"recipient":{"id":"a/b"}}`, 422, api.CodeInvalidRecipient, "recipient.id", ""},
		{"paused recipient", "POST", "/api/v1/watches", `{"kind":"ci","params":{},"recipient":{"id":"paused"}}`, 409, api.CodeRecipientNotRunning, "recipient.id", ""},
		{"list malformed recipient", "GET", "/api/v1/watches?recipient=a%20b", "", 422, api.CodeInvalidRecipient, "recipient", ""},
		{"list bad state", "GET", "/api/v1/watches?state=done", "", 422, api.CodeInvalidField, "state", ""},
		{"unknown watch", "GET", "/api/v1/watches/01m8nhtng4ra8tgz0tmrscbt6g", "", 404, api.CodeNotFound, "", ""},
		{"malformed watch id", "GET", "/api/v1/watches/xyz", "", 404, api.CodeNotFound, "", ""},
		{"cancel settled", "DELETE", "/api/v1/watches/" + w.ID, "", 409, api.CodeAlreadySettled, "", ""},
		{"cancel unknown", "DELETE", "/api/v1/watches/01m8nhtng4ra8tgz0tmrscbt6g", "", 404, api.CodeNotFound, "", ""},
		{"unknown recipient", "GET", "/api/v1/recipients/nobody", "", 404, api.CodeNotFound, "", ""},
		{"malformed recipient", "GET", "/api/v1/recipients/a%20b", "", 422, api.CodeInvalidRecipient, "id", ""},
		{"recipient bad status", "PUT", "/api/v1/recipients/x", `{"status":"asleep"}`, 422, api.CodeInvalidField, "status", ""},
		{"recipient bad webhook", "PUT", "/api/v1/recipients/x", `{"status":"running","webhook":{"url":"https://x/","secret":"hunter2"}}`, 422, api.CodeInvalidField, "webhook.secret", ""},
		{"mailbox of unknown", "GET", "/api/v1/recipients/nobody/mailbox", "", 404, api.CodeNotFound, "", ""},
		{"mailbox malformed id", "GET", "/api/v1/recipients/a%20b/mailbox", "", 422, api.CodeInvalidRecipient, "id", ""},
		{"mailbox bad wait", "GET", "/api/v1/recipients/agent-1/mailbox?wait=2m", "", 422, api.CodeInvalidField, "wait", ""},
		{"mailbox bad cursor", "GET", "/api/v1/recipients/agent-1/mailbox?after=-1", "", 422, api.CodeInvalidField, "after", ""},
		{"mailbox limit zero", "GET", "/api/v1/recipients/agent-1/mailbox?limit=0", "", 422, api.CodeInvalidField, "limit", ""},
		{"mailbox limit too big", "GET", "/api/v1/recipients/agent-1/mailbox?limit=1001", "", 422, api.CodeInvalidField, "limit", ""},
		{"unknown route", "GET", "/api/v1/nope", "", 404, api.CodeNotFound, "", ""},
		{"wrong method", "PATCH", "/api/v1/watches", "", 405, api.CodeMethodNotAllowed, "", ""},
		{"wrong method on openapi", "DELETE", "/api/v1/openapi.yaml", "", 405, api.CodeMethodNotAllowed, "", ""},
		{"wrong method on an id", "POST", "/api/v1/watches/" + w.ID, "", 405, api.CodeMethodNotAllowed, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, b := f.do(t, tt.method, tt.path, tt.body)
			var env api.ErrorEnvelope
			if err := json.Unmarshal(b, &env); err != nil {
				t.Fatalf("not the envelope: %s", b)
			}
			if status != tt.status || env.Error.Code != tt.code || env.Error.Field != tt.field || env.Error.Setting != tt.setting || env.Error.Message == "" {
				t.Fatalf("%d %s", status, b)
			}
		})
	}
}

func TestWatchLifecycle(t *testing.T) {
	f := newFixture(t)
	status, b := f.do(t, "POST", "/api/v1/watches", `{"kind":"ci","params":{"sha":"abc"},"recipient":{"id":"agent-1"},"every":"5s"}`)
	var w api.Watch
	if err := json.Unmarshal(b, &w); status != 201 || err != nil || w.State != "pending" || w.Every != "5s" || w.ExpiresAt == nil {
		t.Fatalf("%d %s", status, b)
	}
	// Durable at 201: the row is in the store.
	id, _ := store.ParseID(w.ID)
	if _, err := f.st.Get(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	status, b = f.do(t, "GET", "/api/v1/watches/"+w.ID, "")
	if status != 200 || !strings.Contains(string(b), `"state":"pending"`) {
		t.Fatalf("%d %s", status, b)
	}
	status, b = f.do(t, "DELETE", "/api/v1/watches/"+w.ID, "")
	if status != 200 || !strings.Contains(string(b), `"state":"cancelled"`) {
		t.Fatalf("%d %s", status, b)
	}
	status, b = f.do(t, "GET", "/api/v1/watches?recipient=agent-1&state=cancelled", "")
	var list api.WatchList
	if err := json.Unmarshal(b, &list); status != 200 || err != nil || len(list.Watches) != 1 {
		t.Fatalf("%d %s", status, b)
	}
	// Listing a recipient with no watches is an empty list, not an error.
	status, b = f.do(t, "GET", "/api/v1/watches?recipient=nobody", "")
	if status != 200 || string(b) != `{"watches":[]}` {
		t.Fatalf("%d %s", status, b)
	}
}

func TestRecipientSecretIsWriteOnly(t *testing.T) {
	f := newFixture(t)
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	status, b := f.do(t, "PUT", "/api/v1/recipients/agent-1", `{"status":"running","webhook":{"url":"https://hooks.example.org/vigil","secret":"`+secret+`"}}`)
	if status != 200 || strings.Contains(string(b), secret) || !strings.Contains(string(b), "hooks.example.org") {
		t.Fatalf("%d %s", status, b)
	}
	if _, b = f.do(t, "GET", "/api/v1/recipients/agent-1", ""); strings.Contains(string(b), "whsec_") {
		t.Fatalf("secret returned: %s", b)
	}
	if status, _ = f.do(t, "DELETE", "/api/v1/recipients/agent-1", ""); status != 204 {
		t.Fatalf("delete: %d", status)
	}
	if status, _ = f.do(t, "GET", "/api/v1/recipients/agent-1", ""); status != 404 {
		t.Fatalf("after delete: %d", status)
	}
}

func TestMailboxLongPollAndCursor(t *testing.T) {
	f := newFixture(t)
	_, _ = f.do(t, "POST", "/api/v1/watches", `{"kind":"ci","params":{},"recipient":{"id":"agent-1"}}`)
	// Empty at first, and at its wait bound.
	status, b := f.do(t, "GET", "/api/v1/recipients/agent-1/mailbox?wait=50ms", "")
	if status != 200 || string(b) != `{"messages":[],"next":0}` {
		t.Fatalf("%d %s", status, b)
	}
	f.sched.Tick(context.Background(), t0)
	status, b = f.do(t, "GET", "/api/v1/recipients/agent-1/mailbox?after=0", "")
	var mb api.Mailbox
	if err := json.Unmarshal(b, &mb); status != 200 || err != nil || len(mb.Messages) != 1 || mb.Next != 1 || mb.Messages[0].Type != "fired" {
		t.Fatalf("%d %s", status, b)
	}
	if _, b = f.do(t, "GET", "/api/v1/recipients/agent-1/mailbox?after=1", ""); string(b) != `{"messages":[],"next":1}` {
		t.Fatalf("after the cursor: %s", b)
	}
}

// A message read from the mailbox carries its push's state when its
// recipient has a webhook; the stream's event (the webhook body) does not.
func TestMailboxShowsThePushState(t *testing.T) {
	f := newFixture(t)
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	// A loopback URL the stack's guard refuses: the push fails without a
	// request, whenever its worker gets to it.
	if status, b := f.do(t, "PUT", "/api/v1/recipients/agent-1", `{"status":"running","webhook":{"url":"http://127.0.0.1:9/hook","secret":"`+secret+`"}}`); status != 200 {
		t.Fatalf("%d %s", status, b)
	}
	_, _ = f.do(t, "POST", "/api/v1/watches", `{"kind":"ci","params":{},"recipient":{"id":"agent-1"}}`)
	f.sched.Tick(context.Background(), t0)
	status, b := f.do(t, "GET", "/api/v1/recipients/agent-1/mailbox?after=0", "")
	var mb api.Mailbox
	if err := json.Unmarshal(b, &mb); status != 200 || err != nil || len(mb.Messages) != 1 || mb.Messages[0].Push == nil {
		t.Fatalf("%d %s", status, b)
	}
	switch p := mb.Messages[0].Push; p.State {
	case "pending", "sending", "failed":
	default:
		t.Fatalf("push %+v", p)
	}
	base := apitest.Serve(t, f.app)
	req, _ := http.NewRequest("GET", base+"/api/v1/recipients/agent-1/mailbox/stream?after=0", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	line, err := rd.ReadString('\n')
	for err == nil && !strings.HasPrefix(line, "data: ") {
		line, err = rd.ReadString('\n')
	}
	if err != nil || strings.Contains(line, `"push"`) {
		t.Fatalf("stream event %q %v", line, err)
	}
}

// The SSE stream sends each message once with its seq as the event id, and
// a reconnect with Last-Event-ID resumes after it.
func TestMailboxStream(t *testing.T) {
	f := newFixture(t)
	base := apitest.Serve(t, f.app)
	for range 2 {
		_, _ = f.do(t, "POST", "/api/v1/watches", `{"kind":"ci","params":{},"recipient":{"id":"agent-1"}}`)
	}
	f.sched.Tick(context.Background(), t0)

	read := func(lastID string, n int) []string {
		// An EventSource reconnects to the URL it was opened with (here
		// ?after=0) and sends Last-Event-ID: the id must win.
		req, _ := http.NewRequest("GET", base+"/api/v1/recipients/agent-1/mailbox/stream?after=0", nil)
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("content type %q", ct)
		}
		var ids []string
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() && len(ids) < n {
			if v, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
				ids = append(ids, v)
			}
		}
		return ids
	}
	if ids := read("", 2); fmt.Sprint(ids) != "[1 2]" {
		t.Fatalf("first connection: %v", ids)
	}
	_, _ = f.do(t, "POST", "/api/v1/watches", `{"kind":"ci","params":{},"recipient":{"id":"agent-1"}}`)
	f.sched.Tick(context.Background(), t0)
	if ids := read("2", 1); fmt.Sprint(ids) != "[3]" {
		t.Fatalf("after reconnecting: %v", ids)
	}
}

func TestPluginsRoutes(t *testing.T) {
	f := newFixture(t)
	for _, r := range []struct{ method, path string }{{"GET", "/api/v1/plugins"}, {"POST", "/api/v1/plugins/reload"}} {
		status, b := f.do(t, r.method, r.path, "")
		var pl api.PluginList
		if err := json.Unmarshal(b, &pl); status != 200 || err != nil || len(pl.Plugins) != 2 || pl.Problems == nil {
			t.Fatalf("%s %s: %d %s", r.method, r.path, status, b)
		}
		// Each plugin says which build serves it and where it came from.
		if p := pl.Plugins[1]; p.SHA256 != strings.Repeat("7", 64) || p.Source != "/plugins" {
			t.Fatalf("%s %s: the listing lacks the SHA-256 or the source: %s", r.method, r.path, b)
		}
	}
	if status, _ := f.do(t, "GET", "/healthz", ""); status != 200 {
		t.Fatalf("healthz %d", status)
	}
}

// A body over the limit is refused by fasthttp before any handler; the
// refusal still comes in the error envelope.
func TestBodyOverTheLimit(t *testing.T) {
	f := newFixture(t)
	base := apitest.Serve(t, f.app)
	body := `{"kind":"ci","params":{"x":"` + strings.Repeat("a", 5000) + `"}}`
	resp, err := http.Post(base+"/api/v1/watches", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var env api.ErrorEnvelope
	if resp.StatusCode != 413 || json.Unmarshal(b, &env) != nil || env.Error.Code != api.CodeBodyTooLarge {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}

func TestBearerTokens(t *testing.T) {
	f := newFixture(t)
	var seen string
	app := New(Deps{Scheduler: f.sched, Watches: f.st, Mailboxes: f.del, Recipients: f.recips, Plugins: fakePlugins()},
		Options{Auth: authztest.Guard(t, map[string]string{"s3cret-token-for-ci-bot": "ci-bot"})})
	try := func(auth string) int {
		req := httptest.NewRequest("GET", "/api/v1/plugins", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := app.Test(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode
	}
	for _, auth := range []string{"", "Bearer nope", "s3cret-token-for-ci-bot", "Bearer s3cret-token-for-ci-bo", "Basic s3cret-token-for-ci-bot"} {
		if got := try(auth); got != 401 {
			t.Errorf("%q: %d", auth, got)
		}
	}
	if got := try("Bearer s3cret-token-for-ci-bot"); got != 200 {
		t.Fatalf("valid token: %d", got)
	}
	// The principal is what handlers see.
	srv := &server{o: Options{Auth: authztest.Guard(t, map[string]string{"s3cret-token-for-ci-bot": "ci-bot"})}}
	probe := fiber.New()
	probe.Get("/whoami", srv.authenticate, func(c *fiber.Ctx) error { seen = Principal(c); return nil })
	req := httptest.NewRequest("GET", "/whoami", nil)
	req.Header.Set("Authorization", "Bearer s3cret-token-for-ci-bot")
	if _, err := probe.Test(req); err != nil || seen != "ci-bot" {
		t.Fatalf("principal %q %v", seen, err)
	}
	// Without tokens every request is the local principal.
	open := &server{o: Options{Auth: authz.NewGuard(authz.Local())}}
	probe = fiber.New()
	probe.Get("/whoami", open.authenticate, func(c *fiber.Ctx) error { seen = Principal(c); return nil })
	if _, err := probe.Test(httptest.NewRequest("GET", "/whoami", nil)); err != nil || seen != kind.LocalPrincipal {
		t.Fatalf("principal without tokens %q %v", seen, err)
	}
	// Health stays open for probes.
	if resp, _ := app.Test(httptest.NewRequest("GET", "/healthz", nil)); resp.StatusCode != 200 {
		t.Fatalf("healthz %d", resp.StatusCode)
	}
}

func TestCreatedWatchHasALocation(t *testing.T) {
	f := newFixture(t)
	req := httptest.NewRequest("POST", "/api/v1/watches", strings.NewReader(`{"kind":"ci","params":{},"recipient":{"id":"a"}}`))
	resp, err := f.app.Test(req)
	if err != nil {
		t.Fatal(err)
	}
	var w api.Watch
	_ = json.NewDecoder(resp.Body).Decode(&w)
	if resp.StatusCode != 201 || resp.Header.Get("Location") != "/api/v1/watches/"+w.ID {
		t.Fatalf("%d location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	req = httptest.NewRequest("PATCH", "/api/v1/watches/"+w.ID, nil)
	resp, _ = f.app.Test(req)
	if allow := resp.Header.Get("Allow"); resp.StatusCode != 405 || !strings.Contains(allow, "GET") || !strings.Contains(allow, "DELETE") {
		t.Fatalf("405 Allow %q", allow)
	}
}

func TestOpenAPIIsServed(t *testing.T) {
	f := newFixture(t)
	status, b := f.do(t, "GET", "/api/v1/openapi.yaml", "")
	if status != 200 || !strings.HasPrefix(string(b), "openapi: 3.1") {
		t.Fatalf("%d %.60s", status, b)
	}
}

// fakeDeadLetters is a dead-letter list of two refused commands.
type fakeDeadLetters struct{}

func (fakeDeadLetters) DeadLetters(_ context.Context, after uint64, limit int) ([]api.DeadLetter, error) {
	all := []api.DeadLetter{
		{Seq: 1, CommandID: "c1", Kind: "http", Method: "GET", URL: "https://example.org/", Reason: "invalid_request_options", Message: "header connection is hop-by-hop", HeaderNames: []string{"connection"}, OccurredAt: t0},
		{Seq: 2, CommandID: "c2", Kind: "ci", Method: "GET", URL: "http://127.0.0.1/", Reason: "destination_refused", Message: "loopback", OccurredAt: t0},
	}
	var out []api.DeadLetter
	for _, d := range all {
		if d.Seq > after && len(out) < limit {
			out = append(out, d)
		}
	}
	return out, nil
}

func TestDeadLettersRead(t *testing.T) {
	st := apitest.NewStack(t, apitest.Config{Plugins: fakePlugins(), Clock: fakeclock.At(t0)})
	app := New(Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients, Plugins: fakePlugins(), DeadLetters: fakeDeadLetters{}}, Options{})
	f := &fixture{app: app}
	code, b := f.do(t, "GET", "/api/v1/fetch/dead-letters?limit=1", "")
	var got api.DeadLetters
	if err := json.Unmarshal(b, &got); code != 200 || err != nil || len(got.DeadLetters) != 1 || got.Next != 1 || got.DeadLetters[0].CommandID != "c1" {
		t.Fatalf("%d %s", code, b)
	}
	code, b = f.do(t, "GET", "/api/v1/fetch/dead-letters?after=1", "")
	if err := json.Unmarshal(b, &got); code != 200 || err != nil || len(got.DeadLetters) != 1 || got.Next != 2 ||
		got.DeadLetters[0].HeaderNames == nil {
		t.Fatalf("%d %s", code, b)
	}
	code, b = f.do(t, "GET", "/api/v1/fetch/dead-letters?after=2", "")
	if code != 200 || string(b) != `{"dead_letters":[],"next":2}` {
		t.Fatalf("%d %s", code, b)
	}
	if code, b = f.do(t, "GET", "/api/v1/fetch/dead-letters?after=-1", ""); code != 422 || !strings.Contains(string(b), `"field":"after"`) {
		t.Fatalf("%d %s", code, b)
	}
}

// The reporter is the token's principal, never a body field; a rate
// limited record says when to retry; an item's text reaches no log line.
func TestObserveRecordOverHTTP(t *testing.T) {
	var logs bytes.Buffer
	post := recordApp(t, 1, &logs)
	do := func(token, body string) (*http.Response, []byte) { return post(token, "support", body) }
	const secretText = "customer card 4111-1111"
	resp, b := do("token-of-the-tester-0123", `{"item":"m1","thread":"T","text":"`+secretText+`"}`)
	var got api.ObserveResult
	if err := json.Unmarshal(b, &got); resp.StatusCode != 201 || err != nil || got.Event.Reporter != "tester" || got.Duplicate {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if resp, b := do("token-of-mallory-0123456", `{"item":"m2","thread":"T"}`); resp.StatusCode != 403 || !strings.Contains(string(b), "not_a_reporter") {
		t.Fatalf("mallory: %d %s", resp.StatusCode, b)
	}
	resp, b = do("token-of-the-tester-0123", `{"item":"m3","thread":"T","text":"`+secretText+`"}`)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), "rate_limited") {
		t.Fatalf("over the rate: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	if strings.Contains(logs.String(), secretText) {
		t.Fatalf("an item's text reached the log: %s", logs.String())
	}
}

// A server built without an observer answers its observe routes not found.
func TestObserveRoutesWithoutAnObserver(t *testing.T) {
	f := newFixture(t)
	for _, r := range [][2]string{{"POST", "/api/v1/scopes/s/observe"}, {"GET", "/api/v1/scopes/s/work"}, {"GET", "/api/v1/work/01m8nhtng4ra8tgz0tmrscbt6g"}} {
		code, b := f.do(t, r[0], r[1], `{"item":"m","thread":"t"}`)
		if code != 404 || !strings.Contains(string(b), "observes no sources") {
			t.Errorf("%s %s: %d %s", r[0], r[1], code, b)
		}
	}
}
