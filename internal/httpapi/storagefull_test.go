package httpapi

import (
	"context"
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

// A write refused for a full disk (store.ErrStorageFull) is 507
// insufficient_storage with a Retry-After on every writing route the
// fake reaches, answered as the document says, and a tool error with the
// same code over MCP; the reads go on; the API marks each write it asks
// for as a client's, so the store refuses it before the host's own; and
// once there is room the same request lands, with no restart.
func TestAFullDiskWriteIs507InsufficientStorage(t *testing.T) {
	// The store refuses the routes' writes a client asked for (the
	// transition marked as a client's) as it refuses them on a data
	// directory short of space, while full is set; unmarked counts those
	// that reached it unmarked.
	var full atomic.Bool
	var unmarked atomic.Int64
	c := faultCore(t, &faultKV{before: func(o store.TxOptions) error {
		switch {
		case !faulted(o):
		case !o.Client:
			unmarked.Add(1)
		case full.Load():
			return &store.StorageFullError{Dir: "/var/lib/vigil/store", Free: 900 << 10, Need: 3 << 20}
		}
		return nil
	}}, 7)
	app := New(Deps{Scheduler: c.Scheduler, Watches: c.Store, Mailboxes: c.Delivery, Recipients: c.Recipients, Plugins: fakePlugins()},
		Options{BodyLimit: 4096, StreamWait: 50 * time.Millisecond})
	doc, _ := openAPI(t)
	comp := openAPICompiler(t)

	resp, b := call(t, app, "", "POST", "/api/v1/watches", `{"kind":"ci","params":{"sha":"abc"},"recipient":{"id":"agent-1"}}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("a registration before the disk is full: %d %s", resp.StatusCode, b)
	}
	var w api.Watch
	decodeJSON(t, b, &w)
	if n := unmarked.Load(); n != 0 {
		t.Fatalf("%d of the API's writes reached the store without the client's mark", n)
	}

	full.Store(true)
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/api/v1/watches", `{"kind":"ci","params":{"sha":"def"},"recipient":{"id":"agent-1"}}`},
		{"DELETE", "/api/v1/watches/" + w.ID, ""},
		{"PUT", "/api/v1/recipients/agent-2", `{"status":"running"}`},
	} {
		resp, b := call(t, app, "", r.method, r.path, r.body)
		var env api.ErrorEnvelope
		decodeJSON(t, b, &env)
		if resp.StatusCode != http.StatusInsufficientStorage || env.Error.Code != api.CodeInsufficientStorage {
			t.Errorf("%s %s with the disk full: %d %s, want 507 insufficient_storage", r.method, r.path, resp.StatusCode, b)
			continue
		}
		if got := resp.Header.Get("Retry-After"); got != "10" {
			t.Errorf("%s %s: Retry-After %q, want \"10\"", r.method, r.path, got)
		}
		if why := conforms(doc, comp, r.method, r.path, resp, b); why != "" {
			t.Errorf("%s %s: %s", r.method, r.path, why)
		}
	}
	for _, path := range []string{"/api/v1/watches/" + w.ID, "/api/v1/watches?recipient=agent-1", "/api/v1/recipients/agent-1/mailbox"} {
		if resp, b := call(t, app, "", "GET", path, ""); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s with the disk full: %d %s, want 200", path, resp.StatusCode, b)
		}
	}

	url := apitest.Serve(t, app)
	mc := mcp.NewClient(&mcp.Implementation{Name: "vigil-test", Version: "1"}, nil)
	sess, err := mc.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url + MCPPath, HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	if e := mcptest.ToolErr(t, mcptest.CallTool(t, sess, "cancel_watch", map[string]any{"id": w.ID}, nil)); e.Code != api.CodeInsufficientStorage {
		t.Errorf("cancel_watch with the disk full: %+v, want the tool error insufficient_storage", e)
	}

	full.Store(false)
	if resp, b := call(t, app, "", "DELETE", "/api/v1/watches/"+w.ID, ""); resp.StatusCode != http.StatusOK {
		t.Errorf("the cancel sent again once there is room: %d %s", resp.StatusCode, b)
	}
	if n := unmarked.Load(); n != 0 {
		t.Errorf("%d of the API's writes reached the store without the client's mark", n)
	}
}
