package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/authz"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/kind"
)

// fakeOverview is a fixed overview, for the routes' tests.
type fakeOverview struct{}

func (fakeOverview) Overview(context.Context) (api.Overview, error) {
	return api.Overview{At: t0, Watches: map[string]int{"pending": 1}, PendingByKind: map[string]int{"timer": 1}, WatchesCountedAt: t0, Kinds: []api.KindView{},
		Pushes: api.PushView{Entered: map[string]uint64{}}}, nil
}

// fakeNode is a fixed node.
type fakeNode struct{}

func (fakeNode) Node() api.ClusterNode {
	return api.ClusterNode{ID: "test@" + t0.Format(time.RFC3339), Name: "test", StartedAt: t0, Address: "127.0.0.1:1"}
}

// everythingConsole claims every path, to show the API's, /metrics' and
// /healthz's are never its to answer.
type everythingConsole struct{}

func (everythingConsole) Serves(string) bool { return true }
func (everythingConsole) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html")
	_, _ = io.WriteString(w, "console")
}

func consoleApp(t *testing.T, c Console) *fixture {
	t.Helper()
	f := newFixture(t)
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "# vigil\n") })
	f.app = New(Deps{Scheduler: f.sched, Watches: f.st, Mailboxes: f.del, Recipients: f.recips, Plugins: fakePlugins(), Overview: fakeOverview{}},
		Options{Metrics: metrics, Console: c})
	return f
}

// The console answers the paths it serves outside the API, and never an
// API route, an unknown /api/ path, /metrics or /healthz, even when it
// claims them; only GET and HEAD reach it.
func TestTheConsoleNeverShadowsTheAPI(t *testing.T) {
	f := consoleApp(t, everythingConsole{})
	for _, c := range []struct {
		method, path string
		console      bool
	}{
		{"GET", "/", true},
		{"HEAD", "/", true},
		{"GET", "/console/app.js", true},
		{"POST", "/", false},
		{"GET", "/api/v1/plugins", false},
		{"GET", "/api/v1/nowhere", false},
		{"GET", "/api", false},
		{"GET", "/metrics", false},
		{"GET", "/healthz", false},
	} {
		resp, b := call(t, f.app, "", c.method, c.path, "")
		got := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html")
		if got != c.console {
			t.Errorf("%s %s: answered by the console %v, want %v (%d %s)", c.method, c.path, got, c.console, resp.StatusCode, b)
		}
	}
	// Without a console, / is the API's 404 as before.
	if code, _ := newFixture(t).do(t, "GET", "/", ""); code != 404 {
		t.Errorf("no console: GET / answered %d", code)
	}
}

// The cluster names this node, its digest and no partitions.
func TestClusterIsOneNode(t *testing.T) {
	f := newFixture(t)
	f.app = New(Deps{Scheduler: f.sched, Watches: f.st, Mailboxes: f.del, Recipients: f.recips, Plugins: fakePlugins(), Node: fakeNode{}}, Options{})
	code, b := f.do(t, "GET", "/api/v1/cluster", "")
	var c map[string]any
	if err := json.Unmarshal(b, &c); code != 200 || err != nil {
		t.Fatalf("%d %s", code, b)
	}
	var cl api.Cluster
	_ = json.Unmarshal(b, &cl)
	if cl.Mode != "single" || len(cl.Nodes) != 1 || !cl.Nodes[0].Self || cl.Nodes[0].Name != "test" ||
		cl.Nodes[0].PluginSetDigest != kind.SetDigest(fakePlugins().Plugins()) {
		t.Errorf("%s", b)
	}
	// No partitions is [], never null.
	if p, ok := c["partitions"].([]any); !ok || len(p) != 0 {
		t.Errorf("partitions = %#v, want []: %s", c["partitions"], b)
	}
}

// A principal lists only the recipients it may read; the operator all of
// them, each with its pending watches.
func TestRecipientListShowsWhatThePrincipalMayRead(t *testing.T) {
	st := apitest.NewStack(t, apitest.Config{Plugins: fakePlugins(), Clock: fakeclock.At(t0)})
	policy, err := authz.Compile([]authz.Token{
		{Principal: "agent-1", Token: "token-of-agent-1-000000"},
		{Principal: "root", Token: "token-of-the-admin-000000", Grant: authz.Grant{Roles: []authz.Role{authz.Admin}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	guard := authz.NewGuard(policy)
	app := New(Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients, Plugins: fakePlugins()},
		Options{Auth: guard})
	admin := "token-of-the-admin-000000"
	for _, id := range []string{"agent-1", "agent-2"} {
		if resp, b := call(t, app, admin, "PUT", "/api/v1/recipients/"+id, `{"status":"running"}`); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	}
	for range 2 {
		if resp, b := call(t, app, admin, "POST", "/api/v1/watches", `{"kind":"ci","params":{},"recipient":{"id":"agent-2"}}`); resp.StatusCode != 201 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	}
	ids := func(token string) string {
		resp, b := call(t, app, token, "GET", "/api/v1/recipients", "")
		var l api.RecipientList
		if err := json.Unmarshal(b, &l); resp.StatusCode != 200 || err != nil {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		var out []string
		for _, r := range l.Recipients {
			out = append(out, r.ID+":"+string(rune('0'+r.Pending)))
		}
		return strings.Join(out, " ")
	}
	if got := ids(admin); got != "agent-1:0 agent-2:2" {
		t.Errorf("the admin lists %q", got)
	}
	if got := ids("token-of-agent-1-000000"); got != "agent-1:0" {
		t.Errorf("agent-1 lists %q", got)
	}
}

// The scopes list says, per principal, whether it may read each scope's
// Work: the grant's scopes and the operator's.
func TestScopesSayWhoMayReadThem(t *testing.T) {
	f := newGrantsFixture(t, context.Background())
	for _, c := range []struct {
		who, token string
		may        bool
	}{
		{"own", grantPrincipals[0].token, true},
		{"other", grantPrincipals[1].token, false},
		{"ops", grantPrincipals[3].token, true},
	} {
		resp, b := f.send(t, "GET", "/api/v1/scopes", "", c.token)
		var l api.ScopeList
		if err := json.Unmarshal(b, &l); resp.StatusCode != 200 || err != nil || len(l.Scopes) != 1 {
			t.Fatalf("%s: %d %s", c.who, resp.StatusCode, b)
		}
		sc := l.Scopes[0]
		if sc.Name != "support" || len(sc.Sources) != 1 || sc.Sources[0].Name != "slack-help" || !sc.Sources[0].Routed || sc.MayRead != c.may {
			t.Errorf("%s: %s", c.who, b)
		}
		if strings.Contains(string(b), "agent-1") {
			t.Errorf("%s: the list names a reporter: %s", c.who, b)
		}
	}
}

// A kind's detail is its plugin's description: what it left out
// (capabilities, a params schema) is [] or {}, never null, and its grants
// are an object; a kind not loaded is not found.
func TestPluginDetailNeverAnswersNull(t *testing.T) {
	f := newFixture(t)
	code, b := f.do(t, "GET", "/api/v1/plugins/ci", "")
	if code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	for field, want := range map[string]string{"capabilities": "[]", "params_schema": "{}", "default_every": `"30s"`, "kind": `"ci"`} {
		if got := string(raw[field]); got != want {
			t.Errorf("%s = %s, want %s: %s", field, got, want, b)
		}
	}
	if g := string(raw["grants"]); !strings.HasPrefix(g, "{") {
		t.Errorf("grants = %s, want an object", g)
	}
	if code, b := f.do(t, "GET", "/api/v1/plugins/nowhere", ""); code != 404 {
		t.Errorf("an unknown kind: %d %s", code, b)
	}
}
