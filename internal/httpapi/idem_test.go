package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/authz"
	"github.com/vigilhq/vigil/internal/authztest"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/mcptest"
	"github.com/vigilhq/vigil/internal/observe"
	"github.com/vigilhq/vigil/store"
)

// keyedAnswer is one answer as a client sees it.
type keyedAnswer struct {
	status   int
	location string
	replayed string
	body     string
}

// keyed sends one request with the header values given (name, value
// pairs), as token when it is set.
func keyed(t *testing.T, app *fiber.App, token, method, path, body string, header ...string) keyedAnswer {
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
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := app.Test(req, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return keyedAnswer{status: resp.StatusCode, location: resp.Header.Get("Location"), replayed: resp.Header.Get(api.HeaderIdempotentReplayed), body: string(b)}
}

func errCode(t *testing.T, a keyedAnswer) string {
	t.Helper()
	var env api.ErrorEnvelope
	if err := json.Unmarshal([]byte(a.body), &env); err != nil {
		t.Fatalf("%d %s: not an error envelope", a.status, a.body)
	}
	return env.Error.Code
}

// idemFixture is the API over apitest's stack (badger in a temporary
// directory, the scheduler, recipients, observe with scope support) with
// one routed Work, and a running recipient agent-1.
func idemFixture(t *testing.T) (*fixture, string) {
	t.Helper()
	f := newFixture(t)
	f.app = New(Deps{Scheduler: f.sched, Watches: f.st, Mailboxes: f.del, Recipients: f.recips, Plugins: fakePlugins(), Observe: f.ob, Clock: fakeclock.At(t0)},
		Options{BodyLimit: 4096, StreamWait: 50 * time.Millisecond})
	if code, b := f.do(t, "PUT", "/api/v1/recipients/agent-1", `{"status":"running"}`); code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	if code, b := f.do(t, "POST", "/api/v1/scopes/support/observe", `{"item":"m0","thread":"T1","text":"hi"}`); code != 201 {
		t.Fatalf("%d %s", code, b)
	}
	if _, err := f.ob.RouteAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, b := f.do(t, "GET", "/api/v1/scopes/support/work", "")
	var wl api.WorkList
	if err := json.Unmarshal(b, &wl); err != nil || len(wl.Work) != 1 {
		t.Fatalf("work: %s", b)
	}
	return f, wl.Work[0].ID
}

// Each creating route under an Idempotency-Key: the first request
// writes and answers; the same request again under the key answers the
// same status, Location and body, byte for byte, marked replayed, and
// writes nothing (the effect each route would repeat is checked); the
// key with another body, or on another route, is 422
// idempotency_key_reused and writes nothing either.
func TestIdempotentRoutesAnswerOnce(t *testing.T) {
	f, work := idemFixture(t)
	ctx := context.Background()
	watches := func() int {
		ws, _, err := f.st.List(ctx, store.Filter{Recipient: "agent-1"})
		if err != nil {
			t.Fatal(err)
		}
		return len(ws)
	}
	events := func() int {
		evs, err := f.st.ReadEvents(ctx, observe.Stream, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(evs)
	}
	activity := func() uint64 {
		r, _ := f.st.GetRecipient(ctx, "agent-1")
		return r.Activity.Replies
	}
	for _, r := range []struct {
		method, path, body, other string
		count                     func() int
	}{
		{"POST", "/api/v1/watches", `{"kind":"ci","params":{"sha":"a"},"recipient":{"id":"agent-1"}}`, `{"kind":"ci","params":{"sha":"b"},"recipient":{"id":"agent-1"}}`, watches},
		{"POST", "/api/v1/scopes/support/observe", `{"item":"m1","thread":"T1","text":"more"}`, `{"item":"m2","thread":"T1","text":"more"}`, events},
		{"POST", "/api/v1/work/" + work + "/claim", `{"recipient":{"id":"agent-1"}}`, `{"recipient":{"id":"agent-2"}}`, nil},
		{"PUT", "/api/v1/recipients/agent-1/phase", `{"name":"build","text":"first"}`, `{"name":"build","text":"second"}`, nil},
		{"POST", "/api/v1/recipients/agent-1/activity", `{"replies":1}`, `{"replies":2}`, func() int { return int(activity()) }},
		{"POST", "/api/v1/work/" + work + "/complete", ``, `{}`, nil},
	} {
		key := "key-" + r.path
		before := 0
		if r.count != nil {
			before = r.count()
		}
		first := keyed(t, f.app, "", r.method, r.path, r.body, api.HeaderIdempotencyKey, key)
		if first.status/100 != 2 || first.replayed != "" {
			t.Fatalf("%s %s: %+v", r.method, r.path, first)
		}
		after := 0
		if r.count != nil {
			after = r.count()
		}
		// Quoted and bare, the key is one key.
		again := keyed(t, f.app, "", r.method, r.path, r.body, api.HeaderIdempotencyKey, api.FormatIdempotencyKey(key))
		if again.status != first.status || again.body != first.body || again.location != first.location || again.replayed != "true" {
			t.Errorf("%s %s again under its key:\n %+v\nwant the first answer\n %+v", r.method, r.path, again, first)
		}
		if r.count != nil && (r.count() != after || after == before) {
			t.Errorf("%s %s: the count went %d, %d, %d: want one write", r.method, r.path, before, after, r.count())
		}
		other := keyed(t, f.app, "", r.method, r.path, r.other, api.HeaderIdempotencyKey, key)
		if other.status != 422 || errCode(t, other) != api.CodeIdempotencyKeyReused {
			t.Errorf("%s %s: another body under the key: %+v, want 422 idempotency_key_reused", r.method, r.path, other)
		}
		if r.count != nil && r.count() != after {
			t.Errorf("%s %s: the refused request wrote", r.method, r.path)
		}
	}
	// The phase kept its first text; the Work stayed with agent-1.
	rec, _ := f.st.GetRecipient(ctx, "agent-1")
	if rec.Phase == nil || rec.Phase.Text != "first" {
		t.Errorf("phase %+v, want the first report's", rec.Phase)
	}
	// A key is one request: the watch route's key on another route.
	other := keyed(t, f.app, "", "POST", "/api/v1/recipients/agent-1/activity", `{"replies":1}`, api.HeaderIdempotencyKey, "key-/api/v1/watches")
	if other.status != 422 || errCode(t, other) != api.CodeIdempotencyKeyReused {
		t.Errorf("a key on another route: %+v, want 422 idempotency_key_reused", other)
	}
	// Without a key, a repeat is a second write.
	n := watches()
	for range 2 {
		if a := keyed(t, f.app, "", "POST", "/api/v1/watches", `{"kind":"ci","params":{"sha":"a"},"recipient":{"id":"agent-1"}}`); a.status != 201 {
			t.Fatalf("%+v", a)
		}
	}
	if watches() != n+2 {
		t.Errorf("two unkeyed registrations made %d watches", watches()-n)
	}
}

// The replay is answered before anything the route would check again:
// a registration whose recipient is now at its bound of pending watches,
// or paused, and a completion of the Work it completed, are answered as
// they first were.
func TestIdempotentReplayPrecedesTheChecks(t *testing.T) {
	f, work := idemFixture(t)
	watch := `{"kind":"ci","params":{"sha":"a"},"recipient":{"id":"agent-1"}}`
	first := keyed(t, f.app, "", "POST", "/api/v1/watches", watch, api.HeaderIdempotencyKey, "k1")
	done := keyed(t, f.app, "", "POST", "/api/v1/work/"+work+"/complete", "", api.HeaderIdempotencyKey, "k2")
	if first.status != 201 || done.status != 200 {
		t.Fatalf("%+v %+v", first, done)
	}
	if code, b := f.do(t, "PUT", "/api/v1/recipients/agent-1", `{"status":"paused"}`); code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	if a := keyed(t, f.app, "", "POST", "/api/v1/watches", watch, api.HeaderIdempotencyKey, "k1"); a.status != 201 || a.body != first.body {
		t.Errorf("the registration again, its recipient paused since: %+v, want the first answer", a)
	}
	if a := keyed(t, f.app, "", "POST", "/api/v1/watches", watch, api.HeaderIdempotencyKey, "k3"); a.status != 409 {
		t.Errorf("a new registration for the paused recipient: %+v, want 409", a)
	}
	if a := keyed(t, f.app, "", "POST", "/api/v1/work/"+work+"/complete", "", api.HeaderIdempotencyKey, "k2"); a.status != 200 || a.body != done.body {
		t.Errorf("the completion again: %+v, want the first answer", a)
	}
	if a := keyed(t, f.app, "", "POST", "/api/v1/work/"+work+"/complete", "", api.HeaderIdempotencyKey, "k4"); a.status != 409 {
		t.Errorf("a new completion of the completed Work: %+v, want 409 work_conflict", a)
	}
}

// A header that is not a key is 400 invalid_idempotency_key naming the
// header, and nothing is written.
func TestInvalidIdempotencyKey(t *testing.T) {
	f, _ := idemFixture(t)
	watch := `{"kind":"ci","params":{"sha":"a"},"recipient":{"id":"agent-1"}}`
	for _, h := range [][]string{
		{api.HeaderIdempotencyKey, ""},
		{api.HeaderIdempotencyKey, `""`},
		{api.HeaderIdempotencyKey, strings.Repeat("k", api.MaxIdempotencyKey+1)},
		{api.HeaderIdempotencyKey, "two words"},
		{api.HeaderIdempotencyKey, `"unclosed`},
		{api.HeaderIdempotencyKey, "k\x01"},
		{api.HeaderIdempotencyKey, "a", api.HeaderIdempotencyKey, "b"},
	} {
		a := keyed(t, f.app, "", "POST", "/api/v1/watches", watch, h...)
		var env api.ErrorEnvelope
		_ = json.Unmarshal([]byte(a.body), &env)
		if a.status != 400 || env.Error.Code != api.CodeInvalidIdempotencyKey || env.Error.Field != api.HeaderIdempotencyKey {
			t.Errorf("%q: %+v, want 400 invalid_idempotency_key on the header", h, a)
		}
	}
	if ws, _, _ := f.st.List(context.Background(), store.Filter{Recipient: "agent-1"}); len(ws) != 0 {
		t.Errorf("refused requests wrote %d watches", len(ws))
	}
	// The longest key is a key.
	if a := keyed(t, f.app, "", "POST", "/api/v1/watches", watch, api.HeaderIdempotencyKey, strings.Repeat("k", api.MaxIdempotencyKey)); a.status != 201 {
		t.Errorf("a key of %d bytes: %+v", api.MaxIdempotencyKey, a)
	}
}

// Keys are per principal: another principal's request under the same
// key is its own, and never sees the first one's answer.
func TestIdempotencyKeysArePerPrincipal(t *testing.T) {
	st := apitest.NewStack(t, apitest.Config{Plugins: fakePlugins(), Clock: fakeclock.At(t0)})
	guard := authztest.Guard(t, map[string]string{"token-of-principal-a": "a", "token-of-principal-b": "b"}, authz.Admin)
	app := New(Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients, Plugins: fakePlugins()},
		Options{Auth: guard})
	body := `{"kind":"ci","params":{"sha":"a"},"recipient":{"id":"agent-1"}}`
	a := keyed(t, app, "token-of-principal-a", "POST", "/api/v1/watches", body, api.HeaderIdempotencyKey, "shared")
	b := keyed(t, app, "token-of-principal-b", "POST", "/api/v1/watches", body, api.HeaderIdempotencyKey, "shared")
	if a.status != 201 || b.status != 201 || b.replayed != "" || a.location == b.location {
		t.Fatalf("a %+v\nb %+v: want two watches", a, b)
	}
	if again := keyed(t, app, "token-of-principal-b", "POST", "/api/v1/watches", body, api.HeaderIdempotencyKey, "shared"); again.body != b.body {
		t.Fatalf("b again: %+v, want b's answer", again)
	}
}

// Requests under one key at once, each past the key's first read before
// any wrote, make one write (the store's transaction decides), and every
// one of them is answered that write's answer.
func TestConcurrentKeyedRequestsWriteOnce(t *testing.T) {
	const n = 8
	// The registrations wait, once they have reached the store, until n
	// of them have: requests that all found their key free before any
	// wrote.
	var arrived atomic.Int32
	all := make(chan struct{})
	c := faultCore(t, &faultKV{before: func(o store.TxOptions) error {
		if o.Name != "create-if-running" {
			return nil
		}
		if k := arrived.Add(1); k == n {
			close(all)
		} else if k < n {
			select {
			case <-all:
			case <-time.After(5 * time.Second):
			}
		}
		return nil
	}}, 9)
	app := New(Deps{Scheduler: c.Scheduler, Watches: c.Store, Mailboxes: c.Delivery, Recipients: c.Recipients, Plugins: fakePlugins()}, Options{})
	body := `{"kind":"ci","params":{"sha":"a"},"recipient":{"id":"agent-1"}}`
	answers := make([]keyedAnswer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			answers[i] = keyed(t, app, "", "POST", "/api/v1/watches", body, api.HeaderIdempotencyKey, "once")
		})
	}
	wg.Wait()
	if arrived.Load() < n {
		t.Fatalf("%d requests reached the store, want %d", arrived.Load(), n)
	}
	replayed := 0
	for i, a := range answers {
		if a.status != 201 || a.body != answers[0].body {
			t.Errorf("request %d: %+v, want the one write's answer %+v", i, a, answers[0])
		}
		if a.replayed == "true" {
			replayed++
		}
	}
	if replayed != n-1 {
		t.Errorf("%d answers replayed, want %d", replayed, n-1)
	}
	if ws, _, _ := c.Store.List(context.Background(), store.Filter{Recipient: "agent-1"}); len(ws) != 1 {
		t.Errorf("%d watches, want 1", len(ws))
	}
}

// A store that cannot be reached is 503 store_unavailable with
// Retry-After, never 500, on a write and on a read, answered as the
// document says; its message says nothing was written, or, for a commit
// never answered, that the write may have happened. That write sent
// again under its key is answered 201 once, and it made one watch.
func TestAnUnavailableStoreIs503(t *testing.T) {
	// The store fails as natsstore does when JetStream cannot be
	// reached: mode "down", every read and the registration's commit
	// fail (nothing written); "unanswered" (or "unanswered once", then
	// answering), the registration's commit is made and never answered.
	var mode atomic.Value
	mode.Store("")
	var unanswered atomic.Int32 // commits "unanswered once" left unanswered
	c := faultCore(t, &faultKV{
		before: func(o store.TxOptions) error {
			if mode.Load() == "down" && o.Name == "create-if-running" {
				return &store.UnavailableError{Op: "reading", Err: errors.New("nats: no responders available for request")}
			}
			return nil
		},
		after: func(o store.TxOptions, err error) error {
			if err != nil || o.Name != "create-if-running" {
				return err
			}
			switch mode.Load() {
			case "unanswered", "unanswered once":
				if mode.CompareAndSwap("unanswered once", "") {
					unanswered.Add(1)
				}
				return &store.UnavailableError{Op: "commit", MayHaveWritten: true, Err: errors.New("nats: timeout")}
			}
			return nil
		},
		view: func() error {
			if mode.Load() == "down" {
				return &store.UnavailableError{Op: "reading", Err: errors.New("nats: timeout")}
			}
			return nil
		},
	}, 9)
	app := New(Deps{Scheduler: c.Scheduler, Watches: c.Store, Mailboxes: c.Delivery, Recipients: c.Recipients, Plugins: fakePlugins()},
		Options{BodyLimit: 4096, StreamWait: 50 * time.Millisecond})
	doc, _ := openAPI(t)
	comp := openAPICompiler(t)
	body := `{"kind":"ci","params":{"sha":"abc"},"recipient":{"id":"agent-1"}}`
	if a := keyed(t, app, "", "POST", "/api/v1/watches", `{"kind":"ci","params":{"sha":"0"},"recipient":{"id":"agent-1"}}`); a.status != 201 {
		t.Fatalf("%+v", a)
	}
	for _, tt := range []struct {
		mode, method, path, body, says string
	}{
		{"down", "POST", "/api/v1/watches", body, "nothing was written"},
		{"down", "GET", "/api/v1/recipients/agent-1", "", "nothing was written"},
		{"unanswered", "POST", "/api/v1/watches", body, "may have been written"},
	} {
		mode.Store(tt.mode)
		resp, b := call(t, app, "", tt.method, tt.path, tt.body)
		var env api.ErrorEnvelope
		decodeJSON(t, b, &env)
		if resp.StatusCode != http.StatusServiceUnavailable || env.Error.Code != api.CodeStoreUnavailable || !strings.Contains(env.Error.Message, tt.says) {
			t.Errorf("%s %s, the store %s: %d %s, want 503 store_unavailable saying %q", tt.method, tt.path, tt.mode, resp.StatusCode, b, tt.says)
		}
		if got := resp.Header.Get("Retry-After"); got != fmt.Sprint(int(StoreUnavailableRetryAfter/time.Second)) {
			t.Errorf("%s %s: Retry-After %q", tt.method, tt.path, got)
		}
		if why := conforms(doc, comp, tt.method, tt.path, resp, b); why != "" {
			t.Errorf("%s %s: %s", tt.method, tt.path, why)
		}
	}
	// The commit never answered, under a key: the retry finds the write.
	mode.Store("unanswered")
	first := keyed(t, app, "", "POST", "/api/v1/watches", body, api.HeaderIdempotencyKey, "retry-me")
	if first.status != 503 {
		t.Fatalf("%+v", first)
	}
	mode.Store("")
	retry := keyed(t, app, "", "POST", "/api/v1/watches", body, api.HeaderIdempotencyKey, "retry-me")
	if retry.status != 201 || retry.replayed != "true" {
		t.Fatalf("the retry: %+v, want the write's 201, replayed", retry)
	}
	var w api.Watch
	decodeJSON(t, []byte(retry.body), &w)
	ws, _, _ := c.Store.List(context.Background(), store.Filter{Recipient: "agent-1"})
	n, answered := 0, false
	for _, x := range ws {
		if string(x.Params) == `{"sha":"abc"}` {
			n++
			answered = answered || x.ID.String() == w.ID
		}
	}
	// The unkeyed one whose commit went unanswered, and the keyed one.
	if n != 2 || !answered {
		t.Errorf("%d watches of the body (the retry's %s among them: %v), want 2", n, w.ID, answered)
	}

	// The MCP server's register tool, through a commit left unanswered
	// once: its client sends the registration again under its key, and
	// the tool answers the one watch.
	url := apitest.Serve(t, app)
	mc := mcp.NewClient(&mcp.Implementation{Name: "vigil-test", Version: "1"}, nil)
	sess, err := mc.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url + MCPPath, HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	mode.Store("unanswered once")
	var got api.Watch
	if res := mcptest.CallTool(t, sess, "register_watch", map[string]any{"kind": "ci", "params": map[string]any{"sha": "mcp"}, "recipient": "agent-1"}, &got); res.IsError {
		t.Fatalf("register_watch through an unanswered commit: %+v", res)
	}
	ws, _, _ = c.Store.List(context.Background(), store.Filter{Recipient: "agent-1"})
	n = 0
	for _, x := range ws {
		if string(x.Params) == `{"sha":"mcp"}` {
			n++
		}
	}
	if unanswered.Load() != 1 || n != 1 {
		t.Errorf("%d commits left unanswered, %d watches registered through MCP, want 1 and 1", unanswered.Load(), n)
	}
}
