package store_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vigilhq/vigil/store"
)

func TestPruneManyInBatches(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	ids := newIDs()
	const n = 2*1000 + 7 // batches of 1000 on badger
	for range n {
		w := pendingWatch(t, ids, "a", t0)
		_ = s.Create(ctx, w)
		_, _ = s.Settle(ctx, w.ID, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0})
	}
	got, err := s.Prune(ctx, t0.Add(time.Second))
	if err != nil || got != n {
		t.Fatalf("pruned %d of %d: %v", got, n, err)
	}
}

// A row of an unknown future shape is kept byte for byte through reads,
// writes and prunes, and costs the other rows nothing.
func TestRowFromANewerReleaseIsHeldAside(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTest(t, dir)
	ids := newIDs()
	future := pendingWatch(t, ids, "a", t0)
	futureState := store.Key{Fam: store.FamState, Sub: "snoozed", ID: future.ID}
	futureBytes := []byte(`{"v":2,"id":"` + future.ID.String() + `","kind":"phase_nudge","state":"snoozed","nudged_at":"2026-11-30T12:00:00Z"}`)
	other := pendingWatch(t, ids, "a", t0)
	raw(t, s, func(tx store.Tx) {
		tx.Put(store.Key{Fam: store.FamRow, ID: future.ID}, futureBytes)
		tx.Put(futureState, nil)
		tx.Put(store.Key{Fam: store.FamRecipientIndex, Name: "a", ID: future.ID}, nil)
	})
	// Same version, unknown field: also held aside (a lenient decode would
	// drop the field on the next write).
	extra := pendingWatch(t, ids, "a", t0)
	extraBytes := []byte(`{"v":1,"id":"` + extra.ID.String() + `","kind":"timer","state":"fired","receipt":"none","every":"1m0s","created_at":"2026-11-30T12:00:00Z","settled_at":"2020-01-01T00:00:00Z","attempts":0,"params":{},"recipient":{"id":"a"},"snooze":true}`)
	raw(t, s, func(tx store.Tx) {
		tx.Put(store.Key{Fam: store.FamRow, ID: extra.ID}, extraBytes)
		tx.Put(store.Key{Fam: store.FamState, Sub: string(store.Fired), ID: extra.ID}, nil)
		tx.Put(store.Key{Fam: store.FamRecipientIndex, Name: "a", ID: extra.ID}, nil)
	})

	if err := s.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Settle(ctx, other.ID, store.Settlement{State: store.Fired, Receipt: store.ReceiptUnknown, SettledAt: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, future.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get of the future row: %v", err)
	}
	rows, held, err := s.List(ctx, store.Filter{Recipient: "a"})
	if err != nil || len(rows) != 1 || held != 2 {
		t.Fatalf("list: %d rows, %d held, %v", len(rows), held, err)
	}
	if _, err := s.Prune(ctx, t0.Add(365*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()

	s = openTest(t, dir)
	for id, want := range map[store.ID][]byte{future.ID: futureBytes, extra.ID: extraBytes} {
		var got []byte
		err := s.KV().View(ctx, func(tx store.Tx) error {
			var err error
			got, _, err = tx.Get(store.Key{Fam: store.FamRow, ID: id})
			return err
		})
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("row changed: %v\n got %s\nwant %s", err, got, want)
		}
	}
}

// The pending index carries each pending row's schedule, kept current
// through baselines and gone on settlement; a row indexed without one (an
// older layout) is read whole.
func TestForEachPendingReadsTheIndex(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	ids := newIDs()
	a, b, c := pendingWatch(t, ids, "r", t0), pendingWatch(t, ids, "r", t0), pendingWatch(t, ids, "r", t0)
	b.Every, b.ExpiresAt, b.Standing = store.Duration(5*time.Second), nil, true
	for _, w := range []store.Watch{a, b, c} {
		if err := s.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	_ = s.CarryBaseline(ctx, b.ID, []byte(`{}`), 7, "")
	_, _ = s.Settle(ctx, c.ID, store.Settlement{State: store.Fired, Receipt: store.ReceiptUnknown, SettledAt: t0})
	// a's index entry as an older layout wrote it: no value.
	raw(t, s, func(tx store.Tx) { tx.Put(store.Key{Fam: store.FamState, Sub: string(store.Pending), ID: a.ID}, nil) })

	got := map[store.ID]store.Schedule{}
	held, err := s.ForEachPending(ctx, func(sc store.Schedule) error { got[sc.ID] = sc; return nil })
	if err != nil || held != 0 || len(got) != 2 {
		t.Fatalf("%d schedules, %d held, %v", len(got), held, err)
	}
	if sa := got[a.ID]; sa.Every != time.Minute || !sa.Expires.Equal(*a.ExpiresAt) {
		t.Fatalf("a (read whole): %+v", sa)
	}
	if sb := got[b.ID]; sb.Every != 5*time.Second || !sb.Expires.IsZero() || sb.Attempts != 7 {
		t.Fatalf("b (from the index): %+v", sb)
	}
}

// A durable next check rides in the pending index beside the schedule: Get
// and ForEachPending see it, a baseline keeps it, an older 20-byte entry
// still reads (with none) and takes one, and a settled row refuses it.
func TestNextCheckLivesInThePendingIndex(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	ids := newIDs()
	a, b := pendingWatch(t, ids, "r", t0), pendingWatch(t, ids, "r", t0)
	for _, w := range []store.Watch{a, b} {
		if err := s.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	next := t0.Add(time.Hour)
	if err := s.SetNextCheck(ctx, a.ID, next); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(ctx, a.ID); !got.NextCheck.Equal(next) {
		t.Fatalf("Get: next check %v, want %v", got.NextCheck, next)
	}
	if err := s.CarryBaseline(ctx, a.ID, []byte(`{}`), 3, "moved"); err != nil {
		t.Fatal(err)
	}
	// b's entry as the layout before next checks wrote it: 20 bytes.
	var old []byte
	if err := s.KV().View(ctx, func(tx store.Tx) error {
		var err error
		old, _, err = tx.Get(store.Key{Fam: store.FamState, Sub: string(store.Pending), ID: b.ID})
		return err
	}); err != nil || len(old) != 20 {
		t.Fatalf("a schedule without a next check is %d bytes (%v), want 20", len(old), err)
	}
	schedules := func() map[store.ID]store.Schedule {
		t.Helper()
		got := map[store.ID]store.Schedule{}
		if _, err := s.ForEachPending(ctx, func(sc store.Schedule) error { got[sc.ID] = sc; return nil }); err != nil {
			t.Fatal(err)
		}
		return got
	}
	got := schedules()
	if sa := got[a.ID]; !sa.Next.Equal(next) || sa.Attempts != 3 || sa.Every != time.Minute {
		t.Fatalf("a after a baseline: %+v", sa)
	}
	if sb := got[b.ID]; !sb.Next.IsZero() || sb.Every != time.Minute || !sb.Expires.Equal(*b.ExpiresAt) {
		t.Fatalf("b (older layout): %+v", sb)
	}
	// An entry of the oldest layout, no value: the row gives the schedule.
	raw(t, s, func(tx store.Tx) { tx.Put(store.Key{Fam: store.FamState, Sub: string(store.Pending), ID: b.ID}, nil) })
	if err := s.SetNextCheck(ctx, b.ID, next); err != nil {
		t.Fatal(err)
	}
	if sb := schedules()[b.ID]; !sb.Next.Equal(next) || sb.Every != time.Minute || !sb.Expires.Equal(*b.ExpiresAt) {
		t.Fatalf("b after a next check over an empty entry: %+v", sb)
	}
	if err := s.SetNextCheck(ctx, b.ID, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if sb := schedules()[b.ID]; !sb.Next.IsZero() {
		t.Fatalf("b's next check was not cleared: %+v", sb)
	}
	if _, err := s.Settle(ctx, a.ID, store.Settlement{State: store.Fired, Receipt: store.ReceiptUnknown, SettledAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetNextCheck(ctx, a.ID, next); !errors.Is(err, store.ErrNotPending) {
		t.Fatalf("a next check on a settled row: %v", err)
	}
	if err := s.RecordProbe(ctx, a.ID, store.Probe{Attempts: 9}); !errors.Is(err, store.ErrNotPending) {
		t.Fatalf("a probe record on a settled row: %v", err)
	}
}
