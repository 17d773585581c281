package httpapi

import (
	"context"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/mcptest"
	"github.com/vigilhq/vigil/store"
)

// An agent whose register_watch call went unanswered (its connection to
// /mcp dropped after the host wrote the watch) calls it again: under the
// idempotency_key it chose, the second call is answered the first
// watch and makes none; without one, each call is a watch of its own.
// Keys are the principal's own, as over REST, and one that is not a key
// is refused before anything is written.
func TestMCPRegisterRetriedUnderItsKeyMakesOneWatch(t *testing.T) {
	h := newMCPHost(t)
	s := h.connect(t, tokenAgent1, nil)
	other := h.connect(t, tokenAgent2, nil)
	args := func(recipient, key string) map[string]any {
		a := map[string]any{"kind": "timer", "params": map[string]any{"at": t0.Add(time.Hour).Format(time.RFC3339)}, "recipient": recipient}
		if key != "" {
			a["idempotency_key"] = key
		}
		return a
	}
	count := func(recipient string) int {
		ws, _, err := h.st.List(context.Background(), store.Filter{Recipient: recipient})
		if err != nil {
			t.Fatal(err)
		}
		return len(ws)
	}
	var first, again api.Watch
	if res := mcptest.CallTool(t, s, "register_watch", args("agent-1", "a1b2c3"), &first); res.IsError {
		t.Fatalf("register: %+v", res.Content)
	}
	if res := mcptest.CallTool(t, s, "register_watch", args("agent-1", "a1b2c3"), &again); res.IsError {
		t.Fatalf("register again: %+v", res.Content)
	}
	if again.ID != first.ID || count("agent-1") != 1 {
		t.Fatalf("the call again under its key: watch %s after %s, %d watches; want the first answered, one watch", again.ID, first.ID, count("agent-1"))
	}
	// Another principal's key is its own.
	var theirs api.Watch
	if res := mcptest.CallTool(t, other, "register_watch", args("agent-2", "a1b2c3"), &theirs); res.IsError || theirs.ID == first.ID || count("agent-2") != 1 {
		t.Fatalf("another principal under the same key: %+v %s", res.Content, theirs.ID)
	}
	// Another call under the key is refused; a key that is not one too.
	if e := mcptest.ToolErr(t, mcptest.CallTool(t, s, "register_watch", args("agent-1-b", "a1b2c3"), nil)); e.Code != api.CodeIdempotencyKeyReused {
		t.Fatalf("another call under the key: %+v, want idempotency_key_reused", e)
	}
	if e := mcptest.ToolErr(t, mcptest.CallTool(t, s, "register_watch", args("agent-1", "two words"), nil)); e.Code != api.CodeInvalidIdempotencyKey || e.Field != "idempotency_key" {
		t.Fatalf("a key that is not one: %+v, want invalid_idempotency_key on idempotency_key", e)
	}
	// Without a key, each call is its own watch.
	for range 2 {
		if res := mcptest.CallTool(t, s, "register_watch", args("agent-1", ""), nil); res.IsError {
			t.Fatalf("register: %+v", res.Content)
		}
	}
	if n := count("agent-1"); n != 3 {
		t.Fatalf("%d watches, want 3", n)
	}
}
