package store

import (
	"context"
	"testing"

	"pgregory.net/rapid"
)

// The count CountPending keeps agrees with an exact walk after any mix of
// registrations, settlements and cancels, for each recipient, and it
// answers away from the bound without walking.
func TestPendingCountFollowsTheCommits(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	ids := newIDs()
	recipients := []string{"agent-a", "agent-b"}
	for _, r := range recipients { // running, so a settlement can mail
		if _, err := s.EnsureRecipient(ctx, r, t0); err != nil {
			t.Fatal(err)
		}
	}
	var pending []Watch
	rapid.Check(t, func(rt *rapid.T) {
		for range rapid.IntRange(1, 40).Draw(rt, "ops") {
			switch op := rapid.IntRange(0, 3).Draw(rt, "op"); {
			case op == 0 || len(pending) == 0:
				w := pendingWatch(t, ids, rapid.SampledFrom(recipients).Draw(rt, "recipient"), t0)
				if err := s.Create(ctx, w); err != nil {
					rt.Fatal(err)
				}
				pending = append(pending, w)
			case op == 3: // settled with its message, as the scheduler settles
				i := rapid.IntRange(0, len(pending)-1).Draw(rt, "which")
				out := Outcome{Result: "done"}
				if _, _, err := s.SettleAndMail(ctx, pending[i].ID, Settlement{State: Fired, Outcome: &out, SettledAt: t0}, Message{Kind: "timer", Type: MessageFired, Outcome: out}); err != nil {
					rt.Fatal(err)
				}
				pending = append(pending[:i], pending[i+1:]...)
			default:
				i := rapid.IntRange(0, len(pending)-1).Draw(rt, "which")
				state := map[int]State{1: Fired, 2: Cancelled}[op]
				if _, err := s.Settle(ctx, pending[i].ID, Settlement{State: state, Receipt: ReceiptNone, SettledAt: t0}); err != nil {
					rt.Fatal(err)
				}
				pending = append(pending[:i], pending[i+1:]...)
			}
			for _, r := range recipients {
				got, err := s.CountPending(ctx, r, 0)
				if err != nil {
					rt.Fatal(err)
				}
				want, err := s.countPending(ctx, r, 0)
				if err != nil {
					rt.Fatal(err)
				}
				if got != want {
					rt.Fatalf("%s: the kept count is %d, the walk counts %d", r, got, want)
				}
			}
		}
	})
	// Counted once, a recipient is answered from the kept count.
	if _, ok := s.pending.get("agent-a"); !ok {
		t.Fatal("agent-a has no kept count after being counted")
	}
}

// Near the bound the count is exact, whatever the kept one says: a count
// that drifted (a commit that raced a recount) cannot refuse a
// registration wrongly, or let one past the bound.
func TestPendingCountIsExactNearTheBound(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	ids := newIDs()
	for range 40 {
		if err := s.Create(ctx, pendingWatch(t, ids, "agent-a", t0)); err != nil {
			t.Fatal(err)
		}
	}
	s.pending.set("agent-a", 10) // drifted low, but within the margin of a bound of 40
	if n, err := s.CountPending(ctx, "agent-a", 40); err != nil || n != 40 {
		t.Fatalf("near the bound: %d, %v; want the exact 40", n, err)
	}
	s.pending.set("agent-a", 1000) // drifted far high
	if n, err := s.CountPending(ctx, "agent-a", 2000); err != nil || n != 1000 {
		t.Fatalf("away from the bound the kept count answers: %d, %v", n, err)
	}
	if n, err := s.CountPending(ctx, "agent-a", 1001); err != nil || n != 40 {
		t.Fatalf("near the bound again: %d, %v; want the exact 40", n, err)
	}
}

// A kept count moves only once the recipient has been counted, and a
// count that drifted low (a settle told after a recount that saw it)
// stays at zero rather than going below.
func TestPendingCountsAdd(t *testing.T) {
	p := newPendingCounts()
	p.add("a", 1)
	if _, ok := p.get("a"); ok {
		t.Fatal("a recipient never counted has a kept count")
	}
	p.set("a", 0)
	p.add("a", -1)
	if n, ok := p.get("a"); !ok || n != 0 {
		t.Fatalf("kept count %d (%v), want 0", n, ok)
	}
	p.add("a", 2)
	if n, _ := p.get("a"); n != 2 {
		t.Fatalf("kept count %d, want 2", n)
	}
}
