package core

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/internal/natstest"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/natsstore"
)

// A feed that stops with an error is subscribed to again, after a failed
// try, and caughtUp runs once the new subscription is in place; the loop
// ends with its context.
func TestAFeedThatStopsIsFollowedAgain(t *testing.T) {
	c := &Core{clock: clock.Wall{}, log: slogDiscard(), cluster: &clustered{retryFirst: time.Millisecond, retryMost: 4 * time.Millisecond}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var tries, caught atomic.Int32
	running := make(chan struct{})
	second := func(ctx context.Context) error {
		close(running)
		<-ctx.Done()
		return nil
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.keepFollowing(ctx, "test", func(context.Context) error { return errors.New("fake: the feed ended") },
			func(context.Context) (func(context.Context) error, error) {
				if tries.Add(1) == 1 {
					return nil, errors.New("fake: no answer")
				}
				return second, nil
			}, func() { caught.Add(1) })
	}()
	select {
	case <-running:
	case <-time.After(within):
		t.Fatal("the feed was not followed again")
	}
	cancel()
	<-done
	if tries.Load() != 2 || caught.Load() != 1 {
		t.Fatalf("%d subscriptions tried and caughtUp ran %d times, want 2 and 1", tries.Load(), caught.Load())
	}
}

// breakingFeed is a ClusterStore whose pending feed the test breaks: the
// first subscription's reader stops with an error when broken is
// closed, and a new subscription waits until back is closed.
type breakingFeed struct {
	ClusterStore
	broken, back chan struct{}
	subs         atomic.Int32
}

func (b *breakingFeed) Follow(ctx context.Context, ranges []store.Range, current bool) (func(context.Context, func(store.Change)) error, error) {
	if len(ranges) != 1 || ranges[0].Prefix.Fam != store.FamState {
		return b.ClusterStore.Follow(ctx, ranges, current) // not the pending index
	}
	if b.subs.Add(1) > 1 {
		select {
		case <-b.back:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return b.ClusterStore.Follow(ctx, ranges, current)
	}
	run, err := b.ClusterStore.Follow(ctx, ranges, current)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, fn func(store.Change)) error {
		var wg sync.WaitGroup
		defer wg.Wait()
		stopped, stop := context.WithCancel(ctx)
		defer stop()
		wg.Go(func() { _ = run(stopped, fn) })
		select {
		case <-ctx.Done():
			return nil
		case <-b.broken:
			return errors.New("fake: the pending feed ended")
		}
	}, nil
}

// A watch registered elsewhere while the owner's pending feed was down is
// armed when the feed is back (each held partition is scanned again), not
// left until the next ownership change.
func TestAWatchRegisteredWhileThePendingFeedWasDownFires(t *testing.T) {
	if testing.Short() {
		t.Skip("a vigil node on a JetStream server")
	}
	srv, open, seen, jobs := nodeFixture(t, false)
	feeds := &breakingFeed{broken: make(chan struct{}), back: make(chan struct{})}
	a := startHookedNode(t, srv, "a", "digest", open, seen, jobs, nodeHooks{store: func(st ClusterStore) ClusterStore {
		feeds.ClusterStore = st
		return feeds
	}})
	natstest.WaitFor(t, within, "a holding every partition", func() bool { return len(a.held()) == testPartitions })
	close(feeds.broken)
	natstest.WaitFor(t, within, "a subscribing again", func() bool { return feeds.subs.Load() > 1 })
	// Another process registers while a follows nothing.
	other, err := New(context.Background(), Config{Kinds: a.core.Kinds, OpenStore: func(ctx context.Context) (*store.Store, error) {
		return natsstore.OpenStore(ctx, natsstore.Config{URLs: []string{srv.ClientURL()}})
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })
	every := time.Second
	w, err := other.Scheduler.Register(context.Background(), scheduler.Registration{Kind: "now", Recipient: store.Recipient{ID: "r"}, Every: &every})
	if err != nil {
		t.Fatal(err)
	}
	close(feeds.back)
	natstest.WaitFor(t, within, "the watch's message once", func() bool { return firedOnce(a.mailbox(t), []store.Watch{w}) })
}
