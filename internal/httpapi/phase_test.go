package httpapi

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/authz"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/reminder"
	"github.com/vigilhq/vigil/store"
)

// phaseFixture is a server whose kinds are a registry holding the
// reminder, as serve's core has, with tokens for a worker and an operator
// when tokens is set.
func phaseFixture(t *testing.T, tokens bool) *fixture {
	t.Helper()
	reg := kind.NewRegistry()
	st := apitest.NewStack(t, apitest.Config{Plugins: reg, Clock: fakeclock.At(t0)})
	if err := reminder.New(st.Store).Register(reg); err != nil {
		t.Fatal(err)
	}
	o := Options{BodyLimit: 4096}
	if tokens {
		policy, err := authz.Compile([]authz.Token{
			{Principal: "w", Token: "token-of-the-worker-w"},
			{Principal: "operator", Token: "token-of-the-operator", Grant: authz.Grant{Roles: []authz.Role{authz.Admin}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		o.Auth = authz.NewGuard(policy)
	}
	app := New(Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients, Plugins: fakePlugins()}, o)
	return &fixture{app: app, st: st.Store, sched: st.Scheduler, del: st.Delivery, recips: st.Recipients}
}

func (f *fixture) as(t *testing.T, token, method, path, body string) (int, []byte) {
	t.Helper()
	resp, b := call(t, f.app, token, method, path, body)
	return resp.StatusCode, b
}

// A phase reported by a principal acting as the recipient is its own; one
// reported by another principal is stored seeded, with who reported it.
// Without tokens the local principal acts as every recipient.
func TestPhaseReportedAsSelfOrSeeded(t *testing.T) {
	f := phaseFixture(t, true)
	if code, b := f.as(t, "token-of-the-operator", "PUT", "/api/v1/recipients/w", `{"status":"running"}`); code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	for _, tt := range []struct {
		token, by string
		seeded    bool
	}{{"token-of-the-worker-w", "w", false}, {"token-of-the-operator", "operator", true}} {
		code, b := f.as(t, tt.token, "PUT", "/api/v1/recipients/w/phase", `{"name":"build"}`)
		var p api.Phase
		if err := json.Unmarshal(b, &p); code != 200 || err != nil || p.ReportedBy != tt.by || p.Seeded != tt.seeded {
			t.Fatalf("as %s: %d %s", tt.by, code, b)
		}
		rec, _ := f.st.GetRecipient(t.Context(), "w")
		if rec.Phase == nil || rec.Phase.ReportedBy != tt.by || rec.Phase.Seeded != tt.seeded {
			t.Fatalf("as %s, stored %+v", tt.by, rec.Phase)
		}
	}
	local := phaseFixture(t, false)
	_, _ = local.as(t, "", "PUT", "/api/v1/recipients/w", `{"status":"running"}`)
	code, b := local.as(t, "", "PUT", "/api/v1/recipients/w/phase", `{"name":"review"}`)
	var p api.Phase
	if err := json.Unmarshal(b, &p); code != 200 || err != nil || p.ReportedBy != kind.LocalPrincipal || p.Seeded {
		t.Fatalf("local: %d %s", code, b)
	}
}

// Opting in answers the opt-in and makes the reconciler's one reminder
// watch; the recipient shows its phase, activity and interval; opting out
// cancels the watch. Each answer is what the document says.
func TestReminderOptInThroughTheAPI(t *testing.T) {
	f := phaseFixture(t, false)
	c := openAPICompiler(t)
	valid := func(schema string, b []byte) {
		t.Helper()
		sch, err := c.Compile("file:///openapi.json#/components/schemas/" + schema)
		if err != nil {
			t.Fatal(err)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("not JSON: %s", b)
		}
		if err := sch.Validate(inst); err != nil {
			t.Fatalf("%s does not match %s: %v", b, schema, err)
		}
	}
	_, _ = f.as(t, "", "PUT", "/api/v1/recipients/w", `{"status":"running"}`)
	code, b := f.as(t, "", "PUT", "/api/v1/recipients/w/reminder", `{"every":"10m"}`)
	if code != 200 || !strings.Contains(string(b), `"every":"10m0s"`) {
		t.Fatalf("%d %s", code, b)
	}
	valid("Reminder", b)
	for _, body := range []string{`{"every":"0s"}`, `{"every":"30s"}`, `{"every":"48h"}`, `{"every":10}`, `{"every":"10m","x":1}`} {
		if code, b := f.as(t, "", "PUT", "/api/v1/recipients/w/reminder", body); code != 422 || !strings.Contains(string(b), `"field":"every"`) && !strings.Contains(string(b), `"field":"x"`) {
			t.Errorf("%s: %d %s", body, code, b)
		}
	}
	_, _ = f.as(t, "", "PUT", "/api/v1/recipients/w/phase", `{"name":"build","text":"the parser"}`)
	_, _ = f.as(t, "", "POST", "/api/v1/recipients/w/activity", `{"tool_calls":4}`)
	code, b = f.as(t, "", "GET", "/api/v1/recipients/w", "")
	var r api.Recipient
	if err := json.Unmarshal(b, &r); code != 200 || err != nil || r.ReminderEvery != "10m0s" || r.Phase == nil || r.Phase.Name != "build" ||
		r.Activity == nil || r.Activity.ToolCalls != 4 || r.Activity.At == nil {
		t.Fatalf("%d %s", code, b)
	}
	valid("Recipient", b)
	pending := func() []store.Watch {
		ws, _, err := f.st.List(t.Context(), store.Filter{Recipient: "w", State: store.Pending})
		if err != nil {
			t.Fatal(err)
		}
		return ws
	}
	if ws := pending(); len(ws) != 1 || ws[0].Kind != reminder.Name {
		t.Fatalf("pending %+v", ws)
	}
	// By hand, it is refused: the host keeps it.
	code, b = f.as(t, "", "POST", "/api/v1/watches", `{"kind":"recipient.reminder","params":{"every":"10m"},"recipient":{"id":"w"}}`)
	if code != 422 || !strings.Contains(string(b), `"code":"invalid_params"`) {
		t.Fatalf("by hand: %d %s", code, b)
	}
	if code, b := f.as(t, "", "DELETE", "/api/v1/recipients/w/reminder", ""); code != 204 {
		t.Fatalf("%d %s", code, b)
	}
	if ws := pending(); len(ws) != 0 {
		t.Fatalf("opted out, pending %+v", ws)
	}
}
