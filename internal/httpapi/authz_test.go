package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/authz"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/heartbeat"
	"github.com/vigilhq/vigil/internal/hooks"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/observe"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/internal/signal"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// The principals of the grants table, in its columns' order.
var grantPrincipals = []struct {
	name, token string
}{
	{"own", "token-of-agent-1-000000"},     // acts for agent-1, works scope support
	{"other", "token-of-agent-2-000000"},   // acts for agent-2
	{"orch", "token-of-the-orchestrator"},  // orchestrator for agent-*
	{"ops", "token-of-the-operator-0000"},  // operator
	{"admin", "token-of-the-admin-000000"}, // admin
	{"none", ""},
	{"wrong", "token-nobody-was-given-0"},
}

func grantTokens() []authz.Token {
	return []authz.Token{
		{Principal: "agent-1", Token: grantPrincipals[0].token, Grant: authz.Grant{Scopes: []string{"support"}}},
		{Principal: "agent-2", Token: grantPrincipals[1].token},
		{Principal: "orch", Token: grantPrincipals[2].token, Grant: authz.Grant{Roles: []authz.Role{authz.Orchestrator}, RegisterFor: []string{"agent-*"}}},
		{Principal: "ops", Token: grantPrincipals[3].token, Grant: authz.Grant{Roles: []authz.Role{authz.Operator}}},
		{Principal: "root", Token: grantPrincipals[4].token, Grant: authz.Grant{Roles: []authz.Role{authz.Admin}}},
	}
}

// recordedRefusals is a Refusals that keeps what it counted.
type recordedRefusals struct {
	mu  sync.Mutex
	got []string // "route code"
}

func (r *recordedRefusals) Refused(route, code string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, route+" "+code)
}

func (r *recordedRefusals) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// countingPlugins counts reloads.
type countingPlugins struct {
	apitest.FakePlugins
	reloads *atomic.Int32
}

func (p countingPlugins) Reload(ctx context.Context) (plugin.Report, error) {
	p.reloads.Add(1)
	return p.FakePlugins.Reload(ctx)
}

// grantsSignalToken is the capability token of the grants fixture's
// signal.
const grantsSignalToken = "c2lnbmFsLXRva2VuLWEtMQ"

// grantsPingToken is the ping token of the grants fixture's heartbeat.
const grantsPingToken = "aGVhcnRiZWF0LXRvay0wMQ"

// grantsFixture is a server with the grants table's tokens over a store
// seeded with two recipients' watches, a mailbox message and two Work
// items (one claimed by agent-1).
type grantsFixture struct {
	app      *fiber.App
	st       *store.Store
	sched    *scheduler.Scheduler
	reloads  *atomic.Int32
	refusals *recordedRefusals
	logs     *bytes.Buffer
	ids      map[string]string // {w1} {w2} {w3} {workA} {workB}
	ob       *observe.Observer
}

func newGrantsFixture(t *testing.T, base context.Context) *grantsFixture {
	t.Helper()
	ctx := context.Background()
	// The fake plugins' kinds and the observer's observe.thread, in one
	// registry, as serve serves them.
	reg := kind.NewRegistry()
	for _, name := range []string{"ci", "ticket"} {
		k, _ := kind.Of(kindsAsMulti{fakePlugins()}, name)
		if err := reg.Register("plugins", k); err != nil {
			t.Fatal(err)
		}
	}
	if err := (signal.Kind{}).Register(reg); err != nil {
		t.Fatal(err)
	}
	st := apitest.NewStack(t, apitest.Config{Plugins: reg, Clock: fakeclock.At(t0)})
	if err := heartbeat.New(st.Store).Register(reg); err != nil {
		t.Fatal(err)
	}
	ob, err := observe.New(observe.Options{Store: st.Store, Clock: fakeclock.At(t0), Waker: st.Scheduler, Rate: -1}, observe.Config{Scopes: map[string]observe.Scope{
		"support": {Observe: []observe.Entry{{Sources: []observe.Source{{Name: "slack-help", Reporters: []string{"agent-1"}}}}}, Routes: []observe.Route{{Source: "slack-help"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ob.Register(reg); err != nil {
		t.Fatal(err)
	}
	f := &grantsFixture{st: st.Store, sched: st.Scheduler, reloads: &atomic.Int32{}, refusals: &recordedRefusals{}, logs: &bytes.Buffer{}, ids: map[string]string{}, ob: ob}
	hour := time.Hour
	register := func(key, recipient, by string) {
		w, err := st.Scheduler.Register(ctx, scheduler.Registration{Kind: "ci", Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: recipient}, RegisteredBy: by, Every: &hour})
		if err != nil {
			t.Fatal(err)
		}
		if key != "" {
			f.ids[key] = w.ID.String()
		}
	}
	register("", "agent-1", "agent-1")
	st.Scheduler.Tick(ctx, t0) // settles it: a message in agent-1's mailbox
	register("{w1}", "agent-1", "agent-1")
	register("{w2}", "agent-1", "orch")
	register("{w3}", "agent-2", "agent-2")
	// A heartbeat of agent-1's, whose ping URL's token the table names
	// {ping}.
	f.ids["{ping}"] = grantsPingToken
	rec, err := st.Store.GetRecipient(ctx, "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	rec.Heartbeats = []store.Heartbeat{{Name: "job", Period: store.Duration(time.Minute), Grace: store.Duration(time.Second), Token: grantsPingToken}}
	if _, _, err := st.Store.PutRecipient(ctx, rec); err != nil {
		t.Fatal(err)
	}
	// A signal of agent-1's, whose URL's token the table names {sig}.
	f.ids["{sig}"] = grantsSignalToken
	if _, err := st.Scheduler.Register(ctx, scheduler.Registration{Kind: signal.Name, Params: json.RawMessage(`{"title":"Ship it?"}`),
		Recipient: store.Recipient{ID: "agent-1"}, RegisteredBy: "agent-1", Token: grantsSignalToken}); err != nil {
		t.Fatal(err)
	}
	for _, thread := range []string{"TA", "TB"} {
		if _, err := ob.Record(ctx, "agent-1", "support", observe.Record{Item: "m-" + thread, Thread: thread, Text: "help"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ob.RouteAll(ctx); err != nil {
		t.Fatal(err)
	}
	work, err := st.Store.ListWork(ctx, "support", "")
	if err != nil || len(work) != 2 {
		t.Fatalf("work %v %v", work, err)
	}
	f.ids["{workA}"], f.ids["{workB}"] = work[0].ID.String(), work[1].ID.String()
	if _, _, err := ob.ClaimWork(ctx, work[1].ID, "agent-1"); err != nil {
		t.Fatal(err)
	}
	policy, err := authz.Compile(grantTokens())
	if err != nil {
		t.Fatal(err)
	}
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = io.WriteString(w, "# vigil\n")
	})
	f.app = New(Deps{
		Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients,
		Plugins: countingPlugins{FakePlugins: fakePlugins(), reloads: f.reloads}, DeadLetters: fakeDeadLetters{}, Observe: ob, Base: base,
		Refusals: f.refusals, Logger: slog.New(slog.NewTextHandler(f.logs, nil)), Overview: fakeOverview{}, Node: fakeNode{},
		Signals:    signal.NewService(st.Store, st.Scheduler),
		Heartbeats: heartbeat.NewService(st.Store, st.Scheduler, fakeclock.At(t0)),
		Hooks: hooks.NewReceiver(hooks.ReceiverConfig{
			Sources: hooks.NewSources(hooks.Config{"github": {Kind: "ci", Scheme: abi.SourceGitHub, Secret: hookSecret}}),
			Wake:    noWake{}, Poke: noWake{},
		}),
	}, Options{Auth: authz.NewGuard(policy), Metrics: metrics, StreamWait: 50 * time.Millisecond})
	return f
}

// state is everything a request could change, read from the store
// itself: every watch row, every recipient record, the mailboxes, the
// observed events, the Work and its inputs, and the plugin reloads.
func (f *grantsFixture) state(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	ws, _, err := f.st.List(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := f.st.ListRecipients(ctx)
	if err != nil {
		t.Fatal(err)
	}
	events, err := f.st.ReadEvents(ctx, observe.Stream, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	work, err := f.st.ListWork(ctx, "support", "")
	if err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(&b)
	for _, v := range []any{ws, recs, events, work, f.reloads.Load()} {
		_ = enc.Encode(v)
	}
	for _, r := range recs {
		msgs, err := f.st.ReadMailbox(ctx, r.ID, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		_ = enc.Encode(msgs)
	}
	for _, w := range work {
		in, err := f.st.WorkInputs(ctx, w.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		_ = enc.Encode(in)
	}
	return b.String()
}

func (f *grantsFixture) path(p string) string {
	for k, v := range f.ids {
		p = strings.ReplaceAll(p, k, v)
	}
	return p
}

func (f *grantsFixture) send(t *testing.T, method, path, body, token string) (*http.Response, []byte) {
	t.Helper()
	return call(t, f.app, token, method, f.path(path), f.path(body))
}

// Every route in the OpenAPI document, for every kind of principal: the
// status the grants give, a refused request that changed nothing and was
// counted and logged as a refusal, and an answer the document describes
// (so every route that can refuse lists 403 forbidden).
func TestGrantsOnEveryRoute(t *testing.T) {
	doc, _ := openAPI(t)
	compiler := openAPICompiler(t)
	// Columns: own (agent-1), other (agent-2), orch, ops, admin, no token, wrong token.
	rows := []struct {
		method, path, body string
		want               [7]int
	}{
		{"GET", "/healthz", "", [7]int{200, 200, 200, 200, 200, 200, 200}},
		{"GET", "/metrics", "", [7]int{403, 403, 403, 200, 200, 401, 401}},
		{"GET", "/api/v1/openapi.yaml", "", [7]int{200, 200, 200, 200, 200, 401, 401}},
		{"GET", "/api/v1/plugins", "", [7]int{200, 200, 200, 200, 200, 401, 401}},
		{"GET", "/api/v1/kinds", "", [7]int{200, 200, 200, 200, 200, 401, 401}},
		{"POST", "/api/v1/plugins/reload", "", [7]int{403, 403, 403, 403, 200, 401, 401}},
		{"POST", "/api/v1/watches", `{"kind":"ci","params":{},"recipient":{"id":"agent-1"}}`, [7]int{201, 403, 201, 403, 201, 401, 401}},
		{"POST", "/api/v1/watches", `{"kind":"ci","params":{},"recipient":{"id":"boss"}}`, [7]int{403, 403, 403, 403, 201, 401, 401}},
		// observe.thread names a Work: admitted only for a principal that
		// may read it (GET /api/v1/work/{id}'s rule), whatever recipient it
		// may register for; one it may not read is 404, as an unknown id.
		{"POST", "/api/v1/watches", `{"kind":"observe.thread","params":{"work_id":"{workA}","after":0},"recipient":{"id":"agent-1"}}`, [7]int{201, 403, 404, 403, 201, 401, 401}},
		{"POST", "/api/v1/watches", `{"kind":"observe.thread","params":{"work_id":"{workA}","after":0},"recipient":{"id":"agent-2"}}`, [7]int{403, 404, 404, 403, 201, 401, 401}},
		{"POST", "/api/v1/watches", `{"kind":"observe.thread","params":{"work_id":"{workA}"},"recipient":{"id":"ops"}}`, [7]int{403, 403, 403, 201, 201, 401, 401}},
		{"POST", "/api/v1/watches", `{"kind":"observe.thread","params":{"work_id":"{workB}"},"recipient":{"id":"agent-1"}}`, [7]int{201, 403, 404, 403, 201, 401, 401}},
		{"POST", "/api/v1/watches", `{"kind":"observe.thread","params":{"work_id":"{workB}"},"recipient":{"id":"orch"}}`, [7]int{403, 403, 404, 403, 201, 401, 401}},
		// Who may register a signal for whom: as any watch. Its URL needs
		// no bearer token, by design (the token in the path is the
		// capability): any principal, none, and a wrong one alike.
		{"POST", "/api/v1/watches", `{"kind":"signal","params":{"title":"Deploy?"},"recipient":{"id":"agent-1"}}`, [7]int{201, 403, 201, 403, 201, 401, 401}},
		{"POST", "/api/v1/watches", `{"kind":"signal","params":{"title":"Deploy?"},"recipient":{"id":"boss"}}`, [7]int{403, 403, 403, 403, 201, 401, 401}},
		{"GET", "/api/v1/signals/{sig}", "", [7]int{200, 200, 200, 200, 200, 200, 200}},
		{"POST", "/api/v1/signals/{sig}", `{"outcome":"approve"}`, [7]int{200, 200, 200, 200, 200, 200, 200}},
		{"POST", "/api/v1/signals/AAAAAAAAAAAAAAAAAAAAAA", `{"outcome":"approve"}`, [7]int{404, 404, 404, 404, 404, 404, 404}},
		// A heartbeat's ping URL needs no bearer token either; declaring
		// heartbeats is putting the recipient (acting for it).
		{"POST", "/api/v1/heartbeats/{ping}", "ran", [7]int{200, 200, 200, 200, 200, 200, 200}},
		{"POST", "/api/v1/heartbeats/{ping}/fail", "disk full", [7]int{200, 200, 200, 200, 200, 200, 200}},
		{"POST", "/api/v1/heartbeats/AAAAAAAAAAAAAAAAAAAAAA", "", [7]int{404, 404, 404, 404, 404, 404, 404}},
		{"PUT", "/api/v1/recipients/agent-1", `{"status":"running","heartbeats":[{"name":"job","period":"1m","grace":"1s"}]}`, [7]int{200, 403, 403, 403, 200, 401, 401}},
		// A hook's credential is its signature, never a bearer token: no
		// principal's token takes an unsigned hook (TestHookRoute signs).
		{"POST", "/api/v1/hooks/github", `{"action":"completed"}`, [7]int{401, 401, 401, 401, 401, 401, 401}},
		{"GET", "/api/v1/watches", "", [7]int{200, 200, 200, 200, 200, 401, 401}},
		{"GET", "/api/v1/watches?recipient=agent-1", "", [7]int{200, 403, 403, 200, 200, 401, 401}},
		{"GET", "/api/v1/watches?registered_by=orch", "", [7]int{403, 403, 200, 200, 200, 401, 401}},
		{"GET", "/api/v1/watches/{w1}", "", [7]int{200, 404, 404, 200, 200, 401, 401}},
		{"GET", "/api/v1/watches/{w2}", "", [7]int{200, 404, 200, 200, 200, 401, 401}},
		{"GET", "/api/v1/watches/{w1}?wait=0s", "", [7]int{200, 404, 404, 200, 200, 401, 401}},
		{"GET", "/api/v1/watches/{w2}?wait=0s&since=v", "", [7]int{200, 404, 200, 200, 200, 401, 401}},
		{"DELETE", "/api/v1/watches/{w1}", "", [7]int{200, 404, 404, 403, 200, 401, 401}},
		{"DELETE", "/api/v1/watches/{w2}", "", [7]int{200, 404, 200, 403, 200, 401, 401}},
		{"PUT", "/api/v1/recipients/agent-1", `{"status":"paused"}`, [7]int{200, 403, 403, 403, 200, 401, 401}},
		{"GET", "/api/v1/recipients/agent-1", "", [7]int{200, 403, 403, 200, 200, 401, 401}},
		{"DELETE", "/api/v1/recipients/agent-1", "", [7]int{204, 403, 403, 403, 204, 401, 401}},
		{"PUT", "/api/v1/recipients/agent-1/phase", `{"name":"build"}`, [7]int{200, 403, 403, 403, 200, 401, 401}},
		{"POST", "/api/v1/recipients/agent-1/activity", `{"replies":3,"tool_calls":5}`, [7]int{200, 403, 403, 403, 200, 401, 401}},
		{"PUT", "/api/v1/recipients/agent-1/reminder", `{"every":"10m"}`, [7]int{422, 403, 403, 403, 422, 401, 401}}, // no reminder kind in this fixture
		{"DELETE", "/api/v1/recipients/agent-1/reminder", "", [7]int{204, 403, 403, 403, 204, 401, 401}},
		{"GET", "/api/v1/recipients/agent-1/mailbox", "", [7]int{200, 403, 403, 200, 200, 401, 401}},
		{"GET", "/api/v1/recipients/agent-1/mailbox/stream", "", [7]int{200, 403, 403, 200, 200, 401, 401}},
		{"GET", "/api/v1/fetch/dead-letters", "", [7]int{403, 403, 403, 403, 200, 401, 401}},
		{"GET", "/api/v1/overview", "", [7]int{403, 403, 403, 200, 200, 401, 401}},
		{"GET", "/api/v1/cluster", "", [7]int{403, 403, 403, 200, 200, 401, 401}},
		{"GET", "/api/v1/recipients", "", [7]int{200, 200, 200, 200, 200, 401, 401}},
		{"GET", "/api/v1/plugins/ci", "", [7]int{200, 200, 200, 200, 200, 401, 401}},
		{"GET", "/api/v1/scopes", "", [7]int{200, 200, 200, 200, 200, 401, 401}},
		{"POST", "/api/v1/scopes/support/observe", `{"item":"n1","thread":"TN"}`, [7]int{201, 403, 403, 403, 403, 401, 401}},
		{"GET", "/api/v1/scopes/support/work", "", [7]int{200, 403, 403, 200, 200, 401, 401}},
		{"GET", "/api/v1/work/{workA}", "", [7]int{200, 404, 404, 200, 200, 401, 401}},
		{"GET", "/api/v1/work/{workB}", "", [7]int{200, 404, 404, 200, 200, 401, 401}},
		{"POST", "/api/v1/work/{workA}/claim", `{"recipient":{"id":"agent-1"}}`, [7]int{200, 404, 404, 403, 200, 401, 401}},
		{"POST", "/api/v1/work/{workA}/claim", `{"recipient":{"id":"agent-2"}}`, [7]int{403, 404, 404, 403, 200, 401, 401}},
		{"POST", "/api/v1/work/{workB}/complete", "", [7]int{200, 404, 404, 403, 200, 401, 401}},
		{"POST", "/api/v1/work/{workA}/complete", "", [7]int{200, 404, 404, 403, 200, 401, 401}}, // unclaimed: the scope's
	}

	// The table covers every documented operation.
	covered := map[string]bool{}
	for _, r := range rows {
		tmpl, op := operation(doc, r.method, strings.Split(r.path, "?")[0])
		if op == nil {
			t.Fatalf("%s %s: no documented operation", r.method, r.path)
		}
		covered[r.method+" "+tmpl] = true
	}
	for p, item := range obj(doc["paths"]) {
		if p == MCPPath {
			// The MCP transport: authenticated as /api/v1 is
			// (TestMCPHTTPAuth), and each tool call is one of the routes
			// here, under the caller's own token.
			continue
		}
		for _, m := range openAPIMethods {
			if _, ok := obj(item)[m]; ok && !covered[strings.ToUpper(m)+" "+p] {
				t.Errorf("the grants table has no row for %s %s", strings.ToUpper(m), p)
			}
		}
	}

	// A stream answers 200 and ends at once when the server's base
	// context has ended; every other row runs on a live one.
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	var f *grantsFixture
	fresh := true
	for _, r := range rows {
		for i, p := range grantPrincipals {
			where := fmt.Sprintf("%s %s as %s", r.method, r.path, p.name)
			if fresh || strings.HasSuffix(r.path, "/stream") {
				base := context.Background()
				if strings.HasSuffix(r.path, "/stream") {
					base = ended
				}
				f, fresh = newGrantsFixture(t, base), false
			}
			before, counted := f.state(t), len(f.refusals.all())
			resp, b := f.send(t, r.method, r.path, r.body, p.token)
			if resp.StatusCode != r.want[i] {
				t.Errorf("%s: %d, want %d: %s", where, resp.StatusCode, r.want[i], b)
				fresh = true
				continue
			}
			if msg := conforms(doc, compiler, r.method, f.path(r.path), resp, b); msg != "" {
				t.Errorf("%s: %s", where, msg)
			}
			refused := resp.StatusCode == 401 || resp.StatusCode == 403 || resp.StatusCode == 404
			got := f.refusals.all()[counted:]
			switch {
			case refused && len(got) != 1:
				t.Errorf("%s: refused, and counted %v", where, got)
			case !refused && len(got) != 0:
				t.Errorf("%s: answered %d, and counted as refused %v", where, resp.StatusCode, got)
			}
			if refused {
				if after := f.state(t); after != before {
					t.Errorf("%s: a refused request changed the store:\nbefore %s\nafter  %s", where, before, after)
				}
				if resp.StatusCode == 403 && !strings.Contains(string(b), "may not") && !strings.Contains(string(b), "reports no source") {
					t.Errorf("%s: a 403 that does not say what is missing: %s", where, b)
				}
			}
			if r.method != "GET" && resp.StatusCode < 300 {
				fresh = true // the next principal starts from the seeded state
			}
		}
	}
	for _, p := range grantPrincipals {
		if p.token != "" && strings.Contains(f.logs.String(), p.token) {
			t.Errorf("the log holds %s's token", p.name)
		}
	}
}

// Acting for a Work item's claimer shows it, but claiming it again (which
// hands over its inputs anew) needs the scope too.
func TestClaimNeedsTheScope(t *testing.T) {
	f := newGrantsFixture(t, context.Background())
	policy, err := authz.Compile(append(grantTokens(), authz.Token{Principal: "helper", Token: "token-of-a-helper-of-agent-1", Grant: authz.Grant{Recipients: []string{"agent-1"}}}))
	if err != nil {
		t.Fatal(err)
	}
	f.app = New(Deps{Watches: f.st, Observe: f.ob, Scheduler: nil, Recipients: nil, Mailboxes: nil, Plugins: fakePlugins()}, Options{Auth: authz.NewGuard(policy)})
	if resp, b := f.send(t, "GET", "/api/v1/work/{workB}", "", "token-of-a-helper-of-agent-1"); resp.StatusCode != 200 {
		t.Fatalf("show: %d %s", resp.StatusCode, b)
	}
	before := f.state(t)
	resp, b := f.send(t, "POST", "/api/v1/work/{workB}/claim", `{"recipient":{"id":"agent-1"}}`, "token-of-a-helper-of-agent-1")
	if resp.StatusCode != 403 || !strings.Contains(string(b), "scope support") || f.state(t) != before {
		t.Fatalf("claim without the scope: %d %s", resp.StatusCode, b)
	}
}

// A watch or Work item the principal may not see answers byte for byte as
// an unknown id does.
func TestHiddenIDsAnswerAsUnknown(t *testing.T) {
	f := newGrantsFixture(t, context.Background())
	other := grantPrincipals[1].token
	const unknown = "01m8nhtng4ra8tgz0tmrscbt6g"
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/api/v1/watches/{w1}", ""},
		{"DELETE", "/api/v1/watches/{w1}", ""},
		{"GET", "/api/v1/work/{workA}", ""},
		{"POST", "/api/v1/work/{workA}/claim", `{"recipient":{"id":"agent-2"}}`},
		{"POST", "/api/v1/work/{workB}/complete", ""},
	} {
		hidden, hb := f.send(t, c.method, c.path, c.body, other)
		id := f.path(c.path[strings.Index(c.path, "{") : strings.Index(c.path, "}")+1])
		none, nb := f.send(t, c.method, strings.Replace(f.path(c.path), id, unknown, 1), c.body, other)
		if hidden.StatusCode != 404 || none.StatusCode != 404 || string(bytes.ReplaceAll(hb, []byte(id), []byte(unknown))) != string(nb) {
			t.Errorf("%s %s: hidden %d %s, unknown %d %s", c.method, c.path, hidden.StatusCode, hb, none.StatusCode, nb)
		}
	}
	logs := f.logs.String()
	if !strings.Contains(logs, "hidden: principal agent-2 may not see watch") || !strings.Contains(logs, "route=\"GET /api/v1/watches/:id\"") {
		t.Errorf("the log does not say why the id was hidden: %s", logs)
	}
}

// A list without a filter holds only what the principal may see: its
// recipients' watches and those it registered.
func TestUnfilteredListShowsWhatThePrincipalMaySee(t *testing.T) {
	f := newGrantsFixture(t, context.Background())
	list := func(token string) []string {
		resp, b := f.send(t, "GET", "/api/v1/watches", "", token)
		var wl api.WatchList
		if err := json.Unmarshal(b, &wl); resp.StatusCode != 200 || err != nil {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		var out []string
		for _, w := range wl.Watches {
			out = append(out, w.Recipient.ID+"/"+w.RegisteredBy)
		}
		slices.Sort(out) // one clock instant: the ids' order is their random part's
		return out
	}
	for _, c := range []struct {
		who  int
		want []string
	}{
		{0, []string{"agent-1/agent-1", "agent-1/agent-1", "agent-1/agent-1", "agent-1/orch"}}, // the settled one, w1, the signal, w2
		{1, []string{"agent-2/agent-2"}},
		{2, []string{"agent-1/orch"}},
		{3, []string{"agent-1/agent-1", "agent-1/agent-1", "agent-1/agent-1", "agent-1/orch", "agent-2/agent-2"}},
	} {
		if got := list(grantPrincipals[c.who].token); !slices.Equal(got, c.want) {
			t.Errorf("%s sees %v, want %v", grantPrincipals[c.who].name, got, c.want)
		}
	}
	// What a principal registers records it.
	resp, b := f.send(t, "POST", "/api/v1/watches", `{"kind":"ci","params":{},"recipient":{"id":"agent-2"}}`, grantPrincipals[2].token)
	var w api.Watch
	if err := json.Unmarshal(b, &w); resp.StatusCode != 201 || err != nil || w.RegisteredBy != "orch" || w.Recipient.ID != "agent-2" {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}

// blockingMailboxes is a Mailboxes whose reads wait until their context
// ends, saying on entered when one begins.
type blockingMailboxes struct{ entered chan struct{} }

func (m blockingMailboxes) Read(ctx context.Context, _ string, _ uint64, _ int, _ time.Duration) ([]store.Message, error) {
	m.entered <- struct{}{}
	<-ctx.Done()
	return nil, nil
}

// A revoked token ends its long polls (401) and streams at once, and
// stops working; a token the reload kept goes on.
func TestRevocationEndsLongPollsAndStreams(t *testing.T) {
	st := apitest.NewStack(t, apitest.Config{Plugins: fakePlugins(), Clock: fakeclock.At(t0)})
	hour := time.Hour
	if _, err := st.Scheduler.Register(context.Background(), scheduler.Registration{Kind: "ci", Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: "agent-1"}, Every: &hour}); err != nil {
		t.Fatal(err)
	}
	policy, err := authz.Compile(grantTokens())
	if err != nil {
		t.Fatal(err)
	}
	guard := authz.NewGuard(policy)
	mb := blockingMailboxes{entered: make(chan struct{}, 4)}
	base, stop := context.WithCancel(context.Background())
	app := New(Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: mb, Recipients: st.Recipients, Plugins: fakePlugins(), Base: base}, Options{Auth: guard})
	url := apitest.Serve(t, app)
	t.Cleanup(stop) // before the server's shutdown: it ends the kept long poll
	// The bound only turns a missing guard into a failure instead of a
	// hang: with the guard, every wait below ends on an event.
	client := &http.Client{Timeout: 90 * time.Second}
	get := func(path, token string) *http.Response {
		req, _ := http.NewRequest("GET", url+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			t.Error(err) // from the test's goroutine or another: no Fatal
			return &http.Response{StatusCode: 0, Body: io.NopCloser(strings.NewReader(""))}
		}
		return resp
	}
	own, ops := grantPrincipals[0].token, grantPrincipals[3].token
	poll := make(chan *http.Response, 1)
	go func() { poll <- get("/api/v1/recipients/agent-1/mailbox?wait=60s", own) }()
	<-mb.entered
	stream := get("/api/v1/recipients/agent-1/mailbox/stream", own)
	defer stream.Body.Close()
	<-mb.entered
	kept := make(chan *http.Response, 1)
	go func() { kept <- get("/api/v1/recipients/agent-1/mailbox?wait=60s", ops) }()
	<-mb.entered
	changed := make(chan *http.Response, 1)
	go func() { changed <- get("/api/v1/recipients/agent-2/mailbox?wait=60s", grantPrincipals[1].token) }()
	<-mb.entered

	// The reload drops agent-1's token, widens agent-2's grant and keeps
	// the operator's as it was.
	tokens := slices.Delete(grantTokens(), 0, 1)
	tokens[0].Grant.Scopes = []string{"support"}
	next, err := authz.Compile(tokens)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := guard.Swap(next); err != nil || n != 2 {
		t.Fatalf("revoked %d %v", n, err)
	}
	// A changed grant's wait ends as one that ran out, and the token
	// goes on under its new grant.
	if r := <-changed; r.StatusCode != 200 {
		t.Fatalf("the changed grant's long poll: %d", r.StatusCode)
	}
	if r := get("/api/v1/plugins", grantPrincipals[1].token); r.StatusCode != 200 {
		t.Fatalf("the changed grant after the reload: %d", r.StatusCode)
	}
	resp := <-poll
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.Contains(string(b), "revoked") {
		t.Fatalf("the revoked long poll: %d %s", resp.StatusCode, b)
	}
	if _, err := io.Copy(io.Discard, bufio.NewReader(stream.Body)); err != nil { // EOF: the stream ended
		t.Fatalf("the revoked stream did not end cleanly: %v", err)
	}
	if r := get("/api/v1/plugins", own); r.StatusCode != 401 {
		t.Fatalf("the revoked token still works: %d", r.StatusCode)
	}
	select {
	case r := <-kept:
		t.Fatalf("the kept token's long poll ended: %d", r.StatusCode)
	default:
	}
	// A reload to no tokens at all is refused, and changes nothing.
	if _, err := guard.Swap(authz.Local()); err == nil {
		t.Fatal("a reload removed every token")
	}
	if r := get("/api/v1/plugins", ops); r.StatusCode != 200 {
		t.Fatalf("the kept token after a refused reload: %d", r.StatusCode)
	}
}

// A heartbeat's ping URL is on the recipient's view for a principal that
// may act for it, and no other: an operator reads the heartbeat, not its
// URL.
func TestPingURLShownToWhoActsForTheRecipient(t *testing.T) {
	f := newGrantsFixture(t, context.Background())
	for i, wantURL := range map[int]bool{0: true, 3: false, 4: true} {
		resp, b := f.send(t, "GET", "/api/v1/recipients/agent-1", "", grantPrincipals[i].token)
		var r api.Recipient
		if resp.StatusCode != 200 || json.Unmarshal(b, &r) != nil || len(r.Heartbeats) != 1 {
			t.Fatalf("%s: %d %s", grantPrincipals[i].name, resp.StatusCode, b)
		}
		if got := r.Heartbeats[0].PingURL != ""; got != wantURL || strings.Contains(string(b), grantsPingToken) != wantURL {
			t.Errorf("%s sees the ping URL: %v, want %v: %s", grantPrincipals[i].name, got, wantURL, b)
		}
		if wantURL && !strings.HasSuffix(r.Heartbeats[0].PingURL, HeartbeatsPath+grantsPingToken) {
			t.Errorf("%s: ping URL %q", grantPrincipals[i].name, r.Heartbeats[0].PingURL)
		}
	}
	resp, b := f.send(t, "GET", "/api/v1/recipients", "", grantPrincipals[3].token)
	if resp.StatusCode != 200 || strings.Contains(string(b), grantsPingToken) {
		t.Fatalf("the operator's recipient list shows the ping token: %s", b)
	}
	if strings.Contains(f.logs.String(), grantsPingToken) {
		t.Fatal("the log holds the ping token")
	}
}
