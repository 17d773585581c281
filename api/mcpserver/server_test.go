package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/api/client"
)

// fakeAPI records what the tools send and answers from its fields.
type fakeAPI struct {
	mu      sync.Mutex
	kinds   []api.Kind
	reads   int // Kinds calls
	created []api.WatchRequest
	waits   []string // since, per WaitWatch
	watch   api.Watch
	err     error
	signals []api.SignalRequest // sent, with signalURLs
	urls    []string
	signal  api.Signal
}

func (f *fakeAPI) Kinds(context.Context) (api.KindList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	return api.KindList{Kinds: append([]api.Kind(nil), f.kinds...)}, nil
}

func (f *fakeAPI) CreateWatch(_ context.Context, req api.WatchRequest) (api.Watch, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.created = append(f.created, req)
	return api.Watch{ID: "w1", Kind: req.Kind, State: "pending"}, f.err
}

func (f *fakeAPI) GetWatch(context.Context, string) (api.Watch, error) { return f.watch, f.err }

func (f *fakeAPI) WaitWatch(_ context.Context, _, since string, _ time.Duration) (api.Watch, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waits = append(f.waits, since)
	return f.watch, f.err
}

func (f *fakeAPI) ListWatches(context.Context, client.WatchQuery) (api.WatchList, error) {
	return api.WatchList{}, f.err
}
func (f *fakeAPI) CancelWatch(context.Context, string) (api.Watch, error) { return f.watch, f.err }
func (f *fakeAPI) ReadMailbox(context.Context, string, uint64, time.Duration, int) (api.Mailbox, error) {
	return api.Mailbox{}, f.err
}
func (f *fakeAPI) Record(context.Context, string, api.ObserveRequest) (api.ObserveResult, error) {
	return api.ObserveResult{}, f.err
}
func (f *fakeAPI) ListWork(context.Context, string, string) (api.WorkList, error) {
	return api.WorkList{}, f.err
}
func (f *fakeAPI) GetWork(context.Context, string) (api.Work, error) { return api.Work{}, f.err }
func (f *fakeAPI) ClaimWork(context.Context, string, string) (api.Work, error) {
	return api.Work{}, f.err
}
func (f *fakeAPI) CompleteWork(context.Context, string) (api.Work, error) { return api.Work{}, f.err }
func (f *fakeAPI) SendSignal(_ context.Context, u string, req api.SignalRequest) (api.Signal, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.urls, f.signals = append(f.urls, u), append(f.signals, req)
	return f.signal, f.err
}

// session runs a Server over f on an in-memory transport and connects
// the SDK's client to it.
func session(t *testing.T, f *fakeAPI, opts *mcp.ClientOptions) (*Server, *mcp.ClientSession) {
	t.Helper()
	ctx := context.Background()
	s := New(ctx, Config{API: func(*mcp.CallToolRequest) (API, error) { return f, nil }, Kinds: f.Kinds})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return s, cs
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// The host's defaults are the host's: a field the agent left out is sent
// as nothing, never as a number of the server's own.
func TestRegisterSendsNothingForWhatTheAgentLeftOut(t *testing.T) {
	f := &fakeAPI{kinds: []api.Kind{{Kind: "timer", Summary: "fires", Observable: true}}}
	_, cs := session(t, f, nil)
	call(t, cs, "register_watch", map[string]any{"kind": "timer", "params": map[string]any{"at": "2030-01-01T14:00:00Z"}, "recipient": "agent-1"})
	call(t, cs, "register_watch", map[string]any{"kind": "timer", "params": map[string]any{}, "recipient": "agent-1", "every": "5s", "expires_at": "2030-01-01T15:00:00Z"})
	if len(f.created) != 2 {
		t.Fatalf("created %d watches", len(f.created))
	}
	if got := f.created[0]; got.Every != "" || got.ExpiresAt != nil {
		t.Errorf("left out every and expires_at, sent %q %v", got.Every, got.ExpiresAt)
	}
	if got := f.created[1]; got.Every != "5s" || got.ExpiresAt == nil || !got.ExpiresAt.Equal(time.Date(2030, 1, 1, 15, 0, 0, 0, time.UTC)) {
		t.Errorf("gave every and expires_at, sent %q %v", got.Every, got.ExpiresAt)
	}
	if res := call(t, cs, "register_watch", map[string]any{"kind": "timer", "params": map[string]any{}, "recipient": "agent-1", "expires_at": "tomorrow"}); !res.IsError {
		t.Errorf("a bad expires_at was sent: %+v", res)
	}
}

// The first wait reads the watch and waits on a change from its version;
// a settled watch answers at once, without a wait.
func TestWaitFirstWaitsOnTheCurrentVersion(t *testing.T) {
	f := &fakeAPI{watch: api.Watch{ID: "w1", State: "pending", Version: "v1", LastNote: "not yet"}}
	_, cs := session(t, f, nil)
	res := call(t, cs, "wait_watch", map[string]any{"id": "w1", "wait": "0s"})
	var got WaitResult
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &got)
	if got.Settled || got.Version != "v1" || len(f.waits) != 1 || f.waits[0] != "v1" {
		t.Errorf("a first wait: %+v, waited since %v; want a wait since v1", got, f.waits)
	}
	f.watch = api.Watch{ID: "w1", State: "fired", Version: "v2", Outcome: &api.Outcome{Result: "success"}}
	res = call(t, cs, "wait_watch", map[string]any{"id": "w1"})
	b, _ = json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &got)
	if !got.Settled || got.Status != "fired: success" || len(f.waits) != 1 {
		t.Errorf("a settled watch: %+v after %d waits; want its outcome without a wait", got, len(f.waits))
	}
}

// A host that does not answer is a tool error with its own code; an API
// refusal keeps the API's code, field and setting.
func TestErrorsAreToolErrors(t *testing.T) {
	f := &fakeAPI{err: &url.Error{Op: "Get", URL: "http://127.0.0.1:1", Err: errors.New("connection refused")}}
	_, cs := session(t, f, nil)
	res := call(t, cs, "show_watch", map[string]any{"id": "w1"})
	var env api.ErrorEnvelope
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &env)
	if !res.IsError || env.Error.Code != CodeUnreachable {
		t.Errorf("an unreachable host: %+v", res)
	}
	f.err = &api.Error{Code: api.CodeWatchUnobservable, Message: "no plugin serves kind \"x\"", Setting: "kinds.x.wasm"}
	res = call(t, cs, "cancel_watch", map[string]any{"id": "w1"})
	b, _ = json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &env)
	if !res.IsError || env.Error.Code != api.CodeWatchUnobservable || env.Error.Setting != "kinds.x.wasm" {
		t.Errorf("a refusal: %s", b)
	}
}

// The register tool is added again only when the kinds changed: a reload
// that loads the same kinds sends no tools/list_changed.
func TestRefreshAddsTheToolOnlyWhenTheKindsChanged(t *testing.T) {
	f := &fakeAPI{kinds: []api.Kind{{Kind: "timer", Summary: "fires", Observable: true}}}
	changed := make(chan struct{}, 8)
	s, cs := session(t, f, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	ctx := context.Background()
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.kinds = append(f.kinds, api.Kind{Kind: "ci", Summary: "CI", Observable: true})
	f.mu.Unlock()
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second): // a bound on a notification, not a pause
		t.Fatal("no tools/list_changed after the kinds changed")
	}
	// A refresh that finds the same kinds adds nothing, so the SDK has
	// no change to announce.
	s.mu.Lock()
	before := s.added
	s.mu.Unlock()
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	after := s.added
	s.mu.Unlock()
	if after != before {
		t.Errorf("a refresh that found the same kinds added the register tool again (%d → %d)", before, after)
	}
	_ = cs
}

// fakeSignal is a registry's change signal: a channel a write closes and
// drops, made again when asked for.
type fakeSignal struct {
	mu sync.Mutex
	ch chan struct{}
}

func (f *fakeSignal) changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ch == nil {
		f.ch = make(chan struct{})
	}
	return f.ch
}

func (f *fakeSignal) write() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ch != nil {
		close(f.ch)
		f.ch = nil
	}
}

// A write while Follow reads the kinds wakes it again: it takes the next
// signal before it reads, so the last kinds are the tool's.
func TestFollowMissesNoWriteDuringARead(t *testing.T) {
	var (
		sig   fakeSignal
		mu    sync.Mutex
		reads int
		kinds = []api.Kind{{Kind: "timer", Summary: "fires", Observable: true}}
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	read := func(context.Context) (api.KindList, error) {
		mu.Lock()
		defer mu.Unlock()
		reads++
		out := api.KindList{Kinds: kinds}
		switch reads {
		case 2: // Follow's first read: the kinds change again under it
			kinds = append(kinds, api.Kind{Kind: "ci", Summary: "CI", Observable: true})
			sig.write()
		case 3: // the read that write woke: Follow ends after it
			cancel()
		}
		return out, nil
	}
	s := New(context.Background(), Config{API: func(*mcp.CallToolRequest) (API, error) { return &fakeAPI{}, nil }, Kinds: read})
	var once sync.Once
	taken := make(chan struct{})
	changed := func() <-chan struct{} {
		c := sig.changed()
		once.Do(func() { close(taken) })
		return c
	}
	followed := make(chan struct{})
	go func() { defer close(followed); s.Follow(ctx, changed) }()
	<-taken
	sig.write() // a reload
	select {
	case <-followed:
	case <-time.After(10 * time.Second): // a bound on the follower, not a pause
		t.Fatal("Follow did not read the kinds again after a write during its read")
	}
	want := kindsKey([]api.Kind{{Kind: "ci", Summary: "CI", Observable: true}, {Kind: "timer", Summary: "fires", Observable: true}})
	if s.kinds != want {
		t.Fatalf("the register tool's kinds %q, want %q", s.kinds, want)
	}
}

// The register tool's every and expires_at take their numbers from
// Config.Defaults, and without them name none.
func TestRegisterDescribesTheDefaultsItIsGiven(t *testing.T) {
	desc := func(d Defaults) (every, expires string) {
		tool, err := registerTool(nil, d)
		if err != nil {
			t.Fatal(err)
		}
		return tool.InputSchema.(*jsonschema.Schema).Properties["every"].Description, tool.InputSchema.(*jsonschema.Schema).Properties["expires_at"].Description
	}
	every, expires := desc(Defaults{Every: 7 * time.Second, Deadline: 42 * time.Minute})
	if !strings.Contains(every, "7s") || !strings.Contains(expires, "42m0s from now") {
		t.Errorf("given defaults: every %q, expires_at %q", every, expires)
	}
	every, expires = desc(Defaults{})
	for _, d := range []string{every, expires} {
		if strings.Contains(d, "minute") || strings.Contains(d, "15m") || !strings.Contains(d, "host's default") {
			t.Errorf("no defaults given: %q names a number of its own, or not the host's default", d)
		}
	}
}

// send_signal posts the URL, outcome and data it is given; a signal
// settled already is a tool error naming how it settled.
func TestSendSignalTool(t *testing.T) {
	f := &fakeAPI{signal: api.Signal{Title: "Go?", State: "fired", Outcome: "approve"}}
	_, cs := session(t, f, nil)
	res := call(t, cs, "send_signal", map[string]any{"url": "http://h/api/v1/signals/AAAAAAAAAAAAAAAAAAAAAA", "outcome": "approve", "data": map[string]any{"n": 1}})
	if res.IsError || len(f.signals) != 1 || f.signals[0].Outcome != "approve" || string(f.signals[0].Data) != `{"n":1}` || f.urls[0] != "http://h/api/v1/signals/AAAAAAAAAAAAAAAAAAAAAA" {
		t.Fatalf("sent %+v %v: %+v", f.signals, f.urls, res)
	}
	f.err = &api.Error{Code: api.CodeAlreadySettled, Message: "the signal was already answered \"approve\""}
	res = call(t, cs, "send_signal", map[string]any{"url": "http://h/api/v1/signals/AAAAAAAAAAAAAAAAAAAAAA", "outcome": "deny"})
	text := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError || !strings.Contains(text, "already_settled") || !strings.Contains(text, "fired") {
		t.Fatalf("a second answer: %+v %s", res, text)
	}
	if f.signals[1].Data != nil {
		t.Fatalf("data left out was sent as %s", f.signals[1].Data)
	}
}
