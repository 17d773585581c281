package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A phase, activity and reminder opt-in survive a client replacing the
// record (PutRecipient keeps them) and a reopen of the store; reports for
// a recipient that does not exist create nothing.
func TestRecipientReportsAreKept(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTest(t, dir)
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	if _, _, err := s.PutRecipient(ctx, RecipientRecord{ID: "w", Status: StatusRunning, CreatedAt: at, UpdatedAt: at}); err != nil {
		t.Fatal(err)
	}
	p := Phase{Name: "build", Text: "the parser", ReportedBy: "w", ReportedAt: at}
	if _, err := s.ReportPhase(ctx, "w", p); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReportActivity(ctx, "w", 2, 5, at); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReportActivity(ctx, "w", 1, 0, at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetReminder(ctx, "w", 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	// A client's PUT of the whole record says nothing of the reports.
	if _, _, err := s.PutRecipient(ctx, RecipientRecord{ID: "w", Status: StatusPaused, UpdatedAt: at}); err != nil {
		t.Fatal(err)
	}
	check := func(s *Badger, when string) {
		t.Helper()
		r, err := s.GetRecipient(ctx, "w")
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if r.Status != StatusPaused || r.Phase == nil || *r.Phase != p || r.Activity.Replies != 3 || r.Activity.ToolCalls != 5 ||
			!r.Activity.At.Equal(at.Add(time.Minute)) || r.ReminderEvery != Duration(10*time.Minute) {
			t.Fatalf("%s: %+v %+v", when, r, r.Phase)
		}
	}
	check(s, "after the put")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir)
	check(s, "after a reopen")

	for name, f := range map[string]func() error{
		"phase":    func() error { _, err := s.ReportPhase(ctx, "nobody", p); return err },
		"activity": func() error { _, err := s.ReportActivity(ctx, "nobody", 1, 1, at); return err },
		"reminder": func() error { _, err := s.SetReminder(ctx, "nobody", time.Minute); return err },
	} {
		if err := f(); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s for no recipient: %v", name, err)
		}
	}
	if _, err := s.GetRecipient(ctx, "nobody"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a report created a recipient: %v", err)
	}
}

// The counts only grow, and stop at the largest uint64 rather than wrap
// to a small number (which would read as activity that moved).
func TestActivitySaturates(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	if _, _, err := s.PutRecipient(ctx, RecipientRecord{ID: "w", Status: StatusRunning}); err != nil {
		t.Fatal(err)
	}
	max := ^uint64(0)
	if _, err := s.ReportActivity(ctx, "w", max-1, 0, time.Time{}); err != nil {
		t.Fatal(err)
	}
	r, err := s.ReportActivity(ctx, "w", 5, 0, time.Time{})
	if err != nil || r.Activity.Replies != max {
		t.Fatalf("%d %v, want %d", r.Activity.Replies, err, max)
	}
	if _, err := s.SetReminder(ctx, "w", -time.Second); err == nil {
		t.Fatal("a negative interval was stored")
	}
}
