package natsstore

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/vigilhq/vigil/store"
)

// The partition fence, on one server and on three with replicas 3: a
// stale owner's transitions of a row nobody wrote since it read it are
// refused with ErrNotOwner once another node has fenced the partition
// (the row's own revision still holds, so only the epoch refuses them),
// and the new owner's, with the current token, are applied. A
// registration and a cancel, which any node makes, are not fenced.
func TestAStaleOwnersTransitionsAreFenced(t *testing.T) {
	t.Run("R1", func(t *testing.T) {
		srv := runServer(t)
		testFence(t, Config{}, srv)
	})
	t.Run("R3", func(t *testing.T) {
		if testing.Short() {
			t.Skip("three JetStream servers")
		}
		testFence(t, Config{Replicas: 3, Timeout: 2 * time.Second}, runCluster(t, 3)...)
	})
}

func testFence(t *testing.T, cfg Config, servers ...*server.Server) {
	ctx := context.Background()
	a := openStore(t, cfg, servers...)
	b := openStore(t, cfg, servers...)
	runningFor(t, a, "r", "")
	ids := newIDs()
	w := createdWatch(t, a, ids, "r", t0)
	p := w.ID.Partition(a.Partitions())

	// a owns p and writes as its owner.
	if _, err := a.FencePartition(ctx, p, "a", t0); err != nil {
		t.Fatal(err)
	}
	if err := a.RecordProbe(ctx, w.ID, store.Probe{Attempts: 1, Note: "a", NextCheck: t0.Add(time.Minute)}); err != nil {
		t.Fatalf("the owner's probe record: %v", err)
	}
	// b takes p over; a has not heard (it still holds its token).
	tokB, err := b.FencePartition(ctx, p, "b", t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	before, err := a.Get(ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Every owner's transition of a is refused, though nobody wrote the
	// row since a read it.
	stale := map[string]func() error{
		"probe": func() error {
			return a.RecordProbe(ctx, w.ID, store.Probe{Attempts: 2, Note: "stale", NextCheck: t0.Add(2 * time.Minute)})
		},
		"next":  func() error { return a.SetNextCheck(ctx, w.ID, t0.Add(3*time.Minute)) },
		"carry": func() error { return a.CarryBaseline(ctx, w.ID, json.RawMessage(`{"stale":1}`), 2, "stale") },
		"carry-and-mail": func() error {
			m := firedMessage(t, ids)
			_, err := a.CarryAndMail(ctx, w.ID, json.RawMessage(`{"stale":1}`), 2, "stale", &m)
			return err
		},
		"settle-and-mail": func() error {
			_, _, err := a.SettleAndMail(ctx, w.ID, fired(t0), firedMessage(t, ids))
			return err
		},
	}
	for name, f := range stale {
		if err := f(); !errors.Is(err, store.ErrNotOwner) {
			t.Fatalf("a stale owner's %s came to %v, want ErrNotOwner", name, err)
		}
	}
	after, err := a.Get(ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.State != store.Pending || after.Attempts != before.Attempts || after.LastNote != before.LastNote || !after.NextCheck.Equal(before.NextCheck) {
		t.Fatalf("a stale owner's write stuck: %+v, was %+v", after, before)
	}
	if msgs, err := a.ReadMailbox(ctx, "r", 0, 10); err != nil || len(msgs) != 0 {
		t.Fatalf("a stale owner mailed: %+v %v", msgs, err)
	}

	// A registration on any node is not an owner's transition.
	w2 := createdWatch(t, a, ids, "r", t0)
	// The new owner's settlement, on its current token, is applied.
	if _, _, err := b.SettleAndMail(ctx, w.ID, fired(t0), firedMessage(t, ids)); err != nil {
		t.Fatalf("the owner's settlement: %v", err)
	}
	if msgs, err := b.ReadMailbox(ctx, "r", 0, 10); err != nil || len(msgs) != 1 || msgs[0].WatchID != w.ID {
		t.Fatalf("after the owner's settlement the mailbox is %+v %v", msgs, err)
	}
	// A token read back from the epoch key is as good as the gain's.
	a.Fence(p, tokB)
	if w2.ID.Partition(a.Partitions()) == p {
		if err := a.SetNextCheck(ctx, w2.ID, t0.Add(time.Minute)); err != nil {
			t.Fatalf("on the current token: %v", err)
		}
	}
	// Let go, a refuses its owner's transitions of p at once, and still
	// cancels.
	a.Unfence(p)
	w3 := pendingWatch(t, ids, "r", t0)
	if w3.ID, err = store.NewIDInSlot(t0, ids, w.ID.Slot()); err != nil {
		t.Fatal(err)
	}
	if err := a.Create(ctx, w3); err != nil {
		t.Fatalf("a registration into a partition let go: %v", err)
	}
	a.failpoint = func(kind string) error {
		if kind == "probe" {
			t.Errorf("a probe record of a partition let go was sent")
		}
		return nil
	}
	if err := a.RecordProbe(ctx, w3.ID, store.Probe{Attempts: 1, NextCheck: t0}); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("a probe record of a partition let go: %v", err)
	}
	a.failpoint = nil
	if _, err := a.Settle(ctx, w3.ID, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0}); err != nil {
		t.Fatalf("a cancel on a node not the owner: %v", err)
	}
}
