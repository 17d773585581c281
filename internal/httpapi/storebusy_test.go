package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/mcptest"
	"github.com/vigilhq/vigil/store"
)

// A write whose store gives up on its race (store.ErrBusy, as
// natsstore's 16 lost attempts and badger's conflict retries give) is
// 503 store_busy with a Retry-After, on every writing route the fake
// reaches, answered as the document says; never 500 internal.
func TestAStoreBusyWriteIs503StoreBusy(t *testing.T) {
	// The store refuses the routes' writes as a JetStream store refuses
	// a transition that lost its race 16 times, while busy is set.
	var busy atomic.Bool
	c := faultCore(t, &faultKV{before: func(o store.TxOptions) error {
		if busy.Load() && faulted(o) {
			return fmt.Errorf("fakebusykv: %s: %w (16 attempts)", o.Name, store.ErrBusy)
		}
		return nil
	}}, 9)
	app := New(Deps{Scheduler: c.Scheduler, Watches: c.Store, Mailboxes: c.Delivery, Recipients: c.Recipients, Plugins: fakePlugins()},
		Options{BodyLimit: 4096, StreamWait: 50 * time.Millisecond})
	doc, _ := openAPI(t)
	comp := openAPICompiler(t)

	resp, b := call(t, app, "", "POST", "/api/v1/watches", `{"kind":"ci","params":{"sha":"abc"},"recipient":{"id":"agent-1"}}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("a registration before the store is busy: %d %s", resp.StatusCode, b)
	}
	var w api.Watch
	decodeJSON(t, b, &w)

	busy.Store(true)
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/api/v1/watches", `{"kind":"ci","params":{"sha":"def"},"recipient":{"id":"agent-1"}}`},
		{"DELETE", "/api/v1/watches/" + w.ID, ""},
		{"PUT", "/api/v1/recipients/agent-2", `{"status":"running"}`},
	} {
		resp, b := call(t, app, "", r.method, r.path, r.body)
		var env api.ErrorEnvelope
		decodeJSON(t, b, &env)
		if resp.StatusCode != http.StatusServiceUnavailable || env.Error.Code != api.CodeStoreBusy {
			t.Errorf("%s %s with the store busy: %d %s, want 503 store_busy", r.method, r.path, resp.StatusCode, b)
			continue
		}
		if got := resp.Header.Get("Retry-After"); got != "1" {
			t.Errorf("%s %s: Retry-After %q, want \"1\"", r.method, r.path, got)
		}
		if why := conforms(doc, comp, r.method, r.path, resp, b); why != "" {
			t.Errorf("%s %s: %s", r.method, r.path, why)
		}
	}

	// The MCP server's tools speak to the same API: a tool call that
	// reaches the busy store is a tool error carrying the same envelope.
	url := apitest.Serve(t, app)
	mc := mcp.NewClient(&mcp.Implementation{Name: "vigil-test", Version: "1"}, nil)
	sess, err := mc.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url + MCPPath, HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	if e := mcptest.ToolErr(t, mcptest.CallTool(t, sess, "cancel_watch", map[string]any{"id": w.ID}, nil)); e.Code != api.CodeStoreBusy {
		t.Errorf("cancel_watch with the store busy: %+v, want the tool error store_busy", e)
	}

	busy.Store(false)
	if resp, b := call(t, app, "", "DELETE", "/api/v1/watches/"+w.ID, ""); resp.StatusCode != http.StatusOK {
		t.Errorf("the cancel sent again once the store is free: %d %s", resp.StatusCode, b)
	}
}

func decodeJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
}
