package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/api/client"
	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/mcptest"
	"github.com/vigilhq/vigil/internal/netguard"
	"github.com/vigilhq/vigil/internal/observe"
	"github.com/vigilhq/vigil/internal/recipients"
)

// A recipient's bounds and its webhook's destination are refused through
// the API as a 422 that names the field and the setting that would allow
// it.
func TestRecipientBoundsOverHTTP(t *testing.T) {
	st := apitest.NewStack(t, apitest.Config{Plugins: fakePlugins(), Clock: fakeclock.At(t0)})
	recips := st.Recipients.WithLimits(recipients.Limits{MaxRefs: 2, MaxPending: 2}).WithDestinations(netguard.New(nil))
	f := &fixture{app: New(Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: recips, Plugins: fakePlugins()},
		Options{StreamWait: 50 * time.Millisecond})}
	watch := `{"kind":"ci","params":{},"recipient":{"id":"agent-1"}}`
	for range 2 {
		if status, b := f.do(t, "POST", "/api/v1/watches", watch); status != 201 {
			t.Fatalf("%d %s", status, b)
		}
	}
	refs := func(n int) string {
		var rs []string
		for i := range n {
			rs = append(rs, fmt.Sprintf(`{"kind":"ticket","params":{"n":%d}}`, i))
		}
		return `{"status":"running","refs":[` + strings.Join(rs, ",") + `]}`
	}
	for _, tt := range []struct {
		name, method, path, body string
		code, field, setting     string
	}{
		{"pending at the bound", "POST", "/api/v1/watches", watch, api.CodeTooManyPending, "recipient.id", "recipient_max_pending"},
		{"refs over the bound", "PUT", "/api/v1/recipients/agent-2", refs(3), api.CodeTooManyRefs, "refs", "recipient_max_refs"},
		{"loopback webhook", "PUT", "/api/v1/recipients/agent-2", `{"status":"running","webhook":{"url":"http://127.0.0.1:9000/hook","secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}`,
			api.CodeDestinationRefused, "webhook.url", "webhook_allow"},
		{"metadata webhook, integer form", "PUT", "/api/v1/recipients/agent-2", `{"status":"running","webhook":{"url":"http://2852039166/latest","secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}`,
			api.CodeDestinationRefused, "webhook.url", "webhook_allow"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, b := f.do(t, tt.method, tt.path, tt.body)
			var env api.ErrorEnvelope
			if err := json.Unmarshal(b, &env); err != nil || status != 422 || env.Error.Code != tt.code || env.Error.Field != tt.field || env.Error.Setting != tt.setting {
				t.Fatalf("%d %s", status, b)
			}
		})
	}
	if status, b := f.do(t, "PUT", "/api/v1/recipients/agent-2", refs(2)); status != 200 {
		t.Fatalf("refs at the bound: %d %s", status, b)
	}
	if status, b := f.do(t, "POST", "/api/v1/watches", `{"kind":"ci","params":{},"recipient":{"id":"agent-3"}}`); status != 201 {
		t.Fatalf("another recipient: %d %s", status, b)
	}
}

// Hostile but well-formed bodies are the client's mistake, each a 4xx
// with a named code and the field at fault, through the real scheduler,
// recipients and observer: a webhook URL or secret over its bound, an
// every past the longest deadline, params nested past the host's depth, a
// Work claim for a paused recipient. Nothing of a refused request is
// written.
func TestRequestBoundsOverHTTP(t *testing.T) {
	st := apitest.NewStack(t, apitest.Config{Plugins: fakePlugins(), Clock: fakeclock.At(t0)})
	ob, err := observe.New(observe.Options{Store: st.Store, Clock: fakeclock.At(t0), Waker: st.Scheduler, Rate: -1, RunPerMinute: -1}, observeConfig())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{app: New(Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients, Plugins: fakePlugins(), Observe: ob},
		Options{StreamWait: 50 * time.Millisecond})} // the default 1 MiB body limit
	if status, b := f.do(t, "POST", "/api/v1/scopes/support/observe", `{"item":"m1","thread":"T1","text":"hi","source":"slack-help"}`); status != 201 {
		t.Fatalf("record: %d %s", status, b)
	}
	if _, err := ob.RouteAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	var wl api.WorkList
	if _, b := f.do(t, "GET", "/api/v1/scopes/support/work", ""); json.Unmarshal(b, &wl) != nil || len(wl.Work) != 1 {
		t.Fatalf("work: %s", b)
	}
	if status, b := f.do(t, "PUT", "/api/v1/recipients/paused-1", `{"status":"paused"}`); status != 200 {
		t.Fatalf("recipient: %d %s", status, b)
	}
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	webhook := func(url, secret string) string {
		return `{"status":"running","webhook":{"url":"` + url + `","secret":"` + secret + `"}}`
	}
	deep := strings.Repeat("[", 500) + strings.Repeat("]", 500)
	for _, tt := range []struct {
		name, method, path, body string
		status                   int
		code, field              string
	}{
		{"a 200,000-byte webhook URL", "PUT", "/api/v1/recipients/agent-1", webhook("https://example.com/"+strings.Repeat("a", 200_000), secret), 422, api.CodeInvalidField, "webhook.url"},
		{"a 2,049-byte webhook URL", "PUT", "/api/v1/recipients/agent-1", webhook("https://example.com/"+strings.Repeat("a", 2049-20), secret), 422, api.CodeInvalidField, "webhook.url"},
		{"a 700 KB webhook secret", "PUT", "/api/v1/recipients/agent-1", webhook("https://example.com/h", "whsec_"+strings.Repeat("AAAA", 700<<10/4)), 422, api.CodeInvalidField, "webhook.secret"},
		{"a 16-byte key", "PUT", "/api/v1/recipients/agent-1", webhook("https://example.com/h", "whsec_AAAAAAAAAAAAAAAAAAAAAA=="), 422, api.CodeInvalidField, "webhook.secret"},
		{"a 5,000-byte workspace", "PUT", "/api/v1/recipients/agent-1", `{"status":"running","workspace":"/` + strings.Repeat("w", 5000) + `"}`, 422, api.CodeInvalidField, "workspace"},
		{"a ref's params 500 deep", "PUT", "/api/v1/recipients/agent-1", `{"status":"running","refs":[{"kind":"ticket","params":` + deep + `}]}`, 422, api.CodeInvalidParams,
			"refs[0].params." + strings.TrimSuffix(strings.Repeat("0.", kind.MaxParamsDepth), ".")},
		{"every of 2562047h", "POST", "/api/v1/watches", `{"kind":"ci","params":{},"recipient":{"id":"agent-1"},"every":"2562047h"}`, 422, api.CodeInvalidField, "every"},
		{"params 500 deep", "POST", "/api/v1/watches", `{"kind":"ci","params":{"expect":{"json_path":{"path":"a","equals":` + deep + `}}},"recipient":{"id":"agent-1"}}`, 422, api.CodeInvalidParams,
			"params.expect.json_path.equals." + strings.TrimSuffix(strings.Repeat("0.", kind.MaxParamsDepth-3), ".")},
		{"params over 64 KiB", "POST", "/api/v1/watches", `{"kind":"ci","params":{"x":"` + strings.Repeat("x", kind.MaxParamsBytes) + `"},"recipient":{"id":"agent-1"}}`, 422, api.CodeInvalidParams, "params"},
		{"a kind of 100,000 bytes", "POST", "/api/v1/watches", `{"kind":"` + strings.Repeat("k", 100_000) + `","params":{},"recipient":{"id":"agent-1"}}`, 422, api.CodeInvalidField, "kind"},
		{"a claim for a paused recipient", "POST", "/api/v1/work/" + wl.Work[0].ID + "/claim", `{"recipient":{"id":"paused-1"}}`, 409, api.CodeRecipientNotRunning, "recipient.id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, b := f.do(t, tt.method, tt.path, tt.body)
			var env api.ErrorEnvelope
			if err := json.Unmarshal(b, &env); err != nil || status != tt.status || env.Error.Code != tt.code || env.Error.Field != tt.field {
				t.Fatalf("%d %.300s, want %d %s naming %s", status, b, tt.status, tt.code, tt.field)
			}
			if len(b) > 2048 {
				t.Fatalf("the refusal is %d bytes: it repeats the input", len(b))
			}
		})
	}
	// Nothing of them was written.
	if status, b := f.do(t, "GET", "/api/v1/recipients/agent-1", ""); status != 404 {
		t.Fatalf("a refused recipient was stored: %d %s", status, b)
	}
	if _, b := f.do(t, "GET", "/api/v1/watches", ""); !strings.Contains(string(b), `"watches":[]`) {
		t.Fatalf("a refused watch was stored: %s", b)
	}
	if _, b := f.do(t, "GET", "/api/v1/work/"+wl.Work[0].ID, ""); strings.Contains(string(b), "claimed_by") {
		t.Fatalf("a refused claim claimed: %s", b)
	}
}

// The same bounds hold whichever way a registration comes, over the real
// timer and http plugins: REST (the Go client, as the CLI sends) and MCP
// (a tool error carrying the API's envelope). A timer whose expires_at is
// before its instant could only expire; an http watch whose expectation
// nests 500 deep is the caller's 422, never the plugin's 503.
func TestRegistrationBoundsOverRESTAndMCP(t *testing.T) {
	h := newMCPHost(t)
	s := h.connect(t, tokenAgent1, nil)
	c := client.New(h.url, client.WithToken(tokenAgent1))
	deep := json.RawMessage(`{"url":"https://example.com/","expect":{"json_path":{"path":"a","equals":` + strings.Repeat("[", 500) + strings.Repeat("]", 500) + `}}}`)
	at := t0.Add(time.Hour)
	early := at.Add(-time.Minute)
	for _, tt := range []struct {
		name        string
		req         api.WatchRequest
		code, field string
	}{
		{"a timer expiring before its instant", api.WatchRequest{Kind: "timer", Params: json.RawMessage(`{"at":"` + at.Format(time.RFC3339) + `"}`), ExpiresAt: &early}, api.CodeInvalidField, "expires_at"},
		{"an http expectation 500 deep", api.WatchRequest{Kind: "http", Params: deep}, api.CodeInvalidParams,
			"params.expect.json_path.equals." + strings.TrimSuffix(strings.Repeat("0.", kind.MaxParamsDepth-3), ".")},
		{"every of 2562047h", api.WatchRequest{Kind: "timer", Params: json.RawMessage(`{"at":"` + at.Format(time.RFC3339) + `"}`), Every: "2562047h"}, api.CodeInvalidField, "every"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Recipient = api.RecipientRef{ID: "agent-1"}
			_, err := c.CreateWatch(context.Background(), tt.req)
			var ae *api.Error
			if !errors.As(err, &ae) || ae.Code != tt.code || ae.Field != tt.field {
				t.Fatalf("REST: %v, want %s naming %s", err, tt.code, tt.field)
			}
			var params map[string]any
			if err := json.Unmarshal(tt.req.Params, &params); err != nil {
				t.Fatal(err)
			}
			args := map[string]any{"kind": tt.req.Kind, "params": params, "recipient": "agent-1"}
			if tt.req.Every != "" {
				args["every"] = tt.req.Every
			}
			if tt.req.ExpiresAt != nil {
				args["expires_at"] = tt.req.ExpiresAt.Format(time.RFC3339)
			}
			if e := mcptest.ToolErr(t, mcptest.CallTool(t, s, "register_watch", args, nil)); e.Code != tt.code || e.Field != tt.field {
				t.Fatalf("MCP: %+v, want %s naming %s", e, tt.code, tt.field)
			}
		})
	}
	// The timer at its own deadline, and past it, is taken.
	for _, x := range []time.Time{at.Add(time.Minute), at.Add(time.Hour)} {
		if _, err := c.CreateWatch(context.Background(), api.WatchRequest{Kind: "timer", Params: json.RawMessage(`{"at":"` + at.Format(time.RFC3339) + `"}`),
			Recipient: api.RecipientRef{ID: "agent-1"}, ExpiresAt: &x}); err != nil {
			t.Fatalf("expires_at %s: %v", x, err)
		}
	}
}
