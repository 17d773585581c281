package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/host/core"
	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/hosttest"
	"github.com/vigilhq/vigil/internal/mcptest"
	"github.com/vigilhq/vigil/store"
)

// fakeBusyStore is the badger store with its writes refused as a
// JetStream store refuses a transition that lost its race 16 times
// (store.ErrBusy, wrapped), while busy is set. For tests only.
type fakeBusyStore struct {
	*store.Badger
	busy atomic.Bool
}

func (f *fakeBusyStore) refuse(op string) error {
	return fmt.Errorf("fakebusystore: %s: %w (16 attempts)", op, store.ErrBusy)
}

func (f *fakeBusyStore) CreateIfRunning(ctx context.Context, w store.Watch) error {
	if f.busy.Load() {
		return f.refuse("create")
	}
	return f.Badger.CreateIfRunning(ctx, w)
}

func (f *fakeBusyStore) Settle(ctx context.Context, id store.ID, s store.Settlement) (store.Watch, error) {
	if f.busy.Load() {
		return store.Watch{}, f.refuse("settle")
	}
	return f.Badger.Settle(ctx, id, s)
}

func (f *fakeBusyStore) PutRecipient(ctx context.Context, r store.RecipientRecord) (store.RecipientRecord, bool, error) {
	if f.busy.Load() {
		return store.RecipientRecord{}, false, f.refuse("recipient")
	}
	return f.Badger.PutRecipient(ctx, r)
}

// apiOver builds the core, seeded with seed, over the badger store that
// wrap turns into a fake refusing as its test says, and the API over the
// core: the fake and the app. The core closes when the test ends.
func apiOver[S core.Store](t *testing.T, seed byte, wrap func(*store.Badger) S) (S, *fiber.App) {
	t.Helper()
	var fake S
	c, err := core.New(context.Background(), core.Config{
		OpenStore: func(context.Context) (core.Store, error) {
			b, err := store.Open(t.TempDir(), store.Options{})
			if err != nil {
				return nil, err
			}
			fake = wrap(b)
			return fake, nil
		},
		Kinds: fakePlugins(), Clock: fakeclock.At(t0), IDs: hosttest.IDs(seed),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	app := New(Deps{Scheduler: c.Scheduler, Watches: fake, Mailboxes: c.Delivery, Recipients: c.Recipients, Plugins: fakePlugins()},
		Options{BodyLimit: 4096, StreamWait: 50 * time.Millisecond})
	return fake, app
}

// A write whose store gives up on its race (store.ErrBusy, as
// natsstore's 16 lost attempts and badger's conflict retries give) is
// 503 store_busy with a Retry-After, on every writing route the fake
// reaches, answered as the document says; never 500 internal.
func TestAStoreBusyWriteIs503StoreBusy(t *testing.T) {
	fake, app := apiOver(t, 9, func(b *store.Badger) *fakeBusyStore { return &fakeBusyStore{Badger: b} })
	doc, _ := openAPI(t)
	comp := openAPICompiler(t)

	resp, b := call(t, app, "", "POST", "/api/v1/watches", `{"kind":"ci","params":{"sha":"abc"},"recipient":{"id":"agent-1"}}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("a registration before the store is busy: %d %s", resp.StatusCode, b)
	}
	var w api.Watch
	decodeJSON(t, b, &w)

	fake.busy.Store(true)
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

	fake.busy.Store(false)
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
