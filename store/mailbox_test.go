package store

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestRecipients(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	if _, err := s.GetRecipient(ctx, "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
	r, err := s.EnsureRecipient(ctx, "a", t0)
	if err != nil || r.Status != StatusRunning || r.Webhook != nil || !r.CreatedAt.Equal(t0) {
		t.Fatalf("ensure: %+v %v", r, err)
	}
	r.Status = StatusPaused
	r.Webhook = &Webhook{URL: "https://example.org/hook", Secret: "whsec_x"}
	r.UpdatedAt = t0.Add(time.Hour)
	r.CreatedAt = time.Time{}
	prev, existed, err := s.PutRecipient(ctx, r)
	if err != nil || !existed || prev.Status != StatusRunning {
		t.Fatalf("put: %+v %v %v", prev, existed, err)
	}
	got, _ := s.GetRecipient(ctx, "a")
	if got.Status != StatusPaused || got.Webhook.URL != "https://example.org/hook" || !got.CreatedAt.Equal(t0) {
		t.Fatalf("after put: %+v", got)
	}
	// Ensure never changes an existing recipient.
	if again, _ := s.EnsureRecipient(ctx, "a", t0.Add(time.Hour)); again.Status != StatusPaused {
		t.Fatalf("ensure changed it: %+v", again)
	}
	if _, _, err := s.PutRecipient(ctx, RecipientRecord{ID: "b", Status: "sleeping"}); err == nil {
		t.Fatal("unknown status stored")
	}
	all, _ := s.ListRecipients(ctx)
	if len(all) != 1 {
		t.Fatalf("list: %+v", all)
	}
	if err := s.DeleteRecipient(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRecipient(ctx, "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

func TestMailbox(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	ids := newIDs()
	msg := func(typ MessageType) Message {
		id, _ := NewID(t0, ids)
		return Message{ID: id, Kind: "timer", Type: typ, Outcome: Outcome{Result: string(typ)}, At: t0}
	}
	if _, _, err := s.AppendIfRunning(ctx, "a", msg(MessageFired)); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("unknown recipient: %v", err)
	}
	_, _ = s.EnsureRecipient(ctx, "a", t0)
	_, _ = s.EnsureRecipient(ctx, "ab", t0)
	for i, typ := range []MessageType{MessageFired, MessageExpired, MessageChanged} {
		m, _, err := s.AppendIfRunning(ctx, "a", msg(typ))
		if err != nil || m.Seq != uint64(i+1) {
			t.Fatalf("append %d: %+v %v", i, m, err)
		}
	}
	// Another recipient whose id extends this one's has its own sequence.
	if m, _, _ := s.AppendIfRunning(ctx, "ab", msg(MessageFired)); m.Seq != 1 {
		t.Fatalf("ab seq %d", m.Seq)
	}
	got, err := s.ReadMailbox(ctx, "a", 0, 100)
	if err != nil || len(got) != 3 || got[0].Type != MessageFired || got[2].Seq != 3 {
		t.Fatalf("read all: %+v %v", got, err)
	}
	got, _ = s.ReadMailbox(ctx, "a", 1, 1)
	if len(got) != 1 || got[0].Seq != 2 {
		t.Fatalf("read after 1, limit 1: %+v", got)
	}
	if got, _ = s.ReadMailbox(ctx, "a", 3, 10); len(got) != 0 {
		t.Fatalf("read past the end: %+v", got)
	}
	// A paused recipient rejects.
	r, _ := s.GetRecipient(ctx, "a")
	r.Status = StatusPaused
	_, _, _ = s.PutRecipient(ctx, r)
	if _, _, err := s.AppendIfRunning(ctx, "a", msg(MessageFired)); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("paused: %v", err)
	}
	// Old messages are pruned with the settled rows.
	if n, err := s.Prune(ctx, t0.Add(time.Second)); err != nil || n != 4 {
		t.Fatalf("prune: %d %v", n, err)
	}
	if got, _ = s.ReadMailbox(ctx, "a", 0, 10); len(got) != 0 {
		t.Fatalf("kept: %+v", got)
	}
}

// Concurrent appends never share or skip a sequence number.
func TestMailboxSequenceUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	_, _ = s.EnsureRecipient(ctx, "a", t0)
	var wg sync.WaitGroup
	const n = 200
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n / 4 {
				if _, _, err := s.AppendIfRunning(ctx, "a", Message{Kind: "k", Type: MessageFired, At: t0}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got, _ := s.ReadMailbox(ctx, "a", 0, 2*n)
	if len(got) != n {
		t.Fatalf("%d messages", len(got))
	}
	for i, m := range got {
		if m.Seq != uint64(i+1) {
			t.Fatalf("seq %d at %d", m.Seq, i)
		}
	}
}
