package main

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/api/client"
	"github.com/vigilhq/vigil/api/mcpserver"
	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/authztest"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/httpapi"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/mcptest"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/internal/syncbuf"
	"github.com/vigilhq/vigil/internal/wasmbuild"
	"github.com/vigilhq/vigil/plugins"
)

var mcpT0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

const mcpToken = "token-of-agent-1-for-the-stdio-test"

// stdioHost is a host over the real plugin runtime (a plugin directory
// of the bundled timer and http, http without its fetch grant), on a
// fake clock, with one token, agent-1's.
type stdioHost struct {
	url   string
	dir   string
	clock *fakeclock.Clock
	sched *scheduler.Scheduler
	rt    *plugin.Runtime
}

func copyPlugin(t *testing.T, dir, name string) {
	t.Helper()
	b, err := fs.ReadFile(plugins.Bundled(), name+"/"+name+".wasm")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".wasm"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func newStdioHost(t *testing.T) *stdioHost {
	t.Helper()
	dir := t.TempDir()
	copyPlugin(t, dir, "timer")
	copyPlugin(t, dir, "http")
	if err := os.WriteFile(filepath.Join(dir, plugin.RegistryFile), []byte(`{"kinds":{"timer":{},"http":{}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := kind.NewRegistry()
	rt, err := plugin.New(context.Background(), plugin.Config{Bundled: fstest.MapFS{}, Dir: dir, CacheDir: wasmbuild.CacheDir(), Kinds: reg,
		Limits: plugin.Limits{CallTimeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	clock := fakeclock.At(mcpT0)
	st := apitest.NewStack(t, apitest.Config{Plugins: reg, Clock: clock})
	base, stop := context.WithCancel(context.Background())
	app := httpapi.New(httpapi.Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients,
		Plugins: rt, Kinds: reg, Base: base}, httpapi.Options{Auth: authztest.Guard(t, map[string]string{mcpToken: "agent-1"}), StreamWait: 50 * time.Millisecond})
	url := apitest.Serve(t, app)
	t.Cleanup(stop)
	if _, err := client.New(url, client.WithToken(mcpToken)).PutRecipient(context.Background(), "agent-1", api.RecipientRequest{Status: "running"}); err != nil {
		t.Fatal(err)
	}
	return &stdioHost{url: url, dir: dir, clock: clock, sched: st.Scheduler, rt: rt}
}

// stdio runs `vigil mcp` in process on pipes, pointed at the host by
// VIGIL_SERVER and VIGIL_TOKEN (as an MCP client's configuration sets
// them), and connects the SDK's client to it over those pipes.
func stdio(t *testing.T, h *stdioHost, token string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	t.Setenv("VIGIL_SERVER", h.url)
	t.Setenv("VIGIL_TOKEN", token)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errOut syncbuf.Buffer
	root := newRoot(outW, &errOut)
	root.SetIn(inR)
	root.SetArgs([]string{"mcp"})
	done := make(chan error, 1)
	go func() {
		done <- root.ExecuteContext(context.Background())
		_ = outW.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "vigil-test", Version: "1"}, opts).Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close() // closes stdin: vigil mcp ends
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("vigil mcp: %v\nstderr: %s", err, errOut.String())
			}
		case <-time.After(30 * time.Second): // a bound on the exit, not a pause
			t.Error("vigil mcp did not end when its stdin closed")
		}
	})
	return cs
}

// Over stdio: register → wait → mailbox for a timer, a refusal naming
// its setting, and a plugin reload announced by notifications/tools/
// list_changed before the client asks anything, which the next
// tools/list then shows.
func TestMCPStdio(t *testing.T) {
	h := newStdioHost(t)
	changed := make(chan struct{}, 8)
	cs := stdio(t, h, mcpToken, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})

	var w api.Watch
	if res := mcptest.CallTool(t, cs, "register_watch", map[string]any{"kind": "timer", "params": map[string]any{"at": mcpT0.Add(time.Second).Format(time.RFC3339)}, "recipient": "agent-1"}, &w); res.IsError {
		t.Fatalf("register: %+v", res.Content)
	}
	var pending mcpserver.WaitResult
	mcptest.CallTool(t, cs, "wait_watch", map[string]any{"id": w.ID, "wait": "0s"}, &pending)
	if pending.Settled || pending.Version == "" {
		t.Fatalf("a wait on a pending timer: %+v", pending)
	}
	h.clock.Set(mcpT0.Add(2 * time.Second))
	h.sched.Tick(context.Background(), h.clock.Now())
	var done mcpserver.WaitResult
	mcptest.CallTool(t, cs, "wait_watch", map[string]any{"id": w.ID, "since": pending.Version}, &done)
	if !done.Settled || done.Watch.State != "fired" {
		t.Fatalf("a wait on a fired timer: %+v", done)
	}
	var box api.Mailbox
	mcptest.CallTool(t, cs, "read_mailbox", map[string]any{"recipient": "agent-1"}, &box)
	if len(box.Messages) != 1 || box.Messages[0].WatchID != w.ID || box.Next == 0 {
		t.Fatalf("mailbox: %+v", box)
	}

	e := mcptest.ToolErr(t, mcptest.CallTool(t, cs, "register_watch", map[string]any{"kind": "http", "params": map[string]any{"url": "https://example.com/"}, "recipient": "agent-1"}, nil))
	if e.Code != api.CodeWatchUnobservable || !strings.Contains(e.Setting, "http") {
		t.Errorf("http without its grant: %+v, want watch_unobservable naming its setting", e)
	}

	for len(changed) > 0 {
		<-changed // whatever came before the reload is not its notification
	}
	copyPlugin(t, h.dir, "ci")
	if err := os.WriteFile(filepath.Join(h.dir, plugin.RegistryFile), []byte(`{"kinds":{"timer":{},"http":{},"ci":{"capabilities":["fetch"],"fetch_hosts":["api.github.com"]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := h.rt.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The host pushes: the notification comes with no call of the
	// client's to prompt it.
	select {
	case <-changed:
	case <-time.After(30 * time.Second): // a bound on a notification, not a pause
		t.Fatal("no tools/list_changed after the kinds changed")
	}
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(tools.Tools, func(x *mcp.Tool) bool { return x.Name == "register_watch" })
	if i < 0 || !strings.Contains(mustJSONText(t, tools.Tools[i].InputSchema), `"ci"`) {
		t.Errorf("tools/list after a reload that added ci: %v", tools.Tools)
	}
}

// Over stdio the token is the host's to check: a wrong one makes every
// tool answer the API's unauthorized, as a tool error.
func TestMCPStdioWrongToken(t *testing.T) {
	h := newStdioHost(t)
	cs := stdio(t, h, "not-a-token-this-host-knows-of", nil)
	e := mcptest.ToolErr(t, mcptest.CallTool(t, cs, "list_kinds", nil, nil))
	if e.Code != api.CodeUnauthorized {
		t.Errorf("a wrong token: %+v, want unauthorized", e)
	}
	e = mcptest.ToolErr(t, mcptest.CallTool(t, cs, "read_mailbox", map[string]any{"recipient": "agent-1"}, nil))
	if e.Code != api.CodeUnauthorized {
		t.Errorf("a wrong token: %+v, want unauthorized", e)
	}
}

// Over stdio with no token at all, against a host that has tokens: every
// tool answers the API's unauthorized, as a tool error, and the session
// stays up for the next call.
func TestMCPStdioNoToken(t *testing.T) {
	h := newStdioHost(t)
	cs := stdio(t, h, "", nil)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"list_kinds", nil},
		{"register_watch", map[string]any{"kind": "timer", "params": map[string]any{"at": mcpT0.Add(time.Second).Format(time.RFC3339)}, "recipient": "agent-1"}},
		{"read_mailbox", map[string]any{"recipient": "agent-1"}},
	} {
		if e := mcptest.ToolErr(t, mcptest.CallTool(t, cs, c.tool, c.args, nil)); e.Code != api.CodeUnauthorized {
			t.Errorf("%s with no token: %+v, want unauthorized", c.tool, e)
		}
	}
}

func mustJSONText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The built binary, as an MCP client runs it: `vigil mcp` started by the
// SDK's CommandTransport with VIGIL_SERVER pointing at a real `vigil
// serve`, and /mcp on that server over streamable HTTP. A timer a second
// out fires on the host's own clock (the bound is the wait tool's), and
// both transports name the host's kinds, built in ones included.
func TestMCPEndToEnd(t *testing.T) {
	bin := buildVigil(t)
	addr := freePort(t)
	base := "http://" + addr
	startServer(t, bin, addr, t.TempDir())
	ctx := context.Background()

	cmd := exec.Command(bin, "mcp")
	cmd.Env = append(os.Environ(), "VIGIL_SERVER="+base, "VIGIL_TOKEN=")
	overStdio, err := mcp.NewClient(&mcp.Implementation{Name: "vigil-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer overStdio.Close()
	overHTTP, err := mcp.NewClient(&mcp.Implementation{Name: "vigil-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp",
		HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer overHTTP.Close()
	for name, cs := range map[string]*mcp.ClientSession{"stdio": overStdio, "http": overHTTP} {
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(tools.Tools, func(x *mcp.Tool) bool { return x.Name == "register_watch" })
		if i < 0 {
			t.Fatalf("%s: no register_watch", name)
		}
		schema := mustJSONText(t, tools.Tools[i].InputSchema)
		for _, k := range []string{`"timer"`, `"ci"`, `"observe.thread"`} {
			if !strings.Contains(schema, k) {
				t.Errorf("%s: register_watch's kinds lack %s: %s", name, k, schema)
			}
		}
	}

	var w api.Watch
	at := time.Now().Add(time.Second).UTC().Format(time.RFC3339Nano)
	if res := mcptest.CallTool(t, overStdio, "register_watch", map[string]any{"kind": "timer", "params": map[string]any{"at": at}, "recipient": "agent-1"}, &w); res.IsError {
		t.Fatalf("register: %+v", res.Content)
	}
	var r mcpserver.WaitResult
	for since := ""; !r.Settled; since = r.Version { // each call is bounded by the wait tool's 60 s
		args := map[string]any{"id": w.ID}
		if since != "" {
			args["since"] = since
		}
		if res := mcptest.CallTool(t, overHTTP, "wait_watch", args, &r); res.IsError {
			t.Fatalf("wait: %+v", res.Content)
		}
	}
	if r.Watch.State != "fired" {
		t.Fatalf("the timer: %+v", r)
	}
	var box api.Mailbox
	mcptest.CallTool(t, overStdio, "read_mailbox", map[string]any{"recipient": "agent-1"}, &box)
	if len(box.Messages) != 1 || box.Messages[0].WatchID != w.ID {
		t.Fatalf("mailbox: %+v", box)
	}
}

// scriptedKinds is a kindWaiter that answers from a script, one answer a
// call, recording each call's since; past the script it waits for ctx.
type scriptedKinds struct {
	mu      sync.Mutex // guards answers and sinces
	answers []scriptedAnswer
	sinces  []string
	parked  chan struct{} // closed when a call finds the script done
}

type scriptedAnswer struct {
	version string
	err     error
}

func (s *scriptedKinds) WaitKinds(ctx context.Context, since string, _ time.Duration) (api.KindList, error) {
	s.mu.Lock()
	s.sinces = append(s.sinces, since)
	if len(s.answers) == 0 {
		s.mu.Unlock()
		close(s.parked)
		<-ctx.Done()
		return api.KindList{}, ctx.Err()
	}
	a := s.answers[0]
	s.answers = s.answers[1:]
	s.mu.Unlock()
	return api.KindList{Version: a.version}, a.err
}

// The follower retries a failed poll, moves its since only once the
// server has the new kinds (a failed read is retried, not skipped),
// refreshes on a change and not on a wait that ran out, and stops with
// its context; a host that answers no version stops it at once.
func TestFollowKinds(t *testing.T) {
	k := &scriptedKinds{parked: make(chan struct{}), answers: []scriptedAnswer{
		{err: io.ErrUnexpectedEOF}, // the host did not answer
		{version: "v1"},            // the refresh fails
		{version: "v1"},            // the refresh works
		{version: "v1"},            // the wait ran out
		{version: "v2"},
	}}
	refreshes := make(chan struct{}, 8)
	fail := true
	refresh := func(context.Context) error {
		refreshes <- struct{}{}
		if fail {
			fail = false
			return io.ErrUnexpectedEOF
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		followKinds(ctx, k, refresh, slog.New(slog.DiscardHandler), time.Millisecond)
	}()
	<-k.parked // polling on v2, past the script
	cancel()
	<-done
	if want := []string{"", "", "", "v1", "v1", "v2"}; !slices.Equal(k.sinces, want) {
		t.Errorf("the polls' since: %q, want %q", k.sinces, want)
	}
	if len(refreshes) != 3 { // v1 failed, v1 again, v2
		t.Errorf("%d refreshes, want 3", len(refreshes))
	}

	old := &scriptedKinds{answers: []scriptedAnswer{{version: ""}}}
	followKinds(context.Background(), old, func(context.Context) error { t.Error("refreshed for a host with no version"); return nil }, slog.New(slog.DiscardHandler), time.Millisecond)
	if len(old.sinces) != 1 {
		t.Errorf("a host with no version was polled %d times", len(old.sinces))
	}
}
