package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// settleAt creates a pending row for recipient a and settles it at at,
// mailing its message; it returns the row.
func settleAt(t *testing.T, s *Badger, ids seqReader, at time.Time) Watch {
	t.Helper()
	ctx := context.Background()
	w := createdWatch(t, s, ids, "a", at)
	m := firedMessage(t, ids)
	m.At = at
	got, _, err := s.SettleAndMail(ctx, w.ID, Settlement{State: Fired, Outcome: &m.Outcome, SettledAt: at}, m)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func oldest(t *testing.T, s *Badger, c Retained) (time.Time, bool) {
	t.Helper()
	at, ok, err := s.Oldest(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return at, ok
}

// Each class reads its oldest record from its index, and a batch prunes
// oldest first, at most its limit, and never what is at or after the
// cutoff.
func TestPruneOldestSettledAndMessages(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	ids := newIDs()
	runningRecipientFor(t, s, "a", "")
	for _, c := range []Retained{RetainedSettled, RetainedMessages, RetainedPushes, RetainedEvents("fetch")} {
		if _, ok := oldest(t, s, c); ok {
			t.Fatalf("%s: an oldest record in an empty store", c)
		}
	}
	// Settled out of order: the index orders them by time, not by id.
	var rows []Watch
	for _, h := range []int{3, 1, 2, 10} {
		rows = append(rows, settleAt(t, s, ids, t0.Add(time.Duration(h)*time.Hour)))
	}
	pending := createdWatch(t, s, ids, "a", t0)
	for _, c := range []Retained{RetainedSettled, RetainedMessages} {
		if at, ok := oldest(t, s, c); !ok || !at.Equal(t0.Add(time.Hour)) {
			t.Fatalf("%s: oldest %v %v, want %v", c, at, ok, t0.Add(time.Hour))
		}
	}
	cutoff := t0.Add(5 * time.Hour)
	n, err := s.PruneOldest(ctx, RetainedSettled, cutoff, 2)
	if err != nil || n != 2 {
		t.Fatalf("first batch: %d %v", n, err)
	}
	// The two oldest went (1 h and 2 h); 3 h stays until the next batch.
	for i, want := range []bool{true, false, false, true} {
		_, err := s.Get(ctx, rows[i].ID)
		if found := err == nil; found != want {
			t.Fatalf("row settled at +%v: found %v after one batch", rows[i].SettledAt.Sub(t0), found)
		}
	}
	if at, _ := oldest(t, s, RetainedSettled); !at.Equal(t0.Add(3 * time.Hour)) {
		t.Fatalf("oldest after a batch: %v", at)
	}
	if n, err := s.PruneOldest(ctx, RetainedSettled, cutoff, 2); err != nil || n != 1 {
		t.Fatalf("second batch: %d %v", n, err)
	}
	if n, err := s.PruneOldest(ctx, RetainedSettled, cutoff, 2); err != nil || n != 0 {
		t.Fatalf("third batch: %d %v", n, err)
	}
	if _, err := s.Get(ctx, rows[3].ID); err != nil {
		t.Fatalf("the row settled after the cutoff: %v", err)
	}
	if _, err := s.Get(ctx, pending.ID); err != nil {
		t.Fatalf("the pending row: %v", err)
	}
	// The recipient index lost the pruned rows too.
	if got, _, _ := s.List(ctx, Filter{Recipient: "a"}); len(got) != 2 {
		t.Fatalf("recipient a lists %d rows, want the pending one and the young one", len(got))
	}

	// Messages are their own class, on their own index.
	if n, err := s.PruneOldest(ctx, RetainedMessages, cutoff, 10); err != nil || n != 3 {
		t.Fatalf("messages: %d %v", n, err)
	}
	msgs, _ := s.ReadMailbox(ctx, "a", 0, 10)
	if len(msgs) != 1 || !msgs[0].At.Equal(t0.Add(10*time.Hour)) {
		t.Fatalf("mailbox after the prune: %+v", msgs)
	}
	if at, _ := oldest(t, s, RetainedMessages); !at.Equal(t0.Add(10 * time.Hour)) {
		t.Fatalf("oldest message %v", at)
	}
	if _, err := s.PruneOldest(ctx, "nonsense", cutoff, 1); !errors.Is(err, ErrUnknownClass) {
		t.Fatalf("unknown class: %v", err)
	}
}

// A cancel is a settlement too: the row is indexed by when it was
// cancelled, through Settle's transition.
func TestPruneOldestCancelled(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	ids := newIDs()
	w := createdWatch(t, s, ids, "a", t0)
	var told []time.Time
	s.OnRetained(func(c Retained, at time.Time) {
		if c == RetainedSettled {
			told = append(told, at)
		}
	})
	if _, err := s.Settle(ctx, w.ID, Settlement{State: Cancelled, Receipt: ReceiptNone, SettledAt: t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if len(told) != 1 || !told[0].Equal(t0.Add(time.Minute)) {
		t.Fatalf("told %v", told)
	}
	// A receipt moving a settled row keeps its entry: still one.
	if at, ok := oldest(t, s, RetainedSettled); !ok || !at.Equal(t0.Add(time.Minute)) {
		t.Fatalf("oldest %v %v", at, ok)
	}
	if n, err := s.PruneOldest(ctx, RetainedSettled, t0.Add(time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("prune: %d %v", n, err)
	}
	if _, err := s.Get(ctx, w.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("cancelled row after the prune: %v", err)
	}
}

// Final pushes are indexed when they become final, and a push that is
// not final is never pruned.
func TestPruneOldestPushes(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	ids := newIDs()
	runningRecipientFor(t, s, "a", "https://example.org/hook")
	settleAt(t, s, ids, t0)
	settleAt(t, s, ids, t0)
	if _, ok := oldest(t, s, RetainedPushes); ok {
		t.Fatal("a pending push counts as retained")
	}
	p, _, _, err := s.BeginPush(ctx, "a", 1, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	p.State, p.UpdatedAt = PushDelivered, t0.Add(2*time.Second)
	if err := s.FinishPush(ctx, p); err != nil {
		t.Fatal(err)
	}
	if at, ok := oldest(t, s, RetainedPushes); !ok || !at.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("oldest push %v %v", at, ok)
	}
	if n, err := s.PruneOldest(ctx, RetainedPushes, t0.Add(time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("prune: %d %v", n, err)
	}
	var live []uint64
	_ = s.LivePushes(ctx, func(p Push) error { live = append(live, p.Seq); return nil })
	if len(live) != 1 || live[0] != 2 {
		t.Fatalf("live pushes after the prune %v", live)
	}
	if msgs, _ := s.ReadMailbox(ctx, "a", 0, 10); len(msgs) != 2 || msgs[0].Push != nil || msgs[1].Push == nil {
		t.Fatalf("mailbox %+v", msgs)
	}
}

// An event stream prunes in batches, oldest first; other streams are
// untouched.
func TestPruneOldestEvents(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	for i, stream := range []string{"fetch", "fetch", "fetch", "observe"} {
		e := Event{Stream: stream, Key: string(rune('a' + i)), Type: "t", OccurredAt: t0.Add(time.Duration(i) * time.Hour), Payload: []byte(`{}`)}
		if _, _, err := s.AppendEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if at, ok := oldest(t, s, RetainedEvents("fetch")); !ok || !at.Equal(t0) {
		t.Fatalf("oldest %v %v", at, ok)
	}
	cutoff := t0.Add(10 * time.Hour)
	if n, err := s.PruneOldest(ctx, RetainedEvents("fetch"), cutoff, 2); err != nil || n != 2 {
		t.Fatalf("first batch: %d %v", n, err)
	}
	if at, _ := oldest(t, s, RetainedEvents("fetch")); !at.Equal(t0.Add(2 * time.Hour)) {
		t.Fatalf("oldest after a batch %v", at)
	}
	if n, err := s.PruneOldest(ctx, RetainedEvents("fetch"), cutoff, 2); err != nil || n != 1 {
		t.Fatalf("second batch: %d %v", n, err)
	}
	if evs, _ := s.ReadEvents(ctx, "observe", 0, 10); len(evs) != 1 {
		t.Fatalf("observe stream %+v", evs)
	}
	// A pruned key may be appended again.
	if _, dup, err := s.AppendEvent(ctx, Event{Stream: "fetch", Key: "a", Type: "t", OccurredAt: cutoff, Payload: []byte(`{}`)}); err != nil || dup {
		t.Fatalf("re-append: %v %v", dup, err)
	}
}

// A batch is one transaction: a failure inside it deletes nothing.
func TestPruneOldestIsOneTransaction(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	ids := newIDs()
	runningRecipientFor(t, s, "a", "")
	for range 3 {
		settleAt(t, s, ids, t0)
	}
	injected := errors.New("injected")
	s.failpoint = func(at string) error {
		if at == "pruning" {
			return injected
		}
		return nil
	}
	if _, err := s.PruneOldest(ctx, RetainedSettled, t0.Add(time.Hour), 10); !errors.Is(err, injected) {
		t.Fatalf("prune: %v", err)
	}
	if got, _, _ := s.List(ctx, Filter{}); len(got) != 3 {
		t.Fatalf("%d rows after a failed batch", len(got))
	}
}

// A batch takes no lock a settlement needs: while a prune's transaction
// is open, a settlement and its mail commit.
func TestPruneOldestDoesNotBlockSettling(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	ids := newIDs()
	runningRecipientFor(t, s, "a", "")
	for range 3 {
		settleAt(t, s, ids, t0)
	}
	w := createdWatch(t, s, ids, "a", t0)
	m := firedMessage(t, ids)
	settled := make(chan error, 1)
	s.failpoint = func(at string) error {
		if at != "pruning" {
			return nil
		}
		go func() {
			_, _, err := s.SettleAndMail(ctx, w.ID, Settlement{State: Fired, Outcome: &m.Outcome, SettledAt: t0}, m)
			settled <- err
		}()
		select {
		case err := <-settled:
			settled <- err
			return nil
		case <-time.After(5 * time.Second):
			return errors.New("a settlement waited for the prune's transaction")
		}
	}
	if _, err := s.PruneOldest(ctx, RetainedSettled, t0.Add(time.Hour), 10); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-settled:
		if err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatal("the prune deleted nothing, so nothing settled during it")
	}
}

// The start-time Prune, the backstop, also drops the index entries of
// what it prunes, and prunes final pushes.
func TestPruneBackstopDropsIndexEntries(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	ids := newIDs()
	runningRecipientFor(t, s, "a", "")
	settleAt(t, s, ids, t0)
	if _, err := s.Prune(ctx, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []Retained{RetainedSettled, RetainedMessages} {
		if at, ok := oldest(t, s, c); ok {
			t.Fatalf("%s: an entry at %v left behind", c, at)
		}
	}
}

// A prune raises its class's floor, so the next read seeks past what it
// deleted; a record written below the floor afterwards, or while the
// prune ran, lowers it again and is found.
func TestPruneFloorLowered(t *testing.T) {
	for _, during := range []bool{false, true} {
		name := "after"
		if during {
			name = "during"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := openTest(t, t.TempDir())
			ids := newIDs()
			runningRecipientFor(t, s, "a", "")
			for h := 1; h <= 3; h++ {
				settleAt(t, s, ids, t0.Add(time.Duration(h)*time.Hour))
			}
			var backdated Watch
			if during {
				s.failpoint = func(at string) error {
					if at == "pruning" && backdated.ID == (ID{}) {
						backdated = settleAt(t, s, ids, t0)
					}
					return nil
				}
			}
			if n, err := s.PruneOldest(ctx, RetainedSettled, t0.Add(150*time.Minute), 10); err != nil || n != 2 {
				t.Fatalf("prune: %d %v", n, err)
			}
			s.failpoint = nil
			if !during {
				if at, _ := oldest(t, s, RetainedSettled); !at.Equal(t0.Add(3 * time.Hour)) {
					t.Fatalf("oldest after the prune %v", at)
				}
				backdated = settleAt(t, s, ids, t0)
			}
			if at, ok := oldest(t, s, RetainedSettled); !ok || !at.Equal(t0) {
				t.Fatalf("oldest with a row below the floor: %v %v", at, ok)
			}
			if n, err := s.PruneOldest(ctx, RetainedSettled, t0.Add(150*time.Minute), 10); err != nil || n != 1 {
				t.Fatalf("second prune: %d %v", n, err)
			}
			if _, err := s.Get(ctx, backdated.ID); !errors.Is(err, ErrNotFound) {
				t.Fatalf("the row below the floor: %v", err)
			}
		})
	}
}
