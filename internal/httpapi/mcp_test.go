package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/api/client"
	"github.com/vigilhq/vigil/api/mcpserver"
	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/authz"
	"github.com/vigilhq/vigil/internal/authztest"
	"github.com/vigilhq/vigil/internal/delivery"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/mcptest"
	"github.com/vigilhq/vigil/internal/observe"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/internal/signal"
	"github.com/vigilhq/vigil/internal/syncbuf"
	"github.com/vigilhq/vigil/internal/wasmbuild"
	"github.com/vigilhq/vigil/plugins"
	"github.com/vigilhq/vigil/store"
)

// The MCP tools wait no longer than the mailbox's longest wait: the two
// bounds are one number, written in two packages that must not import
// each other.
func TestMCPMaxWaitIsTheMailboxesLongestWait(t *testing.T) {
	if mcpserver.MaxWait != delivery.MaxWait {
		t.Fatalf("mcpserver.MaxWait %s, delivery.MaxWait %s", mcpserver.MaxWait, delivery.MaxWait)
	}
}

// mcpHost is a host over the real plugin runtime (a plugin directory of
// the bundled timer and http, http without its fetch grant), on a fake
// clock, with two tokens: agent-1's and agent-2's, each acting for the
// recipient of its name.
type mcpHost struct {
	url   string
	dir   string
	clock *fakeclock.Clock
	sched *scheduler.Scheduler
	rt    *plugin.Runtime
	// tr is the tests' connections to the host.
	tr    *http.Transport
	guard *authz.Guard
	ob    *observe.Observer
	st    *store.Store
}

const (
	tokenAgent1 = "token-of-agent-1-for-the-mcp-test"
	tokenAgent2 = "token-of-agent-2-for-the-mcp-test"
)

func copyBundled(t *testing.T, dir, kind string) {
	t.Helper()
	b, err := fs.ReadFile(plugins.Bundled(), kind+"/"+kind+".wasm")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, kind+".wasm"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeRegistry(t *testing.T, dir, registry string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, plugin.RegistryFile), []byte(registry), 0o644); err != nil {
		t.Fatal(err)
	}
}

func newMCPHost(t *testing.T) *mcpHost { t.Helper(); return newMCPHostWith(t, Options{}) }

// newMCPHostWith is newMCPHost with o's MCPSessions.
func newMCPHostWith(t *testing.T, o Options) *mcpHost {
	t.Helper()
	return newMCPHostLogged(t, o, nil)
}

// newMCPHostLogged is newMCPHostWith logging to log (nil: nowhere).
func newMCPHostLogged(t *testing.T, o Options, log *slog.Logger) *mcpHost {
	t.Helper()
	dir := t.TempDir()
	copyBundled(t, dir, "timer")
	copyBundled(t, dir, "http")
	writeRegistry(t, dir, `{"kinds":{"timer":{},"http":{}}}`)
	reg := kind.NewRegistry()
	rt, err := plugin.New(context.Background(), plugin.Config{Bundled: fstest.MapFS{}, Dir: dir, CacheDir: wasmbuild.CacheDir(), Kinds: reg,
		Limits: plugin.Limits{CallTimeout: 10 * time.Second}}) // the cores are shared; this is about answers, not time
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	if p := rt.Problems(); len(p) != 0 {
		t.Fatalf("plugins not loaded: %v", p)
	}
	clock := fakeclock.At(t0)
	st := apitest.NewStack(t, apitest.Config{Plugins: reg, Clock: clock})
	ob, err := observe.New(observe.Options{Store: st.Store, Clock: clock, Waker: st.Scheduler}, observeConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := ob.Register(reg); err != nil { // observe.thread, a kind built into the host
		t.Fatal(err)
	}
	if err := (signal.Kind{}).Register(reg); err != nil {
		t.Fatal(err)
	}
	base, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	guard := authztest.Guard(t, map[string]string{tokenAgent1: "agent-1", tokenAgent2: "agent-2"})
	app := New(Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients, Plugins: rt, Kinds: reg, Base: base, Observe: ob, Logger: log,
		Signals: signal.NewService(st.Store, st.Scheduler)},
		Options{Auth: guard, BodyLimit: 1 << 16, StreamWait: 50 * time.Millisecond, MCPSessions: o.MCPSessions})
	url := apitest.Serve(t, app)
	// No keep-alive: the server's shutdown waits for a connection that
	// was opened and never sent a request (an SSE reconnect dialled as the
	// session closed), which a pool of idle connections can hold.
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(func() { stop(); tr.CloseIdleConnections() }) // the streams end and the connections close before the app shuts down
	ctx := context.Background()
	for tok, id := range map[string]string{tokenAgent1: "agent-1", tokenAgent2: "agent-2"} {
		if _, err := client.New(url, client.WithToken(tok)).PutRecipient(ctx, id, api.RecipientRequest{Status: "running"}); err != nil {
			t.Fatal(err)
		}
	}
	return &mcpHost{url: url, dir: dir, clock: clock, sched: st.Scheduler, rt: rt, tr: tr, guard: guard, ob: ob, st: st.Store}
}

// bearerTransport sends a token on every request.
type bearerTransport struct {
	token string
	next  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// connect opens an MCP session over streamable HTTP with token.
func (h *mcpHost) connect(t *testing.T, token string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "vigil-test", Version: "1"}, opts)
	s, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: h.url + MCPPath, HTTPClient: &http.Client{Transport: bearerTransport{token, h.tr}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Register → wait → mailbox for a timer, over streamable HTTP with the
// SDK's own client: the timer fires when the fake clock passes its
// instant, the wait tool answers the outcome, and the mailbox holds the
// message with the cursor to read on from.
func TestMCPHTTPTimerRegisterWaitMailbox(t *testing.T) {
	h := newMCPHost(t)
	s := h.connect(t, tokenAgent1, nil)
	ctx := context.Background()

	var w api.Watch
	at := t0.Add(time.Second).Format(time.RFC3339)
	if res := mcptest.CallTool(t, s, "register_watch", map[string]any{"kind": "timer", "params": map[string]any{"at": at}, "recipient": "agent-1"}, &w); res.IsError {
		t.Fatalf("register: %+v", res.Content)
	}
	if w.State != "pending" || w.ExpiresAt == nil || !w.ExpiresAt.Equal(t0.Add(time.Second+time.Minute)) || w.RegisteredBy != "agent-1" {
		t.Fatalf("registered %+v: want pending, the timer's own deadline (the host's default), by agent-1", w)
	}

	var pending mcpserver.WaitResult
	if res := mcptest.CallTool(t, s, "wait_watch", map[string]any{"id": w.ID, "wait": "0s"}, &pending); res.IsError {
		t.Fatalf("wait: %+v", res.Content)
	}
	if pending.Settled || !strings.Contains(pending.Status, "still pending") || pending.Version == "" {
		t.Fatalf("a wait on a pending timer: %+v", pending)
	}

	h.clock.Set(t0.Add(2 * time.Second))
	h.sched.Tick(ctx, h.clock.Now())

	var done mcpserver.WaitResult
	if res := mcptest.CallTool(t, s, "wait_watch", map[string]any{"id": w.ID, "since": pending.Version}, &done); res.IsError {
		t.Fatalf("wait: %+v", res.Content)
	}
	if !done.Settled || done.Watch.State != "fired" || done.Watch.Outcome == nil || !strings.HasPrefix(done.Status, "fired") {
		t.Fatalf("a wait on a fired timer: %+v", done)
	}

	var box api.Mailbox
	if res := mcptest.CallTool(t, s, "read_mailbox", map[string]any{"recipient": "agent-1"}, &box); res.IsError {
		t.Fatalf("mailbox: %+v", res.Content)
	}
	if len(box.Messages) != 1 || box.Messages[0].WatchID != w.ID || box.Next != box.Messages[0].Seq {
		t.Fatalf("mailbox %+v: want the timer's one message and its seq as the cursor", box)
	}
	mcptest.CallTool(t, s, "read_mailbox", map[string]any{"recipient": "agent-1", "after": box.Next}, &box)
	if len(box.Messages) != 0 {
		t.Fatalf("read on from the cursor: %+v", box)
	}
}

// Refusals are the API's, as tool errors: a kind without its grant is
// watch_unobservable naming the setting; a kind the host does not serve
// never reaches the API (the enum refuses it); a bad wait is named.
func TestMCPHTTPRefusalsAreToolErrors(t *testing.T) {
	h := newMCPHost(t)
	s := h.connect(t, tokenAgent1, nil)

	e := mcptest.ToolErr(t, mcptest.CallTool(t, s, "register_watch", map[string]any{"kind": "http", "params": map[string]any{"url": "https://example.com/"}, "recipient": "agent-1"}, nil))
	if e.Code != api.CodeWatchUnobservable || e.Setting == "" || !strings.Contains(e.Setting, "http") {
		t.Errorf("http without its fetch grant: %+v, want watch_unobservable naming the http setting", e)
	}
	e = mcptest.ToolErr(t, mcptest.CallTool(t, s, "register_watch", map[string]any{"kind": "timer", "params": map[string]any{}, "recipient": "agent-1"}, nil))
	if e.Code != api.CodeInvalidParams || e.Field != "params.at" {
		t.Errorf("a timer without at: %+v, want invalid_params on params.at", e)
	}
	if res := mcptest.CallTool(t, s, "register_watch", map[string]any{"kind": "gitlab", "params": map[string]any{}, "recipient": "agent-1"}, nil); !res.IsError {
		t.Errorf("a kind outside the enum was accepted: %+v", res)
	}
	e = mcptest.ToolErr(t, mcptest.CallTool(t, s, "wait_watch", map[string]any{"id": "01m8nhtng4ra8tgz0tmrscbt6g", "wait": "2m"}, nil))
	if e.Code != api.CodeInvalidField || e.Field != "wait" {
		t.Errorf("a wait over the bound: %+v, want invalid_field on wait", e)
	}
	e = mcptest.ToolErr(t, mcptest.CallTool(t, s, "show_watch", map[string]any{"id": "01m8nhtng4ra8tgz0tmrscbt6g"}, nil))
	if e.Code != api.CodeNotFound {
		t.Errorf("an unknown watch: %+v, want not_found", e)
	}
}

// /mcp is behind the API's tokens: no token and a wrong one are refused
// exactly as /api/v1 refuses them; a principal without the grant gets the
// API's forbidden as a tool error; a session is its principal's.
func TestMCPHTTPAuth(t *testing.T) {
	h := newMCPHost(t)
	post := func(path, token string) (int, string, string) {
		req, _ := http.NewRequest(http.MethodPost, h.url+path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := h.tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(b)
	}
	for _, token := range []string{"", "not-a-token-this-host-knows-of"} {
		st, wa, body := post(MCPPath, token)
		apiSt, apiWA, apiBody := post("/api/v1/watches", token)
		if st != http.StatusUnauthorized || st != apiSt || wa != apiWA || body != apiBody {
			t.Errorf("token %q: /mcp answered %d %q %s; /api/v1 %d %q %s", token, st, wa, body, apiSt, apiWA, apiBody)
		}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "vigil-test", Version: "1"}, nil)
	if s, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: h.url + MCPPath, HTTPClient: &http.Client{Transport: h.tr}}, nil); err == nil {
		_ = s.Close()
		t.Error("an MCP client without a token connected")
	}

	other := h.connect(t, tokenAgent2, nil)
	e := mcptest.ToolErr(t, mcptest.CallTool(t, other, "register_watch", map[string]any{"kind": "timer", "params": map[string]any{"at": t0.Add(time.Hour).Format(time.RFC3339)}, "recipient": "agent-1"}, nil))
	if e.Code != api.CodeForbidden {
		t.Errorf("agent-2 registering for agent-1: %+v, want forbidden", e)
	}
	e = mcptest.ToolErr(t, mcptest.CallTool(t, other, "read_mailbox", map[string]any{"recipient": "agent-1"}, nil))
	if e.Code != api.CodeForbidden {
		t.Errorf("agent-2 reading agent-1's mailbox: %+v, want forbidden", e)
	}

	// agent-1's session, named by a request of agent-2, is refused.
	mine := h.connect(t, tokenAgent1, nil)
	req, _ := http.NewRequest(http.MethodPost, h.url+MCPPath, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+tokenAgent2)
	req.Header.Set("Mcp-Session-Id", mine.ID())
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := h.tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("another principal's request in agent-1's session: %d, want 403", resp.StatusCode)
	}
}

// A plugin reload that changes the kinds sends
// notifications/tools/list_changed over the session's stream, and the
// register tool's enum names the new kind; nothing polls for it.
func TestMCPHTTPReloadSendsToolsListChanged(t *testing.T) {
	h := newMCPHost(t)
	changed := make(chan struct{}, 8)
	s := h.connect(t, tokenAgent1, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	if enum := registerEnum(t, s); !slices.Equal(enum, []string{"http", "observe.thread", "signal", "timer"}) {
		t.Fatalf("the register tool's kinds: %v", enum)
	}
	copyBundled(t, h.dir, "ci")
	writeRegistry(t, h.dir, `{"kinds":{"timer":{},"http":{},"ci":{"capabilities":["fetch"],"fetch_hosts":["api.github.com"]}}}`)
	if _, err := h.rt.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(30 * time.Second): // a bound on a notification, not a pause
		t.Fatal("no notifications/tools/list_changed after a reload that added a kind")
	}
	if enum := registerEnum(t, s); !slices.Equal(enum, []string{"ci", "http", "observe.thread", "signal", "timer"}) {
		t.Fatalf("the register tool's kinds after the reload: %v", enum)
	}
}

// registerEnum is the register tool's kind enum, as tools/list gives it.
func registerEnum(t *testing.T, s *mcp.ClientSession) []string {
	t.Helper()
	tools, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name != "register_watch" {
			continue
		}
		var schema struct {
			Properties map[string]struct {
				Enum []string `json:"enum"`
			} `json:"properties"`
		}
		b, _ := json.Marshal(tool.InputSchema)
		if err := json.Unmarshal(b, &schema); err != nil {
			t.Fatal(err)
		}
		return schema.Properties["kind"].Enum
	}
	t.Fatal("no register_watch tool")
	return nil
}

// GET /kinds lists the plugins' kinds and the host's own, each with its
// params schema and example; the list_kinds tool answers the same.
func TestKindsListsPluginsAndBuiltIns(t *testing.T) {
	h := newMCPHost(t)
	list, err := client.New(h.url, client.WithToken(tokenAgent1), client.WithHTTPClient(&http.Client{Transport: h.tr})).Kinds(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]api.Kind{}
	for _, k := range list.Kinds {
		byName[k.Kind] = k
	}
	timer, thread, web := byName["timer"], byName["observe.thread"], byName["http"]
	if timer.BuiltIn || len(timer.ParamsSchema) == 0 || !strings.Contains(string(timer.Example), `"at"`) || !timer.Observable {
		t.Errorf("timer: %+v", timer)
	}
	if !thread.BuiltIn || len(thread.ParamsSchema) == 0 {
		t.Errorf("observe.thread: %+v, want built in, with its schema", thread)
	}
	if web.Observable || web.Setting == "" {
		t.Errorf("http without its grant: %+v, want not observable, naming the setting", web)
	}
	var viaMCP api.KindList
	mcptest.CallTool(t, h.connect(t, tokenAgent1, nil), "list_kinds", nil, &viaMCP)
	if a, b := canonical(t, viaMCP), canonical(t, list); a != b {
		t.Errorf("list_kinds and GET /kinds differ:\n%s\n%s", a, b)
	}
}

// canonical is v's JSON with every object's keys in order.
func canonical(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(x)
	return string(b)
}

// A token revoked by a reload ends its session's stream at once, and the
// session's next call is refused as the API refuses the token.
func TestMCPHTTPRevokedTokenEndsTheSession(t *testing.T) {
	h := newMCPHost(t)
	s := h.connect(t, tokenAgent1, nil)
	mcptest.CallTool(t, s, "list_kinds", nil, nil)
	ended := make(chan struct{})
	go func() { _ = s.Wait(); close(ended) }()
	next, err := authz.Compile([]authz.Token{{Token: tokenAgent2, Principal: "agent-2"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.guard.Swap(next); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended: // its stream ended, and the client's reconnect was refused
	case <-time.After(30 * time.Second): // a bound on the revocation, not a pause
		t.Error("the session of a revoked token is still open")
	}
	if _, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_kinds"}); err == nil {
		t.Error("a call with a revoked token was answered")
	}
}

// The open sessions are bounded: an initialize past the bound is 503
// too_many_sessions in the API's envelope, and a session that ends makes
// room for the next.
func TestMCPHTTPSessionsAreBounded(t *testing.T) {
	h := newMCPHostWith(t, Options{MCPSessions: 1})
	first := h.connect(t, tokenAgent1, nil)
	c := mcp.NewClient(&mcp.Implementation{Name: "vigil-test", Version: "1"}, nil)
	if s, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: h.url + MCPPath, HTTPClient: &http.Client{Transport: bearerTransport{tokenAgent2, h.tr}}}, nil); err == nil {
		_ = s.Close()
		t.Fatal("a session past the bound was opened")
	}
	req, _ := http.NewRequest(http.MethodPost, h.url+MCPPath, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+tokenAgent2)
	resp, err := h.tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	var env api.ErrorEnvelope
	err = json.NewDecoder(resp.Body).Decode(&env)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || err != nil || env.Error.Code != api.CodeTooManySessions {
		t.Fatalf("an initialize past the bound: %d %+v %v", resp.StatusCode, env, err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	h.connect(t, tokenAgent2, nil) // room again
}

// The register tool's every and expires_at name the host's defaults from
// the scheduler's constants, so the two cannot disagree.
func TestMCPRegisterDescribesTheSchedulersDefaults(t *testing.T) {
	h := newMCPHost(t)
	s := h.connect(t, tokenAgent1, nil)
	tools, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(tools.Tools, func(x *mcp.Tool) bool { return x.Name == "register_watch" })
	if i < 0 {
		t.Fatal("no register_watch tool")
	}
	var schema struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	b, _ := json.Marshal(tools.Tools[i].InputSchema)
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	if d := schema.Properties["expires_at"].Description; !strings.Contains(d, scheduler.DefaultDeadline.String()+" from now") {
		t.Errorf("expires_at: %q does not name the default deadline %s", d, scheduler.DefaultDeadline)
	}
	if d := schema.Properties["every"].Description; !strings.Contains(d, scheduler.DefaultEvery.String()+" for a kind that names none") {
		t.Errorf("every: %q does not name the default cadence %s", d, scheduler.DefaultEvery)
	}
}

// The MCP server's log lines carry one component key, mcp: the SDK's
// "server session connected" among them, which once carried the API's
// component and the MCP server's both.
func TestMCPLogLinesHaveOneComponent(t *testing.T) {
	var buf syncbuf.Buffer
	h := newMCPHostLogged(t, Options{}, slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	h.connect(t, tokenAgent1, nil)
	var line string
	for l := range strings.Lines(buf.String()) {
		if strings.Contains(l, `"server session connected"`) {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no session line in the log:\n%s", buf.String())
	}
	keys := topLevelKeys(t, line)
	if n := keys["component"]; n != 1 {
		t.Fatalf("the line has %d component keys: %s", n, line)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil || m["component"] != "mcp" {
		t.Fatalf("the line's component: %v (%v), want mcp", m["component"], err)
	}
}

// topLevelKeys counts each key of a JSON object's top level, duplicates
// included (a map would keep one).
func topLevelKeys(t *testing.T, obj string) map[string]int {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", obj)
	}
	out := map[string]int{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		out[k.(string)]++
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// Over the host's /mcp, a signal's registration answers its URL on the
// host as the agent reached it (not the in-process transport's), and
// send_signal answers it.
func TestMCPHTTPSignal(t *testing.T) {
	h := newMCPHost(t)
	s := h.connect(t, tokenAgent1, nil)
	var w api.Watch
	if res := mcptest.CallTool(t, s, "register_watch", map[string]any{"kind": "signal", "params": map[string]any{"title": "Go?"}, "recipient": "agent-1"}, &w); res.IsError {
		t.Fatalf("register: %+v", res)
	}
	if !strings.HasPrefix(w.SignalURL, h.url+SignalsPath) {
		t.Fatalf("signal_url %q, want one on %s", w.SignalURL, h.url)
	}
	var sig api.Signal
	if res := mcptest.CallTool(t, s, "send_signal", map[string]any{"url": w.SignalURL, "outcome": "approve"}, &sig); res.IsError || sig.State != "fired" || sig.Outcome != "approve" {
		t.Fatalf("send_signal: %+v %+v", res, sig)
	}
	e := mcptest.ToolErr(t, mcptest.CallTool(t, s, "send_signal", map[string]any{"url": w.SignalURL, "outcome": "deny"}, nil))
	if e.Code != api.CodeAlreadySettled || !strings.Contains(e.Message, "approve") {
		t.Fatalf("a second answer: %+v", e)
	}
}
