package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/mcptest"
	"github.com/vigilhq/vigil/internal/observe"
	"github.com/vigilhq/vigil/store"
)

// unknownWorkID is a well-formed Work id no Work has.
const unknownWorkID = "01m8nhtng4ra8tgz0tmrscbt6g"

// wholeAnswer is everything a client sees of a response but its Date:
// the status, every other header, the body.
func wholeAnswer(resp *http.Response, body []byte) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d\n", resp.StatusCode)
	keys := make([]string, 0, len(resp.Header))
	for k := range resp.Header {
		if k != "Date" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(resp.Header[k], ", "))
	}
	b.Write(body)
	return b.String()
}

func threadWatchBody(work, recipient string) string {
	return `{"kind":"observe.thread","params":{"work_id":"` + work + `","after":0},"recipient":{"id":"` + recipient + `"}}`
}

// Principal B (agent-2: its own recipient, no scopes) registering an
// observe.thread watch on A's Work for its own recipient is answered
// exactly as GET /api/v1/work/{id} answers it, and as an unknown id is
// answered: 404, the whole response the same. It changes nothing: no
// row, the Work's consumed input, B's mailbox (after the scheduler has
// run); it is counted and logged as a hidden id. A's own wait, registered
// after it, carries item 1.
func TestThreadWatchOnAWorkItMayNotReadAnswersAsUnknown(t *testing.T) {
	ctx := context.Background()
	f := newGrantsFixture(t, ctx)
	own, other := grantPrincipals[0].token, grantPrincipals[1].token
	id := f.ids["{workA}"]
	f.sched.Tick(ctx, t0) // the fixture's own watches settle first
	before, counted := f.state(t), len(f.refusals.all())

	hidden, hb := f.send(t, "POST", "/api/v1/watches", threadWatchBody(id, "agent-2"), other)
	none, nb := f.send(t, "POST", "/api/v1/watches", threadWatchBody(unknownWorkID, "agent-2"), other)
	shown, sb := f.send(t, "GET", "/api/v1/work/"+id, "", other)
	if hidden.StatusCode != 404 {
		t.Fatalf("B's wait on A's Work: %d %s", hidden.StatusCode, hb)
	}
	if got, want := wholeAnswer(hidden, hb), wholeAnswer(shown, sb); got != want {
		t.Errorf("the registration answers\n%s\nwhere GET /api/v1/work/{id} answers\n%s", got, want)
	}
	if got, want := strings.ReplaceAll(wholeAnswer(hidden, hb), id, unknownWorkID), wholeAnswer(none, nb); got != want {
		t.Errorf("the registration answers\n%s\nwhere an unknown id answers\n%s", got, want)
	}
	f.sched.Tick(ctx, t0) // a watch armed by mistake would fire now
	if after := f.state(t); after != before {
		t.Fatalf("B's refused wait changed the store:\nbefore %s\nafter  %s", before, after)
	}
	msgs, err := f.st.ReadMailbox(ctx, "agent-2", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m.Kind == observe.WorkKind {
			t.Fatalf("B's mailbox holds a wake of A's Work: %+v", m)
		}
	}
	if w, err := f.st.GetWork(ctx, mustID(t, id)); err != nil || w.Consumed != 0 || len(w.Cursors) != 0 {
		t.Fatalf("A's Work after B's wait: %+v %v", w, err)
	}
	// Counted as the hidden read is (an unknown id is no refusal).
	if got := f.refusals.all()[counted:]; !slices.Equal(got, []string{"POST /api/v1/watches not_found", "GET /api/v1/work/:id not_found"}) {
		t.Errorf("counted %v, want the hidden registration and the hidden read", got)
	}
	if logs := f.logs.String(); !strings.Contains(logs, "hidden: principal agent-2 may not see Work "+id) {
		t.Errorf("the log does not say why the Work was hidden: %s", logs)
	}

	resp, b := f.send(t, "POST", "/api/v1/watches", `{"kind":"observe.thread","params":{"work_id":"{workA}"},"recipient":{"id":"agent-1"}}`, own)
	var w api.Watch
	if err := json.Unmarshal(b, &w); resp.StatusCode != 201 || err != nil || !strings.Contains(string(w.Params), `"after":0`) {
		t.Fatalf("A's wait: %d %s", resp.StatusCode, b)
	}
	f.sched.Tick(ctx, t0)
	if items := wakeItems(t, f.st, "agent-1"); !slices.Equal(items, []int{1}) {
		t.Fatalf("A's wait carried %v, want item 1", items)
	}
}

// A wake to another recipient that may read the Work (the operator's
// own) moves that recipient's cursor alone: the Work's consumed input
// stays, and A's wait registered after it still carries item 1.
func TestAnotherReadersWakeConsumesNothingOfTheWorks(t *testing.T) {
	ctx := context.Background()
	f := newGrantsFixture(t, ctx)
	own, ops := grantPrincipals[0].token, grantPrincipals[3].token
	id := f.ids["{workA}"]
	register := func(token, recipient string) api.Watch {
		t.Helper()
		resp, b := f.send(t, "POST", "/api/v1/watches", `{"kind":"observe.thread","params":{"work_id":"{workA}"},"recipient":{"id":"`+recipient+`"}}`, token)
		var w api.Watch
		if err := json.Unmarshal(b, &w); resp.StatusCode != 201 || err != nil {
			t.Fatalf("%s's wait: %d %s", recipient, resp.StatusCode, b)
		}
		return w
	}
	register(ops, "ops")
	f.sched.Tick(ctx, t0)
	if items := wakeItems(t, f.st, "ops"); !slices.Equal(items, []int{1}) {
		t.Fatalf("the operator's wait carried %v", items)
	}
	if w, err := f.st.GetWork(ctx, mustID(t, id)); err != nil || w.Consumed != 0 || w.ConsumedBy("ops") != 1 {
		t.Fatalf("the Work after the operator's wake: %+v %v", w, err)
	}
	if w := register(own, "agent-1"); !strings.Contains(string(w.Params), `"after":0`) {
		t.Fatalf("A's wait starts at %s", w.Params)
	}
	f.sched.Tick(ctx, t0)
	if items := wakeItems(t, f.st, "agent-1"); !slices.Equal(items, []int{1}) {
		t.Fatalf("A's wait carried %v, want item 1", items)
	}
	if w := register(ops, "ops"); !strings.Contains(string(w.Params), `"after":1`) {
		t.Fatalf("the operator's next wait starts at %s", w.Params)
	}
}

// The same over MCP, whose tools call the API in process with the
// session's token: agent-2's register_watch on a Work only agent-1 may
// read (it claimed it) is the tool error of an unknown id and of
// show_work on it, and writes nothing; agent-1's is admitted.
func TestThreadWatchOnAWorkItMayNotReadOverMCP(t *testing.T) {
	h := newMCPHost(t)
	ctx := context.Background()
	if _, err := h.ob.Record(ctx, "tester", "support", observe.Record{Item: "m1", Thread: "T", Text: "agent-1's thread"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ob.RouteAll(ctx); err != nil {
		t.Fatal(err)
	}
	ws, err := h.st.ListWork(ctx, "support", "")
	if err != nil || len(ws) != 1 {
		t.Fatalf("work %+v %v", ws, err)
	}
	id := ws[0].ID.String()
	if _, _, err := h.ob.ClaimWork(ctx, ws[0].ID, "agent-1"); err != nil {
		t.Fatal(err)
	}
	work, _ := h.st.GetWork(ctx, ws[0].ID)
	answer := func(res *mcp.CallToolResult) string {
		b, _ := json.Marshal(res)
		return string(b)
	}
	register := func(work, recipient string) map[string]any {
		return map[string]any{"kind": "observe.thread", "params": map[string]any{"work_id": work, "after": 0}, "recipient": recipient}
	}
	b := h.connect(t, tokenAgent2, nil)
	hidden := mcptest.CallTool(t, b, "register_watch", register(id, "agent-2"), nil)
	if e := mcptest.ToolErr(t, hidden); e.Code != api.CodeNotFound {
		t.Fatalf("agent-2's wait on agent-1's Work: %+v", e)
	}
	if got, want := answer(hidden), answer(mcptest.CallTool(t, b, "show_work", map[string]any{"id": id}, nil)); got != want {
		t.Errorf("register_watch answers\n%s\nwhere show_work answers\n%s", got, want)
	}
	if got, want := strings.ReplaceAll(answer(hidden), id, unknownWorkID), answer(mcptest.CallTool(t, b, "register_watch", register(unknownWorkID, "agent-2"), nil)); got != want {
		t.Errorf("register_watch answers\n%s\nwhere an unknown id answers\n%s", got, want)
	}
	h.sched.Tick(ctx, h.clock.Now())
	if rows, _, err := h.st.List(ctx, store.Filter{Recipient: "agent-2"}); err != nil || len(rows) != 0 {
		t.Fatalf("agent-2's watches: %+v %v", rows, err)
	}
	if msgs, err := h.st.ReadMailbox(ctx, "agent-2", 0, 10); err != nil || len(msgs) != 0 {
		t.Fatalf("agent-2's mailbox: %+v %v", msgs, err)
	}
	if got, _ := h.st.GetWork(ctx, ws[0].ID); got.Consumed != work.Consumed || len(got.Cursors) != 0 {
		t.Fatalf("the Work after agent-2's wait: %+v, before %+v", got, work)
	}
	a := h.connect(t, tokenAgent1, nil)
	var w api.Watch
	if res := mcptest.CallTool(t, a, "register_watch", register(id, "agent-1"), &w); res.IsError || w.State != "pending" {
		t.Fatalf("agent-1's wait on its Work: %+v %+v", res.Content, w)
	}
}

// wakeItems are the item numbers of recipient's last new_items wake.
func wakeItems(t *testing.T, st *store.Store, recipient string) []int {
	t.Helper()
	msgs, err := st.ReadMailbox(context.Background(), recipient, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Outcome.Result != "new_items" {
			continue
		}
		var d observe.ThreadDetail
		if err := json.Unmarshal(msgs[i].Outcome.Detail, &d); err != nil {
			t.Fatal(err)
		}
		var ns []int
		for _, it := range d.Items {
			ns = append(ns, it.N)
		}
		return ns
	}
	t.Fatalf("%s has no new_items wake: %+v", recipient, msgs)
	return nil
}
