package natsstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/vigilhq/vigil/store"
)

// checkFor calls f until it returns nil or d passes, as nats-server's own
// cluster tests wait for an election: the state waited on is the
// servers', which tell no one when it changes.
func checkFor(t *testing.T, d time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	var err error
	for time.Now().Before(deadline) {
		if err = f(); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("not within %s: %v", d, err)
}

// TestThreeNodeClusterThroughALeaderChange opens the store with three
// replicas on three embedded servers, writes and reads, shuts the
// bucket's stream leader down, and goes on writing and reading through
// the two left: every acknowledged write is there, and a fired watch has
// exactly one message.
func TestThreeNodeClusterThroughALeaderChange(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-node cluster")
	}
	start := time.Now()
	servers := runCluster(t, 3)
	var s testStore
	checkFor(t, 20*time.Second, func() error {
		var urls []string
		for _, srv := range servers {
			urls = append(urls, srv.ClientURL())
		}
		var err error
		s, err = openDomain(context.Background(), Config{URLs: urls, Replicas: 3, Timeout: 2 * time.Second})
		return err
	})
	t.Cleanup(func() { _ = s.Close() })
	if s.Replicas() != 3 {
		t.Fatalf("replicas %d", s.Replicas())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ids := newIDs()
	runningFor(t, s, "r", "")
	var before []store.Watch
	for i := range 5 {
		before = append(before, createdWatch(t, s, ids, "r", t0.Add(time.Duration(i)*time.Second)))
	}
	if _, _, err := s.SettleAndMail(ctx, before[0].ID, fired(t0), firedMessage(t, ids)); err != nil {
		t.Fatal(err)
	}

	var leader *server.Server
	for _, srv := range servers {
		if srv.JetStreamIsStreamLeader("$G", "KV_"+DefaultBucket) {
			leader = srv
		}
	}
	if leader == nil {
		t.Fatal("no stream leader")
	}
	t.Logf("written before the change at %s", time.Since(start))
	leader.Shutdown()
	leader.WaitForShutdown()

	// The first write after the leader is gone waits for the election.
	var after store.Watch
	checkFor(t, 30*time.Second, func() error {
		w := pendingWatch(t, ids, "r", t0.Add(time.Minute))
		err := s.CreateIfRunning(ctx, w, 0)
		if errors.Is(err, store.ErrExists) {
			err = nil // the attempt before was stored, its answer lost
		}
		after = w
		return err
	})
	t.Logf("written after the change at %s", time.Since(start))
	for _, w := range before[1:] {
		if _, _, err := s.SettleAndMail(ctx, w.ID, fired(t0.Add(time.Hour)), firedMessage(t, ids)); err != nil {
			t.Fatalf("settle after the leader change: %v", err)
		}
	}
	rows, _, err := s.List(ctx, store.Filter{Recipient: "r"})
	if err != nil || len(rows) != 6 {
		t.Fatalf("%d rows after the leader change, want 6: %v", len(rows), err)
	}
	if got, err := s.Get(ctx, after.ID); err != nil || got.State != store.Pending {
		t.Fatalf("the row written after the change: %+v %v", got, err)
	}
	msgs, err := s.ReadMailbox(ctx, "r", 0, 100)
	if err != nil || len(msgs) != 5 {
		t.Fatalf("%d messages, want 5 (one per fired watch): %v", len(msgs), err)
	}
	// Two nodes on two different servers: a long poll on one wakes on
	// the other's append.
	var alive []*server.Server
	for _, srv := range servers {
		if srv != leader {
			alive = append(alive, srv)
		}
	}
	a := openStore(t, Config{Timeout: 2 * time.Second}, alive[0])
	b := openStore(t, Config{Timeout: 2 * time.Second}, alive[1])
	woke := make(chan error, 1)
	go func() { woke <- a.feeds().WaitMailbox(ctx, "r", 5) }()
	if m, _, err := b.AppendIfRunning(ctx, "r", firedMessage(t, ids)); err != nil || m.Seq != 6 {
		t.Fatalf("append through another server: %+v %v", m, err)
	}
	if err := <-woke; err != nil {
		t.Fatalf("the long poll on one server did not wake on an append through another: %v", err)
	}
	seen := map[store.ID]bool{}
	for i, m := range msgs {
		if m.Seq != uint64(i+1) || seen[m.WatchID] {
			t.Fatalf("message %d: seq %d, watch %s seen before %v", i, m.Seq, m.WatchID, seen[m.WatchID])
		}
		seen[m.WatchID] = true
	}
}
