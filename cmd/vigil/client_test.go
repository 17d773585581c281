package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/authz"
	"github.com/vigilhq/vigil/internal/authztest"
	"github.com/vigilhq/vigil/internal/delivery"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/hosttest"
	"github.com/vigilhq/vigil/internal/httpapi"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// cliPlugins serves "ci" (settles at once with the result its params name,
// default success; refuses {"bad":…}), "slow" (never settles) and "gone"
// (its plugin has been removed by the time it is probed).
func cliPlugins() apitest.FakePlugins {
	info := func(name string) kind.Info {
		return kind.Info{Kind: name, Version: "1.0.0", DefaultEvery: 30 * time.Second, Observable: true, File: name + ".wasm",
			Source: "bundled", SHA256: fmt.Sprintf("%x", sha256.Sum256([]byte(name)))}
	}
	p := apitest.NewFakePlugins(info("ci"), info("slow"), info("gone"))
	p.OnObserve(func(req abi.ObserveRequest) (kind.Observation, error) {
		switch req.Kind {
		case "slow":
			return kind.Observation{Status: abi.StatusPending}, nil
		case "gone":
			return kind.Observation{}, kind.ErrUnknownKind
		}
		return hosttest.Settles(req)
	})
	return p
}

// runtimeKinds is the fake plugins as the plugin runtime serves its kinds
// (kind.Multi): admitted by the params alone.
type runtimeKinds struct{ apitest.FakePlugins }

func (k runtimeKinds) Admit(ctx context.Context, name string, params json.RawMessage) (kind.Admission, error) {
	return k.FakeKinds.Admit(ctx, name, kind.AdmitRequest{Params: params})
}

// lossyDelivery settles every outcome for the recipient "lost" without
// mailing it, as if it had stopped running: the watch ends undeliverable
// and no message comes.
type lossyDelivery struct {
	*delivery.Delivery
	st *store.Store
}

func (d lossyDelivery) Settle(ctx context.Context, id store.ID, s store.Settlement, m store.Message) (store.Watch, error) {
	if w, err := d.st.Get(ctx, id); err == nil && w.Recipient.ID == "lost" {
		s.State, s.Receipt = store.Undeliverable, store.ReceiptRejected
		return d.st.Settle(ctx, id, s)
	}
	return d.Delivery.Settle(ctx, id, s, m)
}

// settlingScheduler probes a watch for "lost" before its registration
// returns, so the client meets a watch that has already ended.
type settlingScheduler struct {
	*scheduler.Scheduler
	now time.Time
}

func (s settlingScheduler) Register(ctx context.Context, r scheduler.Registration) (store.Watch, error) {
	w, err := s.Scheduler.Register(ctx, r)
	if err == nil && r.Recipient.ID == "lost" {
		s.Tick(ctx, s.now)
	}
	return w, err
}

// pollingMailboxes tells the test when a recipient's long poll has begun.
type pollingMailboxes struct {
	*delivery.Delivery
	mu    sync.Mutex
	polls map[string]chan struct{}
}

func (m *pollingMailboxes) began(rid string) chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.polls[rid]
	if !ok {
		c = make(chan struct{})
		m.polls[rid] = c
	}
	return c
}

func (m *pollingMailboxes) Read(ctx context.Context, rid string, after uint64, limit int, wait time.Duration) ([]store.Message, error) {
	if wait > 0 {
		c := m.began(rid)
		m.mu.Lock()
		select {
		case <-c:
		default:
			close(c)
		}
		m.mu.Unlock()
	}
	return m.Delivery.Read(ctx, rid, after, limit, wait)
}

type cliFixture struct {
	url   string
	now   time.Time
	sched *scheduler.Scheduler
	mail  *pollingMailboxes
}

// newCLIFixture serves the real API on a loopback port: badger in
// t.TempDir(), delivery, a scheduler on a fixed clock that the test drives
// with Tick, and the recipients service. The clock is the wall clock at
// the start, so --in deadlines land inside the host's bounds.
func newCLIFixture(t *testing.T, o httpapi.Options) *cliFixture {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Second)
	st := apitest.NewStack(t, apitest.Config{Plugins: cliPlugins(), Clock: fakeclock.At(now), IDs: hosttest.IDs(3),
		Deliver: func(d *delivery.Delivery, st *store.Store) scheduler.Deliverer { return lossyDelivery{d, st} }})
	mail := &pollingMailboxes{Delivery: st.Delivery, polls: map[string]chan struct{}{}}
	base, stop := context.WithCancel(context.Background())
	o.StreamWait = 50 * time.Millisecond
	app := httpapi.New(httpapi.Deps{Scheduler: settlingScheduler{st.Scheduler, now}, Watches: st.Store, Mailboxes: mail,
		Recipients: st.Recipients, Plugins: cliPlugins(), Base: base}, o)
	url := apitest.Serve(t, app)
	t.Cleanup(stop) // runs first: ends long polls and streams before the shutdown
	return &cliFixture{url: url, now: now, sched: st.Scheduler, mail: mail}
}

// waitParked returns once more than before waits on a watch are parked
// in the server, so what the test changes next is a change the wait must
// be woken by. (A wait whose client went away stays parked until its
// bound: count from before the command starts.)
func (f *cliFixture) waitParked(t *testing.T, before int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); f.sched.Waiters() <= before; {
		if time.Now().After(deadline) {
			t.Fatal("no wait on a watch was parked within 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}

// vigil runs the root command against the fixture's server.
func (f *cliFixture) vigil(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	return run(t, context.Background(), append(args, "--server", f.url)...)
}

func (f *cliFixture) mustVigil(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := f.vigil(t, args...)
	if err != nil {
		t.Fatalf("vigil %s: %v\nstderr: %s", strings.Join(args, " "), err, errOut)
	}
	return out
}

func decodeJSON[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
	return v
}

// exitCodeOf is what main() exits with for err.
func exitCodeOf(err error) int { return exitCode(err) }

func TestWatchAddListShowCancel(t *testing.T) {
	f := newCLIFixture(t, httpapi.Options{})
	before := time.Now()
	w := decodeJSON[api.Watch](t, f.mustVigil(t, "watch", "add", "slow", "--for", "agent-1", "--json", "--every", "45s", "--in", "10m",
		"--params-json", `{"x":"y","n":1}`, "--param", "sha=abc", "--param", "n=5", "--param", "ok=true", "--param", `obj={"a":1}`, "--param", `q="7"`))
	after := time.Now()
	if w.State != "pending" || w.Kind != "slow" || w.Recipient.ID != "agent-1" || w.Every != "45s" {
		t.Fatalf("%+v", w)
	}
	if got := compact(w.Params); got != `{"n":5,"obj":{"a":1},"ok":true,"q":"7","sha":"abc","x":"y"}` {
		t.Fatalf("params %s", got)
	}
	if w.ExpiresAt == nil || w.ExpiresAt.Before(before.Add(10*time.Minute).Truncate(time.Second)) || w.ExpiresAt.After(after.Add(10*time.Minute)) {
		t.Fatalf("--in 10m: expires %v", w.ExpiresAt)
	}

	// Without --in or --at the host resolves the default, not the client.
	d := decodeJSON[api.Watch](t, f.mustVigil(t, "watch", "add", "slow", "--for", "agent-1", "--json"))
	if d.ExpiresAt == nil || !d.ExpiresAt.Equal(f.now.Add(15*time.Minute)) || compact(d.Params) != `{}` {
		t.Fatalf("default deadline: %+v", d)
	}
	at := f.now.Add(time.Hour)
	a := decodeJSON[api.Watch](t, f.mustVigil(t, "watch", "add", "slow", "--for", "agent-2", "--json", "--at", at.Format(time.RFC3339)))
	if a.ExpiresAt == nil || !a.ExpiresAt.Equal(at) {
		t.Fatalf("--at: %+v", a)
	}
	if _, _, err := f.vigil(t, "watch", "add", "slow", "--for", "agent-1", "--in", "1m", "--at", at.Format(time.RFC3339)); err == nil || !strings.Contains(err.Error(), "in") {
		t.Fatalf("--in with --at: %v", err)
	}
	if _, _, err := f.vigil(t, "watch", "add", "slow", "--for", "agent-1", "--at", "tomorrow"); err == nil || !strings.Contains(err.Error(), "RFC 3339") {
		t.Fatalf("--at tomorrow: %v", err)
	}
	if _, _, err := f.vigil(t, "watch", "add", "slow"); err == nil || !strings.Contains(err.Error(), "for") {
		t.Fatalf("no --for: %v", err)
	}

	out := f.mustVigil(t, "watch", "ls", "--for", "agent-1")
	if !strings.HasPrefix(out, "ID ") || !strings.Contains(out, w.ID) || !strings.Contains(out, d.ID) || strings.Contains(out, a.ID) || !strings.Contains(out, "pending") {
		t.Fatalf("ls --for agent-1:\n%s", out)
	}
	if list := decodeJSON[api.WatchList](t, f.mustVigil(t, "watch", "ls", "--json")); len(list.Watches) != 3 {
		t.Fatalf("ls: %+v", list)
	}
	out = f.mustVigil(t, "watch", "show", w.ID)
	for _, want := range []string{"id ", w.ID, "state ", "pending", `"sha":"abc"`, "45s", "agent-1"} {
		if !strings.Contains(out, want) {
			t.Fatalf("show lacks %q:\n%s", want, out)
		}
	}
	c := decodeJSON[api.Watch](t, f.mustVigil(t, "watch", "cancel", w.ID, "--json"))
	if c.State != "cancelled" || c.ID != w.ID {
		t.Fatalf("cancel: %+v", c)
	}
	list := decodeJSON[api.WatchList](t, f.mustVigil(t, "watch", "ls", "--state", "cancelled", "--json"))
	if len(list.Watches) != 1 || list.Watches[0].ID != w.ID {
		t.Fatalf("ls --state cancelled: %+v", list)
	}
	_, _, err := f.vigil(t, "watch", "cancel", w.ID)
	if err == nil || !strings.HasPrefix(err.Error(), "already_settled: ") || exitCodeOf(err) != ExitUsage {
		t.Fatalf("cancel twice: %v", err)
	}
}

// ls lists everything by following the server's pages; --limit stops
// there and prints the cursor, which --after continues from; --kind and
// --state filter on the server, which names a bad value.
func TestWatchLsPagesAndFilters(t *testing.T) {
	f := newCLIFixture(t, httpapi.Options{})
	var ids []string
	for _, kind := range []string{"slow", "slow", "slow", "ci", "slow"} {
		ids = append(ids, decodeJSON[api.Watch](t, f.mustVigil(t, "watch", "add", kind, "--for", "agent-1", "--json")).ID)
	}
	slices.Sort(ids) // one instant on the fixed clock: id order is the order
	listed := func(l api.WatchList) []string {
		var out []string
		for _, w := range l.Watches {
			out = append(out, w.ID)
		}
		return out
	}
	if l := decodeJSON[api.WatchList](t, f.mustVigil(t, "watch", "ls", "--json")); !slices.Equal(listed(l), ids) || l.Next != "" {
		t.Fatalf("ls: %v next %q, want %v", listed(l), l.Next, ids)
	}
	first := decodeJSON[api.WatchList](t, f.mustVigil(t, "watch", "ls", "--json", "--limit", "3"))
	if !slices.Equal(listed(first), ids[:3]) || first.Next == "" {
		t.Fatalf("--limit 3: %v next %q", listed(first), first.Next)
	}
	rest := decodeJSON[api.WatchList](t, f.mustVigil(t, "watch", "ls", "--json", "--after", first.Next))
	if !slices.Equal(listed(rest), ids[3:]) || rest.Next != "" {
		t.Fatalf("--after: %v next %q", listed(rest), rest.Next)
	}
	out, errOut, err := f.vigil(t, "watch", "ls", "--limit", "2", "--kind", "slow")
	if err != nil || strings.Count(out, "slow") != 2 || !strings.Contains(errOut, "--after ") {
		t.Fatalf("--limit 2 --kind slow: %v\n%s\n%s", err, out, errOut)
	}
	if l := decodeJSON[api.WatchList](t, f.mustVigil(t, "watch", "ls", "--json", "--kind", "ci", "--state", "pending")); len(l.Watches) != 1 || l.Watches[0].Kind != "ci" {
		t.Fatalf("--kind ci: %+v", l)
	}
	for _, args := range [][]string{{"--kind", "Not A Kind"}, {"--state", "done"}, {"--after", "nonsense"}} {
		_, _, err := f.vigil(t, append([]string{"watch", "ls"}, args...)...)
		if err == nil || !strings.HasPrefix(err.Error(), "invalid_field: ") || !strings.Contains(err.Error(), "field: "+strings.TrimPrefix(args[0], "--")) {
			t.Errorf("%v: %v", args, err)
		}
	}
	if _, _, err := f.vigil(t, "watch", "ls", "--limit", "-1"); err == nil {
		t.Error("--limit -1 accepted")
	}
}

// --wait exits by how the watch ended: each case is woken by the scheduler
// the test drives, once the command's long poll is in the server's hands.
func TestWatchAddWaitExitCodes(t *testing.T) {
	f := newCLIFixture(t, httpapi.Options{})
	tests := []struct {
		name, kind, recipient string
		params                []string
		tick                  time.Duration // Tick at now + this; -1: no tick
		code                  int
		want                  string
	}{
		{"success", "ci", "w-ok", nil, 0, 0, "success"},
		{"failure", "ci", "w-fail", []string{"--param", "result=failure"}, 0, 1, "failure"},
		{"expiry", "slow", "w-exp", nil, 16 * time.Minute, 2, "expired"},
		{"unwatchable", "gone", "w-gone", nil, 0, 3, "unwatchable"},
		// Settled before its registration returned, and never mailed.
		{"undeliverable", "ci", "lost", nil, -1, 3, "undeliverable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			type result struct {
				out, errOut string
				err         error
			}
			done := make(chan result, 1)
			before := f.sched.Waiters()
			go func() {
				args := append([]string{"watch", "add", tt.kind, "--for", tt.recipient, "--wait"}, tt.params...)
				out, errOut, err := f.vigil(t, args...)
				done <- result{out, errOut, err}
			}()
			if tt.tick >= 0 {
				f.waitParked(t, before)
				f.sched.Tick(context.Background(), f.now.Add(tt.tick))
			}
			var r result
			select {
			case r = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("--wait did not return")
			}
			if got := exitCodeOf(r.err); got != tt.code {
				t.Fatalf("exit %d (err %v), want %d\nstdout:\n%s\nstderr:\n%s", got, r.err, tt.code, r.out, r.errOut)
			}
			if !strings.Contains(r.out, tt.want) || !strings.Contains(r.errOut, "registered") {
				t.Fatalf("stdout:\n%s\nstderr:\n%s", r.out, r.errOut)
			}
		})
	}

	// With --json: the watch as it ended and the message that said so.
	done := make(chan string, 1)
	before := f.sched.Waiters()
	go func() {
		out, _, _ := f.vigil(t, "watch", "add", "ci", "--for", "w-json", "--wait", "--json")
		done <- out
	}()
	f.waitParked(t, before)
	f.sched.Tick(context.Background(), f.now)
	res := decodeJSON[waitResult](t, <-done)
	if res.Message == nil || res.Watch == nil || res.Message.WatchID != res.Watch.ID || res.Message.Type != "fired" || res.Watch.State != "fired" {
		t.Fatalf("%+v", res)
	}
}

func TestWaitExitCode(t *testing.T) {
	tests := []struct {
		typeOrState, result string
		code                int
	}{
		{"fired", "success", 0},
		{"fired", "fired", 0},
		{"fired", "matched", 0},
		{"fired", "", 0},
		{"changed", "updated", 0},
		{"fired", "failure", 1},
		{"fired", "failed", 1},
		{"fired", "error", 1},
		{"fired", "FAILED", 1},
		{"expired", "expired", 2},
		{"undeliverable", "success", 3},
		{"unwatchable", "unwatchable", 3},
		{"cancelled", "", 3},
		{"pending", "", 4},
		{"teleported", "success", 1},
	}
	for _, tt := range tests {
		if got := waitExitCode(tt.typeOrState, tt.result); got != tt.code {
			t.Errorf("waitExitCode(%q, %q) = %d, want %d", tt.typeOrState, tt.result, got, tt.code)
		}
	}
}

func TestBuildParams(t *testing.T) {
	tests := []struct {
		json  string
		pairs []string
		want  string
	}{
		{"", nil, `{}`},
		{"", []string{"at=2026-12-01T14:00:00Z"}, `{"at":"2026-12-01T14:00:00Z"}`},
		{"", []string{"n=5", "f=1.5", "t=false", "z=null", "l=[1,2]"}, `{"f":1.5,"l":[1,2],"n":5,"t":false,"z":null}`},
		{"", []string{"sha=007", "msg=hello world", "e=", `s="5"`, "eq=a=b"}, `{"e":"","eq":"a=b","msg":"hello world","s":"5","sha":"007"}`},
		{`{"a":1,"b":{"c":2}}`, []string{"a=x"}, `{"a":"x","b":{"c":2}}`},
	}
	for _, tt := range tests {
		got, err := buildParams(tt.json, tt.pairs)
		if err != nil || string(got) != tt.want {
			t.Errorf("buildParams(%q, %q) = %s, %v; want %s", tt.json, tt.pairs, got, err, tt.want)
		}
	}
	for _, bad := range []struct {
		json  string
		pairs []string
	}{{"[1]", nil}, {"null", nil}, {"{", nil}, {"", []string{"novalue"}}, {"", []string{"=5"}}} {
		if _, err := buildParams(bad.json, bad.pairs); err == nil {
			t.Errorf("buildParams(%q, %q): no error", bad.json, bad.pairs)
		}
	}
}

func TestMailRead(t *testing.T) {
	f := newCLIFixture(t, httpapi.Options{})
	ctx := context.Background()
	w := decodeJSON[api.Watch](t, f.mustVigil(t, "watch", "add", "ci", "--for", "agent-1", "--json"))
	f.sched.Tick(ctx, f.now)
	mb := decodeJSON[api.Mailbox](t, f.mustVigil(t, "mail", "read", "agent-1", "--json"))
	if len(mb.Messages) != 1 || mb.Next != 1 || mb.Messages[0].WatchID != w.ID || mb.Messages[0].Outcome.Result != "success" {
		t.Fatalf("%+v", mb)
	}
	out, errOut, err := f.vigil(t, "mail", "read", "agent-1")
	if err != nil || !strings.HasPrefix(out, "SEQ ") || !strings.Contains(out, w.ID) || !strings.Contains(out, "fired") || !strings.Contains(errOut, "next: --after 1") {
		t.Fatalf("%v\n%s\n%s", err, out, errOut)
	}
	if mb = decodeJSON[api.Mailbox](t, f.mustVigil(t, "mail", "read", "agent-1", "--after", "1", "--json")); len(mb.Messages) != 0 || mb.Next != 1 {
		t.Fatalf("after 1: %+v", mb)
	}

	// A long poll: held until the next message lands.
	done := make(chan string, 1)
	go func() {
		out, _, _ := f.vigil(t, "mail", "read", "agent-1", "--after", "1", "--wait", "30s", "--json")
		done <- out
	}()
	<-f.mail.began("agent-1")
	w2 := decodeJSON[api.Watch](t, f.mustVigil(t, "watch", "add", "ci", "--for", "agent-1", "--json"))
	f.sched.Tick(ctx, f.now)
	mb = decodeJSON[api.Mailbox](t, <-done)
	if len(mb.Messages) != 1 || mb.Next != 2 || mb.Messages[0].WatchID != w2.ID {
		t.Fatalf("long poll: %+v", mb)
	}

	_, _, err = f.vigil(t, "mail", "read", "agent-1", "--wait", "2m")
	if err == nil || err.Error() != "invalid_field: want a duration from 0s to 60s (field: wait)" {
		t.Fatalf("--wait 2m: %v", err)
	}
	_, _, err = f.vigil(t, "mail", "read", "nobody")
	if err == nil || !strings.HasPrefix(err.Error(), "not_found: ") {
		t.Fatalf("unknown recipient: %v", err)
	}
}

// --follow prints each message as it lands and ends cleanly when
// interrupted. (Its own fixture, and nothing else asks the server while
// the stream is open: see the stream's recipient id bug in the report.)
func TestMailFollow(t *testing.T) {
	f := newCLIFixture(t, httpapi.Options{})
	ctx := context.Background()
	first := decodeJSON[api.Watch](t, f.mustVigil(t, "watch", "add", "ci", "--for", "agent-1", "--json"))
	f.sched.Tick(ctx, f.now)

	second, err := f.sched.Register(ctx, scheduler.Registration{Kind: "ci", Params: json.RawMessage(`{"result":"failed"}`), Recipient: store.Recipient{ID: "agent-1"}})
	if err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := &signalWriter{want: second.ID.String(), ready: make(chan struct{})}
	root := newRoot(out, &bytes.Buffer{})
	root.SetArgs([]string{"mail", "read", "agent-1", "--follow", "--after", "1", "--json", "--server", f.url})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(fctx) }()
	f.sched.Tick(ctx, f.now) // lands whether or not the stream is up yet: it reads from seq 1
	select {
	case <-out.ready:
	case err := <-done:
		t.Fatalf("--follow returned: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("interrupted --follow: %v", err)
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(out.buf.String()), "\n")
	m := decodeJSON[api.Message](t, lines[0])
	if len(lines) != 1 || m.Seq != 2 || m.Outcome.Result != "failed" || strings.Contains(out.buf.String(), first.ID) {
		t.Fatalf("output:\n%s", out.buf.String())
	}
}

func TestRecipientSetShow(t *testing.T) {
	f := newCLIFixture(t, httpapi.Options{})
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	out := f.mustVigil(t, "recipient", "set", "agent-1", "--status", "running", "--webhook", "https://hooks.example.org/vigil", "--secret", secret)
	if !strings.Contains(out, "https://hooks.example.org/vigil") || !strings.Contains(out, "running") || strings.Contains(out, "whsec_") {
		t.Fatalf("set:\n%s", out)
	}
	r := decodeJSON[api.Recipient](t, f.mustVigil(t, "recipient", "show", "agent-1", "--json"))
	if r.ID != "agent-1" || r.Status != "running" || r.Webhook == nil || r.Webhook.URL != "https://hooks.example.org/vigil" {
		t.Fatalf("show: %+v", r)
	}
	if out = f.mustVigil(t, "recipient", "show", "agent-1"); !strings.Contains(out, "webhook") || strings.Contains(out, "whsec_") {
		t.Fatalf("show:\n%s", out)
	}
	// A set that would silently drop the webhook is refused.
	_, _, err := f.vigil(t, "recipient", "set", "agent-1", "--status", "paused")
	if err == nil || !strings.Contains(err.Error(), "--remove-webhook") {
		t.Fatalf("paused without the webhook: %v", err)
	}
	r = decodeJSON[api.Recipient](t, f.mustVigil(t, "recipient", "set", "agent-1", "--status", "paused", "--remove-webhook", "--json"))
	if r.Status != "paused" || r.Webhook != nil {
		t.Fatalf("paused: %+v", r)
	}
	t.Setenv("VIGIL_WEBHOOK_SECRET", secret)
	r = decodeJSON[api.Recipient](t, f.mustVigil(t, "recipient", "set", "agent-2", "--status", "stopped", "--webhook", "https://hooks.example.org/2", "--json"))
	if r.Status != "stopped" || r.Webhook == nil {
		t.Fatalf("secret from the environment: %+v", r)
	}
	_, _, err = f.vigil(t, "recipient", "set", "agent-1", "--status", "asleep")
	if err == nil || err.Error() != "invalid_field: want running, paused or stopped (field: status)" {
		t.Fatalf("asleep: %v", err)
	}
	_, _, err = f.vigil(t, "recipient", "show", "nobody")
	if err == nil || !strings.HasPrefix(err.Error(), "not_found: ") {
		t.Fatalf("unknown: %v", err)
	}
}

// The phase, activity and reminder commands report through the API and
// show on the recipient; their refusals name the field.
func TestRecipientPhaseActivityReminder(t *testing.T) {
	f := newCLIFixture(t, httpapi.Options{})
	f.mustVigil(t, "recipient", "set", "agent-1", "--status", "running")
	out := f.mustVigil(t, "recipient", "phase", "agent-1", "build", "--text", "the parser")
	if !strings.Contains(out, "build (by local") || !strings.Contains(out, "the parser") || strings.Contains(out, "seeded") {
		t.Fatalf("phase:\n%s", out)
	}
	a := decodeJSON[api.Activity](t, f.mustVigil(t, "recipient", "activity", "agent-1", "--replies", "2", "--tool-calls", "3", "--json"))
	if a.Replies != 2 || a.ToolCalls != 3 {
		t.Fatalf("activity: %+v", a)
	}
	out = f.mustVigil(t, "recipient", "show", "agent-1")
	if !strings.Contains(out, "phase") || !strings.Contains(out, "2 replies, 3 tool calls") {
		t.Fatalf("show:\n%s", out)
	}
	// This server's kinds have no reminder; "off" always works.
	_, _, err := f.vigil(t, "recipient", "reminder", "agent-1", "10m")
	if err == nil || !strings.HasPrefix(err.Error(), "watch_unobservable: ") {
		t.Fatalf("reminder: %v", err)
	}
	if out := f.mustVigil(t, "recipient", "reminder", "agent-1", "off"); !strings.Contains(out, "off") {
		t.Fatalf("off:\n%s", out)
	}
	for _, args := range [][]string{
		{"recipient", "reminder", "agent-1", "soon"},
		{"recipient", "phase", "agent-1", "Build"},
		{"recipient", "activity", "agent-1", "--replies", "-1"},
	} {
		if _, _, err := f.vigil(t, args...); err == nil {
			t.Errorf("vigil %v: no error", args)
		}
	}
	_, _, err = f.vigil(t, "recipient", "phase", "agent-1", "Build")
	if err == nil || !strings.Contains(err.Error(), "(field: name)") {
		t.Fatalf("bad name: %v", err)
	}
}

// A refusal prints as `vigil: <code>: <message> (field: …)` and exits
// with the usage code: the request was the caller's mistake.
func TestErrorOutput(t *testing.T) {
	f := newCLIFixture(t, httpapi.Options{})
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"watch", "add", "ci", "--param", "bad=true", "--for", "agent-1"}, "vigil: invalid_params: bad (field: params.bad)"},
		{[]string{"watch", "add", "gitlab", "--for", "agent-1"}, "vigil: watch_unobservable: no plugin serves gitlab (setting: kinds.gitlab.wasm)"},
		{[]string{"watch", "add", "ci", "--for", "a/b"}, "vigil: invalid_recipient: " + store.RecipientIDGrammar + " (field: recipient.id)"},
		{[]string{"watch", "ls", "--state", "done"}, "vigil: invalid_field: want pending, fired, expired, cancelled, undeliverable or unwatchable (field: state)"},
	}
	for _, tt := range tests {
		_, _, err := f.vigil(t, tt.args...)
		var ae *api.Error
		if err == nil || "vigil: "+err.Error() != tt.want || exitCodeOf(err) != ExitUsage || !errors.As(err, &ae) {
			t.Errorf("vigil %s: %v\nwant %s", strings.Join(tt.args, " "), err, tt.want)
		}
	}
}

func TestPluginLsAndReload(t *testing.T) {
	f := newCLIFixture(t, httpapi.Options{})
	out := f.mustVigil(t, "plugin", "ls")
	ciSum := fmt.Sprintf("%x", sha256.Sum256([]byte("ci")))
	// The table shows the short SHA-256 and the source; --json the full
	// SHA-256.
	if !strings.HasPrefix(out, "KIND ") || !strings.Contains(out, "slow") || !strings.Contains(out, "ci.wasm") ||
		!strings.Contains(out, "SHA256") || !strings.Contains(out, " "+ciSum[:12]+" ") || strings.Contains(out, ciSum) || !strings.Contains(out, "bundled") {
		t.Fatalf("ls:\n%s", out)
	}
	pl := decodeJSON[api.PluginList](t, f.mustVigil(t, "plugin", "reload", "--json"))
	if len(pl.Plugins) != 3 || pl.Plugins[0].Kind != "ci" || pl.Plugins[0].SHA256 != ciSum || pl.Plugins[0].Source != "bundled" {
		t.Fatalf("reload: %+v", pl)
	}
}

// --server and --token default to VIGIL_SERVER and VIGIL_TOKEN; a server
// that does not answer is named.
func TestClientFlagsFromTheEnvironment(t *testing.T) {
	f := newCLIFixture(t, httpapi.Options{Auth: authztest.Guard(t, map[string]string{"s3cret-token-for-ci-bot": "ci-bot"}, authz.Admin)})
	t.Setenv("VIGIL_SERVER", f.url)
	t.Setenv("VIGIL_TOKEN", "s3cret-token-for-ci-bot")
	ctx := context.Background()
	if out, _, err := run(t, ctx, "plugin", "ls"); err != nil || !strings.Contains(out, "slow") {
		t.Fatalf("from the environment: %v\n%s", err, out)
	}
	if _, _, err := run(t, ctx, "watch", "ls", "--token", "wrong"); err == nil || !strings.HasPrefix(err.Error(), "unauthorized: ") {
		t.Fatalf("--token wrong: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	if _, _, err := run(t, ctx, "watch", "ls", "--server", closed); err == nil || !strings.Contains(err.Error(), "is vigil serve running") || !strings.Contains(err.Error(), closed) {
		t.Fatalf("no server: %v", err)
	}
}

// watch show answers "why is this still pending?": the probes so far, the
// last probe's time, its note and its fault.
func TestWatchShowSaysWhatAPendingWatchHasSeen(t *testing.T) {
	last := time.Date(2026, 12, 1, 18, 30, 5, 0, time.UTC)
	var b strings.Builder
	err := printWatch(&b, api.Watch{ID: "01m8nhtng4ra8tgz0tmrscbt6g", Kind: "ci", State: "pending", Receipt: "none", Every: "30s",
		Attempts: 7, LastProbeAt: &last, LastNote: "run 7 in progress", LastFault: &api.Fault{Reason: "timeout", Message: "observe ran past 5s"}})
	if err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"attempts    7", "last probe  2026-12-01T18:30:05Z", "note        run 7 in progress", "fault       timeout: observe ran past 5s"} {
		if !strings.Contains(out, want) {
			t.Fatalf("show lacks %q:\n%s", want, out)
		}
	}
}

// The CLI only passes the token: what the grant refuses is the server's
// 403, named, and an orchestrator lists what it registered.
func TestCLIUnderGrants(t *testing.T) {
	policy, err := authz.Compile([]authz.Token{
		{Principal: "orch", Token: "token-of-the-orchestrator", Grant: authz.Grant{Roles: []authz.Role{authz.Orchestrator}}},
		{Principal: "agent-2", Token: "token-of-agent-2-000000"},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := newCLIFixture(t, httpapi.Options{Auth: authz.NewGuard(policy)})
	w := decodeJSON[api.Watch](t, f.mustVigil(t, "watch", "add", "slow", "--for", "agent-1", "--json", "--token", "token-of-the-orchestrator"))
	if w.RegisteredBy != "orch" || w.Recipient.ID != "agent-1" {
		t.Fatalf("%+v", w)
	}
	if out := f.mustVigil(t, "watch", "show", w.ID, "--token", "token-of-the-orchestrator"); !strings.Contains(out, "registered by") || !strings.Contains(out, "orch") {
		t.Fatalf("show: %s", out)
	}
	list := decodeJSON[api.WatchList](t, f.mustVigil(t, "watch", "ls", "--registered-by", "orch", "--json", "--token", "token-of-the-orchestrator"))
	if len(list.Watches) != 1 || list.Watches[0].ID != w.ID {
		t.Fatalf("ls --registered-by: %+v", list)
	}
	_, _, err = f.vigil(t, "watch", "ls", "--for", "agent-1", "--token", "token-of-the-orchestrator")
	if err == nil || !strings.HasPrefix(err.Error(), "forbidden: ") || !strings.Contains(err.Error(), "principal orch may not read recipient agent-1") {
		t.Fatalf("ls --for another's recipient: %v", err)
	}
	_, _, err = f.vigil(t, "watch", "cancel", w.ID, "--token", "token-of-agent-2-000000")
	if err == nil || !strings.HasPrefix(err.Error(), "not_found: ") {
		t.Fatalf("cancel of a watch agent-2 may not see: %v", err)
	}
}
