package natsstore

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/store"
)

func oldest(t *testing.T, s testStore, c store.Retained) (time.Time, bool) {
	t.Helper()
	at, ok, err := s.Oldest(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return at, ok
}

func TestPruneOldest(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, Config{}, runServer(t))
	ids := newIDs()
	var mu sync.Mutex
	told := map[store.Retained]int{}
	s.OnRetained(func(c store.Retained, _ time.Time) {
		mu.Lock()
		told[c]++
		mu.Unlock()
	})
	runningFor(t, s, "r", "https://example.test/hook")
	if _, ok := oldest(t, s, store.RetainedSettled); ok {
		t.Fatal("an empty store has an oldest settled row")
	}
	pending := createdWatch(t, s, ids, "r", t0)
	var settled []store.Watch
	for i := range 5 {
		w := createdWatch(t, s, ids, "r", t0)
		m := firedMessage(t, ids)
		m.At = t0.Add(time.Duration(i) * time.Hour)
		got, mailed, err := s.SettleAndMail(ctx, w.ID, fired(t0.Add(time.Duration(i)*time.Hour)), m)
		if err != nil {
			t.Fatal(err)
		}
		p := *mailed.Push
		if i < 3 { // the first three pushes become final
			if _, _, _, err := s.BeginPush(ctx, "r", p.Seq, t0); err != nil {
				t.Fatal(err)
			}
			p.State, p.UpdatedAt = store.PushDelivered, t0.Add(time.Duration(i)*time.Hour)
			if err := s.FinishPush(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		settled = append(settled, got)
	}
	if told[store.RetainedSettled] != 5 || told[store.RetainedMessages] != 5 || told[store.RetainedPushes] != 3 {
		t.Fatalf("OnRetained told %v", told)
	}
	for _, c := range []store.Retained{store.RetainedSettled, store.RetainedMessages, store.RetainedPushes} {
		if at, ok := oldest(t, s, c); !ok || !at.Equal(t0) {
			t.Fatalf("oldest %s: %v %v", c, at, ok)
		}
	}
	// Two of each before the cutoff, one batch of at most 1.
	cutoff := t0.Add(90 * time.Minute)
	for _, c := range []store.Retained{store.RetainedSettled, store.RetainedMessages, store.RetainedPushes} {
		n, err := s.PruneOldest(ctx, c, cutoff, 1)
		if err != nil || n != 1 {
			t.Fatalf("prune %s: %d %v", c, n, err)
		}
		if at, _ := oldest(t, s, c); !at.Equal(t0.Add(time.Hour)) {
			t.Fatalf("oldest %s after one: %v", c, at)
		}
		if n, err = s.PruneOldest(ctx, c, cutoff, 10); err != nil || n != 1 {
			t.Fatalf("prune %s again: %d %v", c, n, err)
		}
		if n, err = s.PruneOldest(ctx, c, cutoff, 10); err != nil || n != 0 {
			t.Fatalf("prune %s past the cutoff: %d %v", c, n, err)
		}
	}
	if _, err := s.Get(ctx, settled[0].ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the oldest settled row survived: %v", err)
	}
	if _, err := s.Get(ctx, pending.ID); err != nil {
		t.Fatalf("a pending row was pruned: %v", err)
	}
	msgs, err := s.ReadMailbox(ctx, "r", 0, 10)
	if err != nil || len(msgs) != 3 || msgs[0].Seq != 3 {
		t.Fatalf("mailbox after prune: %d %v", len(msgs), err)
	}
	// A live push is never pruned, however old.
	if n, err := s.PruneOldest(ctx, store.RetainedPushes, t0.Add(100*time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("prune the last final push: %d %v", n, err)
	}
	live := 0
	if err := s.LivePushes(ctx, func(store.Push) error { live++; return nil }); err != nil || live != 2 {
		t.Fatalf("%d live pushes after pruning, want 2: %v", live, err)
	}
	if _, err := s.PruneOldest(ctx, "nope", cutoff, 1); !errors.Is(err, store.ErrUnknownClass) {
		t.Fatalf("an unknown class: %v", err)
	}
	if _, err := s.PruneOldest(ctx, store.RetainedSettled, cutoff, 0); err == nil {
		t.Fatal("a batch of 0 taken")
	}
}

func TestPruneOldestEvents(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, Config{}, runServer(t))
	c := store.RetainedEvents("fetch")
	if _, ok := oldest(t, s, c); ok {
		t.Fatal("an empty stream has an oldest event")
	}
	for i, k := range []string{"a", "b", "c"} {
		if _, _, err := s.AppendEvent(ctx, event("fetch", k, t0.Add(time.Duration(i)*time.Hour))); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.PruneOldest(ctx, c, t0.Add(90*time.Minute), 10); err != nil || n != 2 {
		t.Fatalf("prune events: %d %v", n, err)
	}
	if at, ok := oldest(t, s, c); !ok || !at.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("oldest event after prune: %v %v", at, ok)
	}
}

func TestPrune(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, Config{}, runServer(t))
	ids := newIDs()
	runningFor(t, s, "r", "")
	pending := createdWatch(t, s, ids, "r", t0)
	for i := range 3 {
		w := createdWatch(t, s, ids, "r", t0)
		m := firedMessage(t, ids)
		m.At = t0.Add(time.Duration(i) * time.Hour)
		if _, _, err := s.SettleAndMail(ctx, w.ID, fired(t0.Add(time.Duration(i)*time.Hour)), m); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.Prune(ctx, t0.Add(90*time.Minute))
	if err != nil || n != 4 { // two rows, two messages
		t.Fatalf("prune: %d %v", n, err)
	}
	rows, _, err := s.List(ctx, store.Filter{})
	if err != nil || len(rows) != 2 {
		t.Fatalf("%d rows after prune: %v", len(rows), err)
	}
	if _, err := s.Get(ctx, pending.ID); err != nil {
		t.Fatalf("the pending row: %v", err)
	}
	if at, ok := oldest(t, s, store.RetainedMessages); !ok || !at.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("the message index after prune: %v %v", at, ok)
	}
}

// TestMailboxReadsStepOverAPrunedGap: a message pruned from the middle
// of a mailbox (its at older than its neighbours') leaves a gap a read
// steps over, still filling its page.
func TestMailboxReadsStepOverAPrunedGap(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, Config{}, runServer(t))
	runningFor(t, s, "r", "")
	ids := newIDs()
	for _, at := range []time.Duration{2 * time.Hour, 0, 3 * time.Hour, 4 * time.Hour} {
		m := firedMessage(t, ids)
		m.At = t0.Add(at)
		if _, _, err := s.AppendIfRunning(ctx, "r", m); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.PruneOldest(ctx, store.RetainedMessages, t0.Add(time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("prune: %d %v", n, err)
	}
	for _, tc := range []struct {
		after uint64
		limit int
		want  []uint64
	}{{0, 2, []uint64{1, 3}}, {1, 1, []uint64{3}}, {1, 10, []uint64{3, 4}}, {4, 10, nil}} {
		msgs, err := s.ReadMailbox(ctx, "r", tc.after, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		var got []uint64
		for _, m := range msgs {
			got = append(got, m.Seq)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("after %d limit %d: %v, want %v", tc.after, tc.limit, got, tc.want)
		}
	}
}
