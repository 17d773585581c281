package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vigilhq/vigil/store"
)

// settleAt creates a pending row for recipient a and settles it at at,
// mailing its message; it returns the row.
func settleAt(t *testing.T, s *store.Store, ids seqReader, at time.Time) store.Watch {
	t.Helper()
	ctx := context.Background()
	w := createdWatch(t, s, ids, "a", at)
	m := firedMessage(t, ids)
	m.At = at
	got, _, err := s.SettleAndMail(ctx, w.ID, store.Settlement{State: store.Fired, Outcome: &m.Outcome, SettledAt: at}, m)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func oldest(t *testing.T, s *store.Store, c store.Retained) (time.Time, bool) {
	t.Helper()
	at, ok, err := s.Oldest(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return at, ok
}

// A batch is one transaction: a failure inside it deletes nothing.
func TestPruneOldestIsOneTransaction(t *testing.T) {
	ctx := context.Background()
	s, kv := openFailing(t, t.TempDir())
	ids := newIDs()
	runningRecipientFor(t, s, "a", "")
	for range 3 {
		settleAt(t, s, ids, t0)
	}
	injected := errors.New("injected")
	kv.failpoint(func(at string) error {
		if at == "prune-oldest" {
			return injected
		}
		return nil
	})
	if _, err := s.PruneOldest(ctx, store.RetainedSettled, t0.Add(time.Hour), 10); !errors.Is(err, injected) {
		t.Fatalf("prune: %v", err)
	}
	if got, _, _ := s.List(ctx, store.Filter{}); len(got) != 3 {
		t.Fatalf("%d rows after a failed batch", len(got))
	}
}

// A batch takes no lock a settlement needs: while a prune's transaction
// is open, a settlement and its mail commit.
func TestPruneOldestDoesNotBlockSettling(t *testing.T) {
	ctx := context.Background()
	s, kv := openFailing(t, t.TempDir())
	ids := newIDs()
	runningRecipientFor(t, s, "a", "")
	for range 3 {
		settleAt(t, s, ids, t0)
	}
	w := createdWatch(t, s, ids, "a", t0)
	m := firedMessage(t, ids)
	settled := make(chan error, 1)
	kv.failpoint(func(at string) error {
		if at != "prune-oldest" {
			return nil
		}
		go func() {
			_, _, err := s.SettleAndMail(ctx, w.ID, store.Settlement{State: store.Fired, Outcome: &m.Outcome, SettledAt: t0}, m)
			settled <- err
		}()
		select {
		case err := <-settled:
			settled <- err
			return nil
		case <-time.After(5 * time.Second):
			return errors.New("a settlement waited for the prune's transaction")
		}
	})
	if _, err := s.PruneOldest(ctx, store.RetainedSettled, t0.Add(time.Hour), 10); err != nil {
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
	for _, c := range []store.Retained{store.RetainedSettled, store.RetainedMessages} {
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
			s, kv := openFailing(t, t.TempDir())
			ids := newIDs()
			runningRecipientFor(t, s, "a", "")
			for h := 1; h <= 3; h++ {
				settleAt(t, s, ids, t0.Add(time.Duration(h)*time.Hour))
			}
			var backdated store.Watch
			if during {
				kv.failpoint(func(at string) error {
					if at == "prune-oldest" && backdated.ID == (store.ID{}) {
						backdated = settleAt(t, s, ids, t0)
					}
					return nil
				})
			}
			if n, err := s.PruneOldest(ctx, store.RetainedSettled, t0.Add(150*time.Minute), 10); err != nil || n != 2 {
				t.Fatalf("prune: %d %v", n, err)
			}
			kv.failpoint(nil)
			if !during {
				if at, _ := oldest(t, s, store.RetainedSettled); !at.Equal(t0.Add(3 * time.Hour)) {
					t.Fatalf("oldest after the prune %v", at)
				}
				backdated = settleAt(t, s, ids, t0)
			}
			if at, ok := oldest(t, s, store.RetainedSettled); !ok || !at.Equal(t0) {
				t.Fatalf("oldest with a row below the floor: %v %v", at, ok)
			}
			if n, err := s.PruneOldest(ctx, store.RetainedSettled, t0.Add(150*time.Minute), 10); err != nil || n != 1 {
				t.Fatalf("second prune: %d %v", n, err)
			}
			if _, err := s.Get(ctx, backdated.ID); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("the row below the floor: %v", err)
			}
		})
	}
}
