package natsstore

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
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

// The owner's fence rides on a write the batch makes anyway when there is
// one left after the recipient's fence, and gains a carrier message only
// when there is none; either way exactly one message checks the epoch,
// and the epoch key itself is never written by a transition.
func TestTheEpochsCheckRidesOnAWriteWhenItCan(t *testing.T) {
	s := &Store{subj: "$KV.t.", partitions: 64}
	epochSubj := s.subj + epochKey(5)
	for _, tt := range []struct {
		name    string
		unread  int // writes of keys never read
		carrier bool
	}{
		{"no write to carry it", 0, true},
		{"one write, the recipient's fence's", 1, true},
		{"a write left over", 2, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tx := s.newTxn(context.Background())
			tx.reads["w.x"] = entry{val: []byte("row"), rev: 7, exists: true}
			tx.reads["rc.r"] = entry{val: []byte("rec"), rev: 3, exists: true}
			tx.put("w.x", []byte("row2"))
			tx.fence("rc.r")
			for i := range tt.unread {
				tx.put("s.new."+strconv.Itoa(i), nil)
			}
			tx.epoch = &epochCheck{p: 5, token: 11}
			checks, carriers := 0, 0
			for _, m := range tx.msgs() {
				switch m.Subject {
				case epochSubj:
					t.Fatal("a transition wrote the epoch key")
				case s.subj + carrierKey(5):
					carriers++
				}
				if m.Header.Get(hdrExpectSubj) == epochSubj {
					checks++
					if m.Header.Get(hdrExpectSeq) != "11" {
						t.Fatalf("the epoch's check expects %s, want 11", m.Header.Get(hdrExpectSeq))
					}
				}
			}
			if checks != 1 || (carriers == 1) != tt.carrier || carriers > 1 {
				t.Fatalf("%d messages check the epoch and %d carry it alone; want 1 and a carrier %v", checks, carriers, tt.carrier)
			}
		})
	}
}
