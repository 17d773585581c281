package storetest

import (
	"errors"
	"time"

	"github.com/vigilhq/vigil/store"
)

func heldAsideCases() []testCase {
	return []testCase{
		{"SkippedByReadsListsAndPrunes", testHeldAside},
	}
}

func (e *env) holdAside(w store.Watch) {
	e.Helper()
	if e.o.HoldAside == nil || e.o.StillHeld == nil {
		e.Skip("the backend gives no HoldAside and StillHeld hooks")
	}
	e.o.HoldAside(e.T, e.b, w)
}

// A row this build cannot decode is held aside: Get says ErrNotFound,
// List and ListPage step over it and count it, no transition or prune
// rewrites or deletes it, and it fails no operation on another row.
func testHeldAside(e *env) {
	e.running("a", "")
	pendingFuture := e.watch("a", t0)
	settledFuture := e.watch("a", t0)
	settledFuture.State = store.Fired
	e.holdAside(pendingFuture)
	e.holdAside(settledFuture)
	other, _ := e.settleMailed("a", t0)
	live := e.created("a", t0)

	for _, id := range []store.ID{pendingFuture.ID, settledFuture.ID} {
		if _, err := e.b.Get(e.ctx, id); !errors.Is(err, store.ErrNotFound) {
			e.Fatalf("Get of a held-aside row: %v, want ErrNotFound", err)
		}
	}
	rows, held, err := e.b.List(e.ctx, store.Filter{Recipient: "a"})
	if err != nil || len(rows) != 2 || held != 2 {
		e.Fatalf("List: %d rows, %d held, %v; want 2 and 2", len(rows), held, err)
	}
	pageHeld, pageRows, after := 0, 0, store.ID{}
	for range 100 {
		p, err := e.b.ListPage(e.ctx, store.Query{Filter: store.Filter{Recipient: "a"}, After: after, Limit: 1})
		if err != nil {
			e.Fatal(err)
		}
		pageHeld += p.HeldAside
		pageRows += len(p.Watches)
		if p.Next == (store.ID{}) {
			break
		}
		after = p.Next
	}
	if pageRows != 2 || pageHeld != 2 {
		e.Fatalf("ListPage: %d rows, %d held over the pages; want 2 and 2", pageRows, pageHeld)
	}
	// Transitions of a held-aside row fail and rewrite nothing.
	if _, err := e.b.Settle(e.ctx, pendingFuture.ID, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0}); err == nil {
		e.Fatal("settled a held-aside row")
	}
	if _, err := e.b.SetReceipt(e.ctx, settledFuture.ID, store.ReceiptDelivered); err == nil {
		e.Fatal("set the receipt of a held-aside row")
	}
	if err := e.b.Create(e.ctx, pendingFuture); err == nil {
		e.Fatal("created a row over a held-aside one")
	}
	// Prunes step over it, however old.
	far := t0.Add(365 * 24 * time.Hour)
	if _, err := e.b.Prune(e.ctx, far); err != nil {
		e.Fatal(err)
	}
	for {
		n, err := e.b.PruneOldest(e.ctx, store.RetainedSettled, far, 10)
		if err != nil {
			e.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	for _, id := range []store.ID{pendingFuture.ID, settledFuture.ID} {
		if !e.o.StillHeld(e.T, e.b, id) {
			e.Fatalf("the held-aside row %s was changed or deleted", id)
		}
	}
	// The other rows were served around it.
	if _, err := e.b.Get(e.ctx, other.ID); !errors.Is(err, store.ErrNotFound) {
		e.Fatalf("the readable settled row beside it was not pruned: %v", err)
	}
	if _, err := e.b.Get(e.ctx, live.ID); err != nil {
		e.Fatalf("the pending row beside it: %v", err)
	}
}

func lifetimeCases() []testCase {
	return []testCase{
		{"ReopenKeepsWhatWasAcknowledged", testReopen},
		{"Close", testClose},
	}
}

// What a call acknowledged survives a restart, and the sequences go on
// where they were: the next message, event and route continue, never
// reuse, and a push left sending is found by RecoverPushes.
func testReopen(e *env) {
	if e.o.Reopen == nil {
		e.Skip("the backend gives no Reopen hook")
	}
	e.running("a", "https://example.org/hook")
	if _, err := e.b.ReportPhase(e.ctx, "a", store.Phase{Name: "build", ReportedBy: "a", ReportedAt: t0}); err != nil {
		e.Fatal(err)
	}
	if _, err := e.b.ReportActivity(e.ctx, "a", 2, 5, t0); err != nil {
		e.Fatal(err)
	}
	if _, err := e.b.SetReminder(e.ctx, "a", 10*time.Minute); err != nil {
		e.Fatal(err)
	}
	w := e.created("a", t0)
	next := t0.Add(time.Hour)
	if err := e.b.SetNextCheck(e.ctx, w.ID, next); err != nil {
		e.Fatal(err)
	}
	e.settleMailed("a", t0)
	e.settleMailed("a", t0)
	if _, _, _, err := e.b.BeginPush(e.ctx, "a", 1, t0); err != nil {
		e.Fatal(err)
	}
	if _, _, err := e.b.AppendEvent(e.ctx, store.Event{Stream: "s", Key: "k1", Type: "t", OccurredAt: t0, Payload: []byte(`{}`)}); err != nil {
		e.Fatal(err)
	}
	if _, err := e.b.RouteBatch(e.ctx, []store.RouteStep{e.workStep(1, "T", "a")}); err != nil {
		e.Fatal(err)
	}

	e.reopen()

	if rec, err := e.b.GetRecipient(e.ctx, "a"); err != nil || rec.Phase == nil || rec.Phase.Name != "build" || !rec.Webhook.Active() ||
		rec.Activity.Replies != 2 || rec.Activity.ToolCalls != 5 || rec.ReminderEvery != store.Duration(10*time.Minute) {
		e.Fatalf("the recipient after a reopen: %+v %v", rec, err)
	}
	if sc, ok := e.schedules()[w.ID]; !ok || !sc.Next.Equal(next) {
		e.Fatalf("the pending row's schedule after a reopen: %+v %v", sc, ok)
	}
	recovered, err := e.b.RecoverPushes(e.ctx, t0.Add(time.Minute))
	if err != nil || len(recovered) != 1 || recovered[0].Seq != 1 || recovered[0].State != store.PushUnknown {
		e.Fatalf("recover after a reopen: %+v %v", recovered, err)
	}
	if live := e.live(); len(live) != 1 || live[0].Seq != 2 {
		e.Fatalf("live pushes after a reopen: %+v", live)
	}
	if _, mailed := e.settleMailed("a", t0); mailed.Message == nil || mailed.Message.Seq != 3 {
		e.Fatalf("the first message after a reopen: %+v, want seq 3", mailed)
	}
	if ev, dup, err := e.b.AppendEvent(e.ctx, store.Event{Stream: "s", Key: "k1", Type: "t", OccurredAt: t0, Payload: []byte(`{}`)}); err != nil || !dup || ev.Seq != 1 {
		e.Fatalf("a repeat after a reopen: %+v %v %v", ev, dup, err)
	}
	if ev, _, err := e.b.AppendEvent(e.ctx, store.Event{Stream: "s", Key: "k2", Type: "t", OccurredAt: t0, Payload: []byte(`{}`)}); err != nil || ev.Seq != 2 {
		e.Fatalf("the first event after a reopen: %+v %v, want seq 2", ev, err)
	}
	if cur, err := e.b.RouterCursor(e.ctx, "observe"); err != nil || cur != 1 {
		e.Fatalf("the router cursor after a reopen: %d %v", cur, err)
	}
}

// Close succeeds, and a call after it fails rather than succeed on a
// closed backend.
func testClose(e *env) {
	w := e.created("a", t0)
	if err := e.b.Close(); err != nil {
		e.Fatalf("Close: %v", err)
	}
	if err := e.b.Create(e.ctx, e.watch("a", t0)); err == nil {
		e.Fatal("a Create after Close succeeded")
	}
	if _, err := e.b.Get(e.ctx, w.ID); err == nil {
		e.Fatal("a Get after Close succeeded")
	}
}
