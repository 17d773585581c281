package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/authz"
	"github.com/vigilhq/vigil/internal/authztest"
)

// servedLater is documented in api/openapi.yaml before the route that
// serves the document exists; until it is registered, it alone may be
// missing from the routes.
const servedLater = "GET /api/v1/openapi.yaml"

var openAPIMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// openAPI is api/openapi.yaml parsed, as the JSON it is equivalent to.
func openAPI(t *testing.T) (map[string]any, []byte) {
	t.Helper()
	var raw any
	if err := yaml.Unmarshal(api.OpenAPI(), &raw); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc, b
}

func obj(v any) map[string]any {
	x, _ := v.(map[string]any)
	return x
}

// fullApp is the fixture's server with every optional route switched on,
// and with tokens when some are given.
func fullApp(t *testing.T, f *fixture, tokens map[string]string) *fiber.App {
	t.Helper()
	var guard *authz.Guard
	if len(tokens) > 0 {
		guard = authztest.Guard(t, tokens, authz.Admin)
	}
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = io.WriteString(w, "# vigil\n")
	})
	return New(Deps{Scheduler: f.sched, Watches: f.st, Mailboxes: f.del, Recipients: f.recips, Plugins: fakePlugins(), DeadLetters: fakeDeadLetters{}, Observe: f.ob,
		Overview: fakeOverview{}, Node: fakeNode{}},
		Options{Auth: guard, Metrics: metrics, BodyLimit: 4096, StreamWait: 50 * time.Millisecond})
}

var fiberParam = regexp.MustCompile(`:([A-Za-z0-9_]+)`)

// Every route the server registers is documented, and every documented
// operation is a route.
func TestRoutesMatchOpenAPI(t *testing.T) {
	doc, _ := openAPI(t)
	app := fullApp(t, newFixture(t), nil)

	documented := map[string]bool{}
	for path, item := range obj(doc["paths"]) {
		for _, method := range openAPIMethods {
			if _, ok := obj(item)[method]; ok {
				documented[strings.ToUpper(method)+" "+path] = true
			}
		}
	}
	registered := map[string]bool{}
	for _, r := range app.GetRoutes(true) { // true leaves out middleware (app.Use, the group's authentication)
		if r.Method == fiber.MethodHead { // fiber adds HEAD to every GET
			continue
		}
		registered[r.Method+" "+fiberParam.ReplaceAllString(r.Path, "{$1}")] = true
	}

	var undocumented, unrouted []string
	for op := range registered {
		if !documented[op] {
			undocumented = append(undocumented, op)
		}
	}
	for op := range documented {
		if !registered[op] && op != servedLater {
			unrouted = append(unrouted, op)
		}
	}
	sort.Strings(undocumented)
	sort.Strings(unrouted)
	if len(undocumented)+len(unrouted) > 0 {
		t.Errorf("api/openapi.yaml and the routes differ:\n  registered but not documented: %v\n  documented but not registered: %v", undocumented, unrouted)
	}
}

// operation finds the documented operation of a request path.
func operation(doc map[string]any, method, path string) (string, map[string]any) {
	for tmpl, item := range obj(doc["paths"]) {
		re := "^" + regexp.MustCompile(`\\\{[^/]+\\\}`).ReplaceAllString(regexp.QuoteMeta(tmpl), "[^/]+") + "$"
		if regexp.MustCompile(re).MatchString(path) {
			if op := obj(obj(item)[strings.ToLower(method)]); op != nil {
				return tmpl, op
			}
		}
	}
	return "", nil
}

// openAPICompiler compiles schemas of api/openapi.yaml, as
// file:///openapi.json#/components/schemas/NAME.
func openAPICompiler(t *testing.T) *jsonschema.Compiler {
	t.Helper()
	_, raw := openAPI(t)
	jdoc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource("file:///openapi.json", jdoc); err != nil {
		t.Fatal(err)
	}
	return c
}

// What the server answers is what the document says: a documented status,
// a documented content type, a body that validates against the documented
// schema, and for an error a code the operation lists for that status.
func TestResponsesMatchOpenAPI(t *testing.T) {
	doc, _ := openAPI(t)
	c := openAPICompiler(t)

	f := newFixture(t)
	open, locked := fullApp(t, f, nil), fullApp(t, f, map[string]string{"a-token-for-the-openapi-test": "tester"})
	var watchID, workID string
	steps := []struct {
		method, path, body string
		before             func()
		locked             bool // sent to the server with tokens, without one
	}{
		{"GET", "/healthz", "", nil, true},
		{"GET", "/metrics", "", nil, true},
		{"GET", "/api/v1/plugins", "", nil, true},
		{"POST", "/api/v1/watches", `{}`, nil, true},
		{"GET", "/api/v1/recipients/agent-1/mailbox/stream", "", nil, true},
		{"GET", "/healthz", "", nil, false},
		{"GET", "/metrics", "", nil, false},
		{"GET", "/api/v1/openapi.yaml", "", nil, false},
		{"GET", "/api/v1/plugins", "", nil, false},
		{"GET", "/api/v1/kinds", "", nil, false},
		{"GET", "/api/v1/kinds", "", nil, true},
		{"GET", "/api/v1/kinds?wait=10ms&since=not-the-version", "", nil, false},
		{"GET", "/api/v1/kinds?wait=10ms", "", nil, false},
		{"GET", "/api/v1/kinds?wait=2m", "", nil, false},
		{"POST", "/mcp", "", nil, true},
		{"POST", "/api/v1/plugins/reload", "", nil, false},
		{"POST", "/api/v1/watches", `{"kind":"ci","params":{"sha":"abc"},"recipient":{"id":"agent-1"},"every":"5s"}`, nil, false},
		{"POST", "/api/v1/watches", `{"kind":"ticket","params":{},"recipient":{"id":"agent-1"}}`, nil, false},
		{"POST", "/api/v1/watches", `{"kind":`, nil, false},
		{"POST", "/api/v1/watches", `{"kind":"ci","params":{},"recipient":{"id":"a"},"priority":1}`, nil, false},
		{"POST", "/api/v1/watches", `{"kind":"gitlab","params":{},"recipient":{"id":"a"}}`, nil, false},
		{"POST", "/api/v1/watches", `{"kind":"ci","params":{"bad":true},"recipient":{"id":"a"}}`, nil, false},
		{"POST", "/api/v1/watches", `{"kind":"ci","params":{},"recipient":{"id":"a"},"expires_at":"2027-06-01T00:00:00Z"}`, nil, false},
		{"POST", "/api/v1/watches", `{"kind":"ci","params":{},"recipient":{"id":"a/b"}}`, nil, false},
		{"GET", "/api/v1/watches", "", nil, false},
		{"GET", "/api/v1/watches?recipient=agent-1&state=pending", "", nil, false},
		{"GET", "/api/v1/watches?recipient=a%20b", "", nil, false},
		{"GET", "/api/v1/watches?state=done", "", nil, false},
		{"GET", "/api/v1/watches/{watch}", "", nil, false},
		{"GET", "/api/v1/watches/01m8nhtng4ra8tgz0tmrscbt6g", "", nil, false},
		{"GET", "/api/v1/watches/xyz", "", nil, false},
		{"DELETE", "/api/v1/watches/{watch}", "", func() { f.sched.Tick(context.Background(), t0) }, false},
		{"DELETE", "/api/v1/watches/01m8nhtng4ra8tgz0tmrscbt6g", "", nil, false},
		{"GET", "/api/v1/watches/{watch}", "", nil, false},
		{"PUT", "/api/v1/recipients/agent-2", `{"status":"running","webhook":{"url":"https://hooks.example.org/vigil","secret":"whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYX"},"refs":[{"kind":"ticket","params":{"n":1}}]}`, nil, false},
		{"PUT", "/api/v1/recipients/paused", `{"status":"paused"}`, nil, false},
		{"POST", "/api/v1/watches", `{"kind":"ci","params":{},"recipient":{"id":"paused"}}`, nil, false},
		{"PUT", "/api/v1/recipients/x", `{"status":"asleep"}`, nil, false},
		{"PUT", "/api/v1/recipients/x", `nope`, nil, false},
		{"PUT", "/api/v1/recipients/a%20b", `{"status":"running"}`, nil, false},
		{"GET", "/api/v1/recipients/agent-2", "", nil, false},
		{"GET", "/api/v1/recipients/nobody", "", nil, false},
		{"GET", "/api/v1/recipients/a%20b", "", nil, false},
		{"PUT", "/api/v1/recipients/agent-2/phase", `{"name":"build","text":"the parser"}`, nil, false},
		{"PUT", "/api/v1/recipients/agent-2/phase", `{"name":"Build"}`, nil, false},
		{"PUT", "/api/v1/recipients/agent-2/phase", `{"name":`, nil, false},
		{"PUT", "/api/v1/recipients/agent-2/phase", `{"name":"build"}`, nil, true},
		{"PUT", "/api/v1/recipients/nobody/phase", `{"name":"build"}`, nil, false},
		{"PUT", "/api/v1/recipients/a%20b/phase", `{"name":"build"}`, nil, false},
		{"POST", "/api/v1/recipients/agent-2/activity", `{"replies":1,"tool_calls":2}`, nil, false},
		{"POST", "/api/v1/recipients/agent-2/activity", `{"replies":-1}`, nil, false},
		{"POST", "/api/v1/recipients/nobody/activity", `{}`, nil, false},
		{"PUT", "/api/v1/recipients/agent-2/reminder", `{"every":"10m"}`, nil, false}, // this fixture serves no reminder kind
		{"PUT", "/api/v1/recipients/agent-2/reminder", `{"every":"soon"}`, nil, false},
		{"DELETE", "/api/v1/recipients/agent-2/reminder", "", nil, false},
		{"DELETE", "/api/v1/recipients/nobody/reminder", "", nil, false},
		{"GET", "/api/v1/recipients/agent-2", "", nil, false},
		{"GET", "/api/v1/recipients/agent-1/mailbox?after=0&limit=10", "", nil, false},
		{"GET", "/api/v1/recipients/agent-1/mailbox?after=1&wait=10ms", "", nil, false},
		{"GET", "/api/v1/recipients/agent-1/mailbox?limit=0", "", nil, false},
		{"GET", "/api/v1/recipients/agent-1/mailbox?wait=2m", "", nil, false},
		{"GET", "/api/v1/recipients/nobody/mailbox", "", nil, false},
		{"GET", "/api/v1/recipients/a%20b/mailbox", "", nil, false},
		{"GET", "/api/v1/recipients/nobody/mailbox/stream", "", nil, false},
		{"GET", "/api/v1/recipients/a%20b/mailbox/stream", "", nil, false},
		{"GET", "/api/v1/recipients/agent-1/mailbox/stream?after=x", "", nil, false},
		{"DELETE", "/api/v1/recipients/agent-2", "", nil, false},
		{"DELETE", "/api/v1/recipients/agent-2", "", nil, false},
		{"DELETE", "/api/v1/recipients/a%20b", "", nil, false},
		{"GET", "/api/v1/fetch/dead-letters", "", nil, false},
		{"GET", "/api/v1/fetch/dead-letters?after=1&limit=5", "", nil, false},
		{"GET", "/api/v1/fetch/dead-letters?limit=5000", "", nil, false},
		{"GET", "/api/v1/fetch/dead-letters", "", nil, true},
		{"GET", "/api/v1/overview", "", nil, false},
		{"GET", "/api/v1/overview", "", nil, true},
		{"GET", "/api/v1/cluster", "", nil, false},
		{"GET", "/api/v1/cluster", "", nil, true},
		{"GET", "/api/v1/recipients", "", nil, false},
		{"GET", "/api/v1/recipients", "", nil, true},
		{"GET", "/api/v1/plugins/ci", "", nil, false},
		{"GET", "/api/v1/plugins/gitlab", "", nil, false},
		{"GET", "/api/v1/plugins/ci", "", nil, true},
		{"GET", "/api/v1/scopes", "", nil, false},
		{"GET", "/api/v1/scopes", "", nil, true},
		{"POST", "/api/v1/scopes/support/observe", `{"item":"m1","thread":"T1","text":"printer on fire","run":"nightly@1"}`, nil, false},
		{"POST", "/api/v1/scopes/support/observe", `{"item":"m1","thread":"T1","text":"printer on fire"}`, nil, false},
		{"POST", "/api/v1/scopes/support/observe", `{"item":"m1","thread":"T1","text":"edited"}`, nil, false},
		{"POST", "/api/v1/scopes/closed/observe", `{"item":"m1","thread":"T1"}`, nil, false},
		{"POST", "/api/v1/scopes/nowhere/observe", `{"item":"m1","thread":"T1"}`, nil, false},
		{"POST", "/api/v1/scopes/gone/observe", `{"item":"m1","thread":"T1"}`, nil, false},
		{"POST", "/api/v1/scopes/support/observe", `{"item":"m1","thread":"T1","text":"printer on fire","run":"nightly@2"}`, nil, false},
		{"POST", "/api/v1/scopes/support/observe", `{"item":"m1","thread":"T1","run":"a b"}`, nil, false},
		{"POST", "/api/v1/scopes/support/observe", `{"item":"","thread":"T1"}`, nil, false},
		{"POST", "/api/v1/scopes/support/observe", `{"item":"m1","thread":"T1","reporter":"x"}`, nil, false},
		{"POST", "/api/v1/scopes/support/observe", `{"item":`, nil, false},
		{"POST", "/api/v1/scopes/support/observe", `{"item":"m2","thread":"T1"}`, nil, false},
		{"POST", "/api/v1/scopes/support/observe", `{"item":"m3","thread":"T1"}`, nil, true},
		{"GET", "/api/v1/scopes/support/work?state=open", "", func() { _, _ = f.ob.RouteAll(context.Background()) }, false},
		{"GET", "/api/v1/scopes/support/work", "", nil, false},
		{"GET", "/api/v1/scopes/support/work?state=x", "", nil, false},
		{"GET", "/api/v1/scopes/nowhere/work", "", nil, false},
		{"GET", "/api/v1/work/{work}", "", nil, false},
		{"GET", "/api/v1/work/xyz", "", nil, false},
		{"GET", "/api/v1/work/01m8nhtng4ra8tgz0tmrscbt6g", "", nil, false},
		{"POST", "/api/v1/work/{work}/claim", `{"recipient":{"id":"agent-1"}}`, nil, false},
		{"POST", "/api/v1/work/{work}/claim", `{"recipient":{"id":"agent-2"}}`, nil, false},
		{"POST", "/api/v1/work/{work}/claim", `{"recipient":{"id":"a b"}}`, nil, false},
		{"POST", "/api/v1/work/{work}/claim", `{"recipient":`, nil, false},
		{"POST", "/api/v1/work/01m8nhtng4ra8tgz0tmrscbt6g/claim", `{"recipient":{"id":"agent-1"}}`, nil, false},
		{"POST", "/api/v1/work/{work}/complete", "", nil, false},
		{"POST", "/api/v1/work/{work}/complete", "", nil, false},
		{"POST", "/api/v1/work/xyz/complete", "", nil, false},
	}
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		path := strings.ReplaceAll(strings.ReplaceAll(s.path, "{watch}", watchID), "{work}", workID)
		where := s.method + " " + path
		var body io.Reader
		if s.body != "" {
			body = strings.NewReader(s.body)
		}
		req := httptest.NewRequest(s.method, path, body)
		req.Header.Set("Content-Type", "application/json")
		app := open
		if s.locked {
			app, where = locked, where+" (no token)"
		}
		resp, err := app.Test(req, 5000)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		t.Logf("%s: %d", where, resp.StatusCode)
		if s.method+" "+s.path == servedLater && resp.StatusCode == 404 {
			continue // not routed yet
		}
		if s.method == "POST" && s.path == "/api/v1/watches" && resp.StatusCode == 201 && watchID == "" {
			var w api.Watch
			_ = json.Unmarshal(b, &w)
			watchID = w.ID
		}

		if s.method == "GET" && strings.HasPrefix(s.path, "/api/v1/scopes/support/work") && resp.StatusCode == 200 && workID == "" {
			var wl api.WorkList
			_ = json.Unmarshal(b, &wl)
			if len(wl.Work) > 0 {
				workID = wl.Work[0].ID
			}
		}

		if msg := conforms(doc, c, s.method, path, resp, b); msg != "" {
			t.Errorf("%s: %s", where, msg)
		}
	}
	if watchID == "" {
		t.Fatal("no watch was created")
	}
}

// conforms says how a response differs from what api/openapi.yaml
// documents for its operation ("" when it does not): a documented status,
// a documented content type, a body that validates against the
// documented schema, and for an error a code x-error-codes lists for
// that status.
func conforms(doc map[string]any, c *jsonschema.Compiler, method, path string, resp *http.Response, b []byte) string {
	esc := strings.NewReplacer("~", "~0", "/", "~1")
	tmpl, op := operation(doc, method, strings.Split(path, "?")[0])
	if op == nil {
		return "no documented operation"
	}
	status := strconv.Itoa(resp.StatusCode)
	docResp := obj(obj(op["responses"])[status])
	ptr := "#/paths/" + esc.Replace(tmpl) + "/" + strings.ToLower(method) + "/responses/" + status
	if ref, ok := docResp["$ref"].(string); ok {
		ptr = ref
		name := strings.TrimPrefix(ref, "#/components/responses/")
		docResp = obj(obj(obj(doc["components"])["responses"])[name])
	}
	if docResp == nil {
		return fmt.Sprintf("answered %d, which the document does not list for %s %s: %s", resp.StatusCode, method, tmpl, b)
	}
	content := obj(docResp["content"])
	if len(content) == 0 {
		if len(b) != 0 {
			return fmt.Sprintf("%d is documented without a body, got %q", resp.StatusCode, b)
		}
		return ""
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if _, ok := content[mt]; !ok {
		return fmt.Sprintf("content type %q, documented %v", resp.Header.Get("Content-Type"), slices.Sorted(maps.Keys(content)))
	}
	if mt != "application/json" {
		return ""
	}
	sch, err := c.Compile("file:///openapi.json" + ptr + "/content/application~1json/schema")
	if err != nil {
		return err.Error()
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return fmt.Sprintf("not JSON: %s", b)
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Sprintf("%d body does not match the document: %s\n%v", resp.StatusCode, b, err)
	}
	if resp.StatusCode >= 400 {
		var env api.ErrorEnvelope
		_ = json.Unmarshal(b, &env)
		codes, _ := obj(op["x-error-codes"])[status].([]any)
		if !slices.Contains(codes, any(env.Error.Code)) {
			return fmt.Sprintf("answered %d %s, which x-error-codes does not list for %s %s (%v)", resp.StatusCode, env.Error.Code, method, tmpl, codes)
		}
	}
	return ""
}
