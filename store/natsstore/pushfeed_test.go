package natsstore

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/store"
)

// The outbox feed tells of each push written pending or retrying by
// another process after it started, of the recipients it keeps, and of
// none begun (sending), of another recipient, or from before it started.
func TestFollowPushesTellsOfNewPushes(t *testing.T) {
	srv := runServer(t)
	a := openStore(t, Config{}, srv)
	b := openStore(t, Config{}, srv)
	ctx := context.Background()
	ids := newIDs()
	runningFor(t, b, "r", "https://example.test/hook")
	runningFor(t, b, "q", "https://example.test/q")
	settleFor := func(rid string) store.Push {
		t.Helper()
		w := createdWatch(t, b, ids, rid, t0)
		_, mailed, err := b.SettleAndMail(ctx, w.ID, fired(t0), firedMessage(t, ids))
		if err != nil || mailed.Push == nil {
			t.Fatalf("settle: %+v %v", mailed, err)
		}
		return *mailed.Push
	}
	settle := func() store.Push { t.Helper(); return settleFor("r") }
	before := settle()
	fctx, cancel := context.WithCancel(ctx)
	feed, err := a.feeds().FollowPushes(fctx, func(rid string) bool { return rid == "r" })
	if err != nil {
		t.Fatal(err)
	}
	told := make(chan store.Push, 16)
	done := make(chan error, 1)
	go func() { done <- feed(fctx, func(p store.Push) { told <- p }) }()
	// Begun (sending), then finished retrying: only the retrying is told.
	p, _, _, err := b.BeginPush(ctx, "r", before.Seq, t0)
	if err != nil {
		t.Fatal(err)
	}
	next := t0.Add(time.Minute)
	p.State, p.NextAttempt = store.PushRetrying, &next
	if err := b.FinishPush(ctx, p); err != nil {
		t.Fatal(err)
	}
	settleFor("q") // a recipient the feed does not keep: not told
	after := settle()
	var got []store.Push
	for len(got) < 2 {
		select {
		case p := <-told:
			got = append(got, p)
		case <-time.After(30 * time.Second):
			t.Fatalf("told %+v, want the retry and the new push", got)
		}
	}
	if got[0].Seq != before.Seq || got[0].State != store.PushRetrying || got[1].Seq != after.Seq || got[1].State != store.PushPending {
		t.Fatalf("told %+v", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("the feed ended with %v", err)
	}
	if n := len(told); n != 0 {
		t.Fatalf("told %d more", n)
	}
}

// Each state of a push is told once: the change of its live entry the
// settlement wrote, and the one BeginPush wrote, each read after the
// FinishPush that followed them, find the push retrying, which the
// FinishPush's own change tells again; the feed tells it once. The feed
// reads nothing until every change waits for it, so each is read after
// the last commit.
func TestFollowPushesTellsEachStateOnce(t *testing.T) {
	srv := runServer(t)
	a := openStore(t, Config{}, srv)
	b := openStore(t, Config{}, srv)
	ctx := context.Background()
	ids := newIDs()
	runningFor(t, b, "r", "https://example.test/hook")
	w := createdWatch(t, b, ids, "r", t0)
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	feed, err := a.feeds().FollowPushes(fctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, mailed, err := b.SettleAndMail(ctx, w.ID, fired(t0), firedMessage(t, ids))
	if err != nil || mailed.Push == nil {
		t.Fatalf("settle: %+v %v", mailed, err)
	}
	p, _, _, err := b.BeginPush(ctx, "r", mailed.Push.Seq, t0)
	if err != nil {
		t.Fatal(err)
	}
	next := t0.Add(time.Minute)
	p.State, p.NextAttempt = store.PushRetrying, &next
	if err := b.FinishPush(ctx, p); err != nil {
		t.Fatal(err)
	}
	told := make(chan store.Push, 16)
	go func() { _ = feed(fctx, func(p store.Push) { told <- p }) }()
	select {
	case p := <-told:
		if p.State != store.PushRetrying || p.Attempts != 1 {
			t.Fatalf("told %+v, want the push retrying after one attempt", p)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the retrying push was not told")
	}
	select {
	case p := <-told:
		t.Fatalf("told the same state again: %+v", p)
	case <-time.After(time.Second):
	}
}

// BeginPush is fenced on the push's revision: two stores (two nodes)
// racing to begin the same push never both win, and the loser is told
// ErrPushState.
func TestBeginPushRacingStoresOneWins(t *testing.T) {
	srv := runServer(t)
	a := openStore(t, Config{}, srv)
	b := openStore(t, Config{}, srv)
	ctx := context.Background()
	ids := newIDs()
	runningFor(t, a, "r", "https://example.test/hook")
	const n = 8
	var seqs []uint64
	for range n {
		w := createdWatch(t, a, ids, "r", t0)
		_, mailed, err := a.SettleAndMail(ctx, w.ID, fired(t0), firedMessage(t, ids))
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, mailed.Push.Seq)
	}
	for _, seq := range seqs {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, s := range []testStore{a, b} {
			wg.Go(func() { _, _, _, errs[i] = s.BeginPush(ctx, "r", seq, t0) })
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, store.ErrPushState):
				t.Fatalf("seq %d: %v", seq, err)
			}
		}
		if won != 1 {
			t.Fatalf("seq %d: %d stores began it (%v)", seq, won, errs)
		}
		var p store.Push
		err := a.LivePushes(ctx, func(lp store.Push) error {
			if lp.Seq == seq {
				p = lp
			}
			return nil
		})
		if err != nil || p.State != store.PushSending || p.Attempts != 1 {
			t.Fatalf("seq %d: %+v %v, want sending after one attempt", seq, p, err)
		}
	}
}
