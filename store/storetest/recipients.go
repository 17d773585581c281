package storetest

import (
	"errors"
	"time"

	"github.com/vigilhq/vigil/store"
)

func recipientCases() []testCase {
	return []testCase{
		{"EnsurePutGetListDelete", testRecipientRecords},
		{"PhaseActivityReminderKept", testRecipientReports},
		{"ActivitySaturates", testActivitySaturates},
	}
}

// EnsureRecipient creates a running recipient only if it is new; Put
// replaces a record but keeps its creation time, and answers the one
// before; an unknown status is refused; Delete removes it once.
func testRecipientRecords(e *env) {
	if _, err := e.b.GetRecipient(e.ctx, "a"); !errors.Is(err, store.ErrNotFound) {
		e.Fatalf("an absent recipient: %v, want ErrNotFound", err)
	}
	r, err := e.b.EnsureRecipient(e.ctx, "a", t0)
	if err != nil || r.Status != store.StatusRunning || r.Webhook != nil || !r.CreatedAt.Equal(t0) {
		e.Fatalf("ensure: %+v %v", r, err)
	}
	r.Status = store.StatusPaused
	r.Webhook = &store.Webhook{URL: "https://example.org/hook", Secret: "whsec_x"}
	r.UpdatedAt, r.CreatedAt = t0.Add(time.Hour), time.Time{}
	prev, existed, err := e.b.PutRecipient(e.ctx, r)
	if err != nil || !existed || prev.Status != store.StatusRunning {
		e.Fatalf("put: %+v %v %v", prev, existed, err)
	}
	got, _ := e.b.GetRecipient(e.ctx, "a")
	if got.Status != store.StatusPaused || got.Webhook == nil || got.Webhook.URL != "https://example.org/hook" || !got.CreatedAt.Equal(t0) {
		e.Fatalf("after put: %+v", got)
	}
	if again, _ := e.b.EnsureRecipient(e.ctx, "a", t0.Add(time.Hour)); again.Status != store.StatusPaused {
		e.Fatalf("Ensure changed an existing recipient: %+v", again)
	}
	if _, existed, err := e.b.PutRecipient(e.ctx, store.RecipientRecord{ID: "b", Status: store.StatusRunning, CreatedAt: t0}); err != nil || existed {
		e.Fatalf("put new: %v %v", existed, err)
	}
	if _, _, err := e.b.PutRecipient(e.ctx, store.RecipientRecord{ID: "c", Status: "sleeping"}); err == nil {
		e.Fatal("an unknown status was stored")
	}
	all, err := e.b.ListRecipients(e.ctx)
	if err != nil || len(all) != 2 {
		e.Fatalf("list: %+v %v", all, err)
	}
	if err := e.b.DeleteRecipient(e.ctx, "a"); err != nil {
		e.Fatal(err)
	}
	if err := e.b.DeleteRecipient(e.ctx, "a"); !errors.Is(err, store.ErrNotFound) {
		e.Fatalf("a second delete: %v, want ErrNotFound", err)
	}
	if _, err := e.b.GetRecipient(e.ctx, "a"); !errors.Is(err, store.ErrNotFound) {
		e.Fatalf("a deleted recipient: %v", err)
	}
}

// A phase, the activity counts and a reminder opt-in are kept when a
// client replaces the record; reports for a recipient that does not
// exist create nothing.
func testRecipientReports(e *env) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	if _, _, err := e.b.PutRecipient(e.ctx, store.RecipientRecord{ID: "w", Status: store.StatusRunning, CreatedAt: at, UpdatedAt: at}); err != nil {
		e.Fatal(err)
	}
	p := store.Phase{Name: "build", Text: "the parser", ReportedBy: "w", ReportedAt: at}
	if _, err := e.b.ReportPhase(e.ctx, "w", p); err != nil {
		e.Fatal(err)
	}
	if _, err := e.b.ReportActivity(e.ctx, "w", 2, 5, at); err != nil {
		e.Fatal(err)
	}
	if _, err := e.b.ReportActivity(e.ctx, "w", 1, 0, at.Add(time.Minute)); err != nil {
		e.Fatal(err)
	}
	if _, err := e.b.SetReminder(e.ctx, "w", 10*time.Minute); err != nil {
		e.Fatal(err)
	}
	if _, _, err := e.b.PutRecipient(e.ctx, store.RecipientRecord{ID: "w", Status: store.StatusPaused, UpdatedAt: at}); err != nil {
		e.Fatal(err)
	}
	r, err := e.b.GetRecipient(e.ctx, "w")
	if err != nil || r.Status != store.StatusPaused || r.Phase == nil || *r.Phase != p || r.Activity.Replies != 3 || r.Activity.ToolCalls != 5 ||
		!r.Activity.At.Equal(at.Add(time.Minute)) || r.ReminderEvery != store.Duration(10*time.Minute) {
		e.Fatalf("after the put: %+v %v", r, err)
	}
	for name, f := range map[string]func() error{
		"phase":    func() error { _, err := e.b.ReportPhase(e.ctx, "nobody", p); return err },
		"activity": func() error { _, err := e.b.ReportActivity(e.ctx, "nobody", 1, 1, at); return err },
		"reminder": func() error { _, err := e.b.SetReminder(e.ctx, "nobody", time.Minute); return err },
	} {
		if err := f(); !errors.Is(err, store.ErrNotFound) {
			e.Errorf("%s for no recipient: %v, want ErrNotFound", name, err)
		}
	}
	if _, err := e.b.GetRecipient(e.ctx, "nobody"); !errors.Is(err, store.ErrNotFound) {
		e.Fatalf("a report created a recipient: %v", err)
	}
}

// The activity counts only grow and stop at the largest uint64 rather
// than wrap; a negative reminder interval is refused.
func testActivitySaturates(e *env) {
	if _, _, err := e.b.PutRecipient(e.ctx, store.RecipientRecord{ID: "w", Status: store.StatusRunning}); err != nil {
		e.Fatal(err)
	}
	top := ^uint64(0)
	if _, err := e.b.ReportActivity(e.ctx, "w", top-1, 0, time.Time{}); err != nil {
		e.Fatal(err)
	}
	r, err := e.b.ReportActivity(e.ctx, "w", 5, 0, time.Time{})
	if err != nil || r.Activity.Replies != top {
		e.Fatalf("%d %v, want %d", r.Activity.Replies, err, top)
	}
	if _, err := e.b.SetReminder(e.ctx, "w", -time.Second); err == nil {
		e.Fatal("a negative interval was stored")
	}
}
