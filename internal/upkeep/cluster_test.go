package upkeep_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/fetch"
	"github.com/vigilhq/vigil/internal/hosttest"
	"github.com/vigilhq/vigil/internal/lifecycle"
	"github.com/vigilhq/vigil/internal/natstest"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/internal/upkeep"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/natsstore"
)

// On a cluster the upkeep runs on one node (the job's lease holder) and
// its store's OnRetained tells of that node's commits only. Two nodes
// share one JetStream store and the upkeep runs on a: once every class
// it keeps has been read empty (it has no timer), a row b settles and a
// fetch fact b records arm it, through the store's feed alone, and it
// prunes them when they come due.
func TestTheUpkeepHearsOtherNodesRecords(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := natstest.Start(t)
	open := func() store.Feeds {
		s, err := natsstore.OpenStore(ctx, natsstore.Config{URLs: []string{srv.ClientURL()}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		f, _ := s.Feeds()
		return f
	}
	a, b := open(), open()
	ids := hosttest.IDs(3)
	settled := func(at time.Time) store.ID {
		t.Helper()
		id, err := store.NewID(t0, ids)
		if err != nil {
			t.Fatal(err)
		}
		exp := t0.Add(time.Hour)
		w := store.Watch{ID: id, Kind: "timer", Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: "r"},
			State: store.Cancelled, Receipt: store.ReceiptNone, Every: store.Duration(time.Minute), CreatedAt: t0, ExpiresAt: &exp, SettledAt: &at}
		if err := b.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		return w.ID
	}
	armedAt := func(what string, want time.Time, u *upkeep.Upkeep) {
		t.Helper()
		natstest.WaitFor(t, 10*time.Second, what, func() bool {
			at, armed := u.NextWake()
			return armed && at.Equal(want)
		})
	}

	// A row b settled before the upkeep starts: the upkeep's first read
	// finds it (the facts class is read first, and found empty). Pruned,
	// it leaves every class read empty and no timer: from here on only
	// the feed can arm the upkeep.
	first := settled(t0)
	clock := fakeclock.At(t0)
	u, err := upkeep.New(upkeep.Config{Store: a, Clock: clock, Classes: []upkeep.Class{
		{Class: store.RetainedEvents(fetch.StreamFacts), Retention: upkeep.EventRetention},
		{Class: store.RetainedSettled, Retention: scheduler.DefaultRetention},
	}})
	if err != nil {
		t.Fatal(err)
	}
	done := lifecycle.Go(ctx, u.Run)
	defer func() { cancel(); _ = done() }()
	armedAt("the upkeep's first read of b's row", t0.Add(scheduler.DefaultRetention), u)
	if _, err := u.Tick(ctx, t0.Add(scheduler.DefaultRetention)); err != nil {
		t.Fatal(err)
	}
	if at, armed := u.NextWake(); armed {
		t.Fatalf("armed at %s with nothing retained", at)
	}
	if _, err := a.Get(ctx, first); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the first row after its retention: %v, want pruned", err)
	}

	settledAt := t0.Add(time.Minute)
	id := settled(settledAt)
	due := settledAt.Add(scheduler.DefaultRetention)
	armedAt("the upkeep on a armed by b's settled row", due, u)
	factAt := t0.Add(-time.Hour)
	if _, _, err := b.AppendEvent(ctx, store.Event{Stream: fetch.StreamFacts, Key: "k", Type: "fact", OccurredAt: factAt, Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	factDue := factAt.Add(upkeep.EventRetention)
	armedAt("the upkeep on a armed by b's fetch fact", factDue, u)

	// Both come due, and the upkeep on a prunes what b wrote.
	clock.Set(due)
	for range 4 {
		if _, err := u.Tick(ctx, due); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Get(ctx, id); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("b's settled row after its retention: %v, want pruned", err)
	}
	if evs, err := a.ReadEvents(ctx, fetch.StreamFacts, 0, 10); err != nil || len(evs) != 0 {
		t.Errorf("b's fetch fact after its retention: %v %v, want pruned", evs, err)
	}
}

// fakeFollower is the badger store with a feed of retained records the
// test drives, for tests only: each FollowRetained is told on subscribed,
// its first feed ends at once (as when the servers end it), later ones
// pass what the test sends on records to fn.
type fakeFollower struct {
	*store.Store
	subscribed chan int
	records    chan store.Retained
	n          int
}

func (f *fakeFollower) FollowRetained(context.Context, []store.Retained) (func(context.Context, func(store.Retained, time.Time)) error, error) {
	f.n++
	n := f.n
	f.subscribed <- n
	return func(ctx context.Context, fn func(store.Retained, time.Time)) error {
		if n == 1 {
			return errors.New("fakefollower: the feed ended")
		}
		for {
			select {
			case <-ctx.Done():
				return nil
			case c := <-f.records:
				fn(c, t0)
			}
		}
	}, nil
}

// A feed that ends is followed again, and what it tells then arms the
// upkeep.
func TestTheUpkeepFollowsAgainWhenTheFeedEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	fx := newFixture(t)
	f := &fakeFollower{Store: fx.st, subscribed: make(chan int, 4), records: make(chan store.Retained)}
	clk := fakeclock.At(t0)
	u, err := upkeep.New(upkeep.Config{Store: f, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	done := lifecycle.Go(ctx, u.Run)
	defer func() { cancel(); _ = done() }()
	if n := <-f.subscribed; n != 1 {
		t.Fatalf("subscription %d, want 1", n)
	}
	// The feed ended: the upkeep follows again a second on.
	clk.AwaitTimer(t, time.Second)
	clk.Add(time.Second)
	if n := <-f.subscribed; n != 2 {
		t.Fatalf("subscription %d, want 2 after the first feed ended", n)
	}
	// The second send is taken once the first has reached Notify.
	f.records <- store.RetainedSettled
	f.records <- store.RetainedSettled
	if at, armed := u.NextWake(); !armed || !at.Equal(t0.Add(scheduler.DefaultRetention)) {
		t.Fatalf("after a record on the second feed: %s %v, want armed at its retention", at, armed)
	}
}
