package core

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/internal/cluster"
	"github.com/vigilhq/vigil/internal/delivery"
	"github.com/vigilhq/vigil/internal/lifecycle"
	"github.com/vigilhq/vigil/internal/natstest"
	"github.com/vigilhq/vigil/internal/netguard"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// attempts counts the push attempts a node started (Push(sending)).
type attempts struct{ n atomic.Int32 }

func (*attempts) Probe(string, string)           {}
func (*attempts) Lag(string, time.Duration)      {}
func (*attempts) Ready(int)                      {}
func (*attempts) Delivery(store.Receipt, string) {}
func (a *attempts) Push(s store.PushState) {
	if s == store.PushSending {
		a.n.Add(1)
	}
}

var _ Metrics = (*attempts)(nil)

// webhookNode is a node whose outbox may push to 127.0.0.1, counting its
// attempts.
func webhookNode(t *testing.T, srv *server.Server, name string, seen *observedBy, count *attempts) *testNode {
	t.Helper()
	open := &atomic.Bool{}
	return startNode(t, srv, name, "digest", open, seen, &fakeJobs{running: map[string]bool{}}, func(c *Config) {
		c.Guard = netguard.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
		c.Metrics = func(*store.Store) Metrics { return count }
	})
}

// hookReceiver is a webhook receiver on 127.0.0.1 recording each
// request's webhook-id in arrival order; holdNext makes the next request
// to arrive wait until it is released.
type hookReceiver struct {
	srv *httptest.Server

	mu      sync.Mutex
	ids     []string      // webhook-ids, in arrival order
	hold    bool          // the next request to arrive waits
	held    chan struct{} // closed when it arrives
	release chan struct{} // it is answered once closed
}

func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	h := &hookReceiver{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.ids = append(h.ids, r.Header.Get("webhook-id"))
		var wait chan struct{}
		if h.hold {
			close(h.held)
			wait, h.hold = h.release, false
		}
		h.mu.Unlock()
		if wait != nil {
			<-wait
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookReceiver) got() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ids)
}

// holdNext makes the next request wait; it returns the channel closed
// when it arrives and the function that answers it (called at cleanup
// too, before the receiver closes).
func (h *hookReceiver) holdNext(t *testing.T) (<-chan struct{}, func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hold, h.held, h.release = true, make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(h.release) })
	t.Cleanup(release)
	return h.held, release
}

func waitClosed(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(within):
		t.Fatalf("waited %s for %s", within, what)
	}
}

// ownedRecipient names a recipient whose push partition n holds now.
func ownedRecipient(t *testing.T, n *testNode) string {
	t.Helper()
	for i := range 256 {
		rid := fmt.Sprintf("agent-%d", i)
		if n.core.Node().Holds(cluster.PartitionLease(store.PushPartition(rid, testPartitions))) {
			return rid
		}
	}
	t.Fatalf("%s holds no push partition", n.name)
	return ""
}

func putHookRecipient(t *testing.T, n *testNode, rid, url string) {
	t.Helper()
	at := time.Now().UTC()
	if _, _, err := n.core.Store.PutRecipient(context.Background(), store.RecipientRecord{
		ID: rid, Status: store.StatusRunning, CreatedAt: at, UpdatedAt: at,
		Webhook: &store.Webhook{URL: url, Secret: testSecret},
	}); err != nil {
		t.Fatal(err)
	}
}

// registerNow registers count watches that fire at their first probe,
// through n, for rid.
func registerNow(t *testing.T, n *testNode, rid string, count int) []store.Watch {
	t.Helper()
	every := time.Second
	var out []store.Watch
	for range count {
		w, err := n.core.Scheduler.Register(context.Background(), scheduler.Registration{Kind: "now", Recipient: store.Recipient{ID: rid}, Every: &every})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, w)
	}
	return out
}

// messages is rid's mailbox, read through n.
func messages(t *testing.T, n *testNode, rid string) []store.Message {
	t.Helper()
	msgs, err := n.core.Store.ReadMailbox(context.Background(), rid, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// Two vigil nodes on one JetStream server, one recipient with a webhook:
// its watches are settled on both nodes (their partitions are split), and
// every push is sent by the node holding the recipient's push partition
// alone, in mailbox order. That node stopping with a push in flight and
// more queued hands the pushes to the other node, which sends the rest in
// order: none lost, none sent twice but the one in flight, under the same
// webhook-id.
func TestTwoNodesPushARecipientFromOneNode(t *testing.T) {
	if testing.Short() {
		t.Skip("two vigil nodes on a JetStream server")
	}
	srv := natstest.Start(t)
	seen := &observedBy{by: map[string]map[string]int{}}
	counts := map[string]*attempts{"a": {}, "b": {}}
	a := webhookNode(t, srv, "a", seen, counts["a"])
	b := webhookNode(t, srv, "b", seen, counts["b"])
	natstest.WaitFor(t, within, "the partitions split between a and b", func() bool {
		ha, hb := a.held(), b.held()
		return len(ha)+len(hb) == testPartitions && len(ha) > 0 && len(hb) > 0
	})
	owner, other := a, b
	rid := ownedRecipient(t, owner)
	rc := newHookReceiver(t)
	putHookRecipient(t, a, rid, rc.srv.URL+"/hook")

	// Watches through both nodes, settled on both.
	first := append(registerNow(t, a, rid, 8), registerNow(t, b, rid, 8)...)
	settledBy := map[string]int{}
	natstest.WaitFor(t, within, "every watch fired", func() bool { return len(messages(t, b, rid)) == len(first) })
	for _, w := range first {
		for node := range seen.nodes(w.ID.String()) {
			settledBy[node]++
		}
	}
	if settledBy["a"] == 0 || settledBy["b"] == 0 {
		t.Fatalf("the watches were settled by %v; want both nodes", settledBy)
	}
	msgs := messages(t, a, rid)
	idOf := func(seq uint64) string { return msgs[seq-1].ID.String() }
	natstest.WaitFor(t, within, "every push received", func() bool { return len(rc.got()) == len(first) })
	want := make([]string, len(first))
	for i := range want {
		want[i] = idOf(uint64(i + 1))
	}
	if got := rc.got(); !slices.Equal(got, want) {
		t.Fatalf("received %v, want the mailbox's ids in seq order %v", got, want)
	}
	if n := counts[other.name].n.Load(); n != 0 {
		t.Fatalf("%s, not holding %s's push partition, made %d attempts", other.name, rid, n)
	}

	// The owner stops with the next push in flight and more behind it.
	arrived, release := rc.holdNext(t)
	second := registerNow(t, other, rid, 8)
	waitClosed(t, arrived, "the next push to arrive")
	all := len(first) + len(second)
	natstest.WaitFor(t, within, "the second watches fired", func() bool { return len(messages(t, a, rid)) == all })
	msgs = messages(t, a, rid)
	inFlight := idOf(uint64(len(first) + 1))
	if got := rc.got(); got[len(got)-1] != inFlight {
		t.Fatalf("the push held is %s, want the next in seq order %s", got[len(got)-1], inFlight)
	}
	owner.stop()
	release()
	natstest.WaitFor(t, within, "every push final", func() bool {
		for _, m := range messages(t, other, rid) {
			if m.Push == nil || !m.Push.State.Final() {
				return false
			}
		}
		return true
	})
	want = make([]string, all)
	for i := range want {
		want[i] = idOf(uint64(i + 1))
	}
	got := rc.got()
	// The push in flight may have been sent again (at least once, under
	// its webhook-id): only it may repeat, and only right after itself.
	if len(got) == all+1 && got[len(first)+1] == inFlight {
		got = slices.Delete(got, len(first)+1, len(first)+2)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("received %v, want the mailbox's ids in seq order %v", got, want)
	}
	for _, m := range messages(t, other, rid) {
		wantState := store.PushDelivered
		if m.ID.String() == inFlight && m.Push.State == store.PushUnknown {
			wantState = store.PushUnknown // never sent again: the rule for a request with no answer
		}
		if m.Push.State != wantState {
			t.Fatalf("message %d's push %+v, want %s", m.Seq, m.Push, wantState)
		}
	}
	if n := counts[other.name].n.Load(); n < int32(len(second)-1) {
		t.Fatalf("%s, taking over, made %d attempts, want the %d left", other.name, n, len(second)-1)
	}
}

// A node that restarts while another node's push is in flight leaves it
// as it is: it recovers only the push partitions it gains, and the push
// of a partition the other node kept is that node's to finish.
func TestARestartedNodeLeavesAnotherNodesPushInFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("two vigil nodes on a JetStream server")
	}
	srv := natstest.Start(t)
	seen := &observedBy{by: map[string]map[string]int{}}
	a := webhookNode(t, srv, "a", seen, &attempts{})
	b := webhookNode(t, srv, "b", seen, &attempts{})
	natstest.WaitFor(t, within, "the partitions split between a and b", func() bool {
		return len(a.held())+len(b.held()) == testPartitions && len(b.held()) > 0
	})
	rid := ownedRecipient(t, a)
	rc := newHookReceiver(t)
	putHookRecipient(t, a, rid, rc.srv.URL+"/hook")
	arrived, release := rc.holdNext(t)
	registerNow(t, b, rid, 1)
	waitClosed(t, arrived, "a's push")
	b.stop()
	b = webhookNode(t, srv, "b", seen, &attempts{})
	natstest.WaitFor(t, within, "b back, its push partitions loaded", func() bool {
		held := b.held()
		return len(held) > 0 && len(held)+len(a.held()) == testPartitions && b.core.Outbox.PushPartitions() == len(held)
	})
	if p := messages(t, b, rid)[0].Push; p.State != store.PushSending {
		t.Fatalf("a's push in flight is %s after b restarted, want still sending", p.State)
	}
	release()
	natstest.WaitFor(t, within, "a's push delivered", func() bool {
		return messages(t, b, rid)[0].Push.State == store.PushDelivered
	})
	if got := rc.got(); len(got) != 1 {
		t.Fatalf("received %v, want the one push once", got)
	}
}

// partitionedOutbox is a cluster node's outbox (testPartitions) over a
// badger store of its own, not started.
func partitionedOutbox(t *testing.T) *delivery.Outbox {
	t.Helper()
	st, err := badger.OpenStore(t.TempDir(), badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	o, err := delivery.NewOutbox(delivery.OutboxConfig{Store: st, Partitions: testPartitions})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// The outbox's hold on a partition follows the lease as the lease loop
// tells of it, not when the partition queue gets to it: a gain claims it
// at once (the queue's load then counts), and a loss lets it go at once,
// before the lease is given up.
func TestTheOutboxFollowsTheLeasesAtOnce(t *testing.T) {
	o := partitionedOutbox(t)
	ctx := context.Background()
	stop := lifecycle.Go(ctx, o.Run)
	t.Cleanup(func() { _ = stop() })
	h := &holder{c: &Core{Outbox: o}, queue: newPartitionQueue(clock.Wall{})} // the queue is not running
	h.Gained(cluster.PartitionLease(3))
	if _, err := o.Gain(ctx, 3); err != nil { // the queue's turn
		t.Fatal(err)
	}
	if n := o.PushPartitions(); n != 1 {
		t.Fatalf("the outbox holds %d push partitions after the gain, want the one claimed as the lease came", n)
	}
	h.Lost(cluster.PartitionLease(3))
	if n := o.PushPartitions(); n != 0 {
		t.Fatalf("the outbox still holds %d push partitions after the loss", n)
	}
}
