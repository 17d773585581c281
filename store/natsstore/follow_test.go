package natsstore

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/store"
)

// ForEachPendingIn gives exactly one partition's pending schedules, by the
// scheduler's partition of an id (store.ID.Partition), and refuses a
// partition outside the count.
func TestForEachPendingInGivesOnePartition(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, Config{}, runServer(t))
	ids := newIDs()
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	const n = 4
	want := map[int][]store.ID{}
	for i := range 24 {
		w := createdWatch(t, s, ids, "r", t0.Add(time.Duration(i)*time.Second))
		p := w.ID.Partition(n)
		want[p] = append(want[p], w.ID)
	}
	settled := want[0][0]
	if _, err := s.Settle(ctx, settled, fired(t0.Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	want[0] = want[0][1:]
	for p := range n {
		var got []store.ID
		if _, err := s.ForEachPendingIn(ctx, p, n, func(sc store.Schedule) error {
			if sc.Every != time.Minute {
				t.Errorf("%s: every %s", sc.ID, sc.Every)
			}
			got = append(got, sc.ID)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(got, func(a, b store.ID) int { return strings.Compare(a.String(), b.String()) })
		slices.SortFunc(want[p], func(a, b store.ID) int { return strings.Compare(a.String(), b.String()) })
		if !slices.Equal(got, want[p]) {
			t.Fatalf("partition %d: %v, want %v", p, got, want[p])
		}
	}
	for _, bad := range [][2]int{{-1, 4}, {4, 4}, {0, 0}} {
		if _, err := s.ForEachPendingIn(ctx, bad[0], bad[1], func(store.Schedule) error { return nil }); err == nil {
			t.Errorf("partition %d of %d: no error", bad[0], bad[1])
		}
	}
}

// The pending feed tells of each row made pending after it started, by
// another process too, with its schedule, and of nothing from before.
func TestFollowPendingTellsOfNewRows(t *testing.T) {
	srv := runServer(t)
	a := openStore(t, Config{}, srv)
	b := openStore(t, Config{}, srv)
	ids := newIDs()
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	before := createdWatch(t, a, ids, "r", t0)
	ctx, cancel := context.WithCancel(context.Background())
	feed, err := a.feeds().FollowPending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	told := make(chan store.Schedule, 16)
	done := make(chan error, 1)
	go func() { done <- feed(ctx, func(sc store.Schedule) { told <- sc }) }()
	w := createdWatch(t, b, ids, "r", t0.Add(time.Second))
	select {
	case sc := <-told:
		if sc.ID != w.ID || sc.Every != time.Minute || !sc.Expires.Equal(*w.ExpiresAt) {
			t.Fatalf("told %+v, want %s", sc, w.ID)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a row made pending through another store was not told")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("the feed ended with %v", err)
	}
	for sc := range len(told) {
		_ = sc
		if got := <-told; got.ID == before.ID {
			t.Fatal("the feed told of a row from before it started")
		}
	}
}

// The append feed tells of an append to its stream by another process,
// and of none to another stream.
func TestFollowAppendsTellsOfAppends(t *testing.T) {
	srv := runServer(t)
	a := openStore(t, Config{}, srv)
	b := openStore(t, Config{}, srv)
	ctx, cancel := context.WithCancel(context.Background())
	feed, err := a.feeds().FollowAppends(ctx, "observe")
	if err != nil {
		t.Fatal(err)
	}
	told := make(chan struct{}, 16)
	done := make(chan error, 1)
	go func() { done <- feed(ctx, func() { told <- struct{}{} }) }()
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	if _, _, err := b.AppendEvent(ctx, store.Event{Stream: "other", Key: "k0", Type: "t", OccurredAt: t0, Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.AppendEvent(ctx, store.Event{Stream: "observe", Key: "k1", Type: "t", OccurredAt: t0, Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-told:
	case <-time.After(30 * time.Second):
		t.Fatal("an append through another store was not told")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("the feed ended with %v", err)
	}
	if n := len(told); n != 0 {
		t.Fatalf("told %d more times, for one append to the stream", n)
	}
}
