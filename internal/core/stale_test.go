package core

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/internal/cluster"
	"github.com/vigilhq/vigil/internal/delivery"
	"github.com/vigilhq/vigil/internal/natstest"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/store"
)

// pause is a gate a paused part of a node waits at: open until stop,
// open again at resume.
type pause struct {
	mu sync.Mutex
	ch chan struct{} // closed while running
}

func newPause() *pause {
	ch := make(chan struct{})
	close(ch)
	return &pause{ch: ch}
}

func (p *pause) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ch = make(chan struct{})
}

func (p *pause) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.ch: // running already
	default:
		close(p.ch)
	}
}

func (p *pause) wait() {
	p.mu.Lock()
	ch := p.ch
	p.mu.Unlock()
	<-ch
}

// pausedKV is a node's leases bucket whose writes wait at the gate: a
// node whose lease loop is paused (a stopped process, a long GC pause)
// renews nothing and takes nothing until it resumes, and then carries on
// from where it stood.
type pausedKV struct {
	jetstream.KeyValue
	p *pause
}

func (k pausedKV) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	k.p.wait()
	return k.KeyValue.Put(ctx, key, value)
}

func (k pausedKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	k.p.wait()
	return k.KeyValue.Create(ctx, key, value, opts...)
}

func (k pausedKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	k.p.wait()
	return k.KeyValue.Update(ctx, key, value, rev)
}

func (k pausedKV) Delete(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	k.p.wait()
	return k.KeyValue.Delete(ctx, key, opts...)
}

// pausedDeliverer holds each settlement at the gate: a probe that asked
// whether its node holds the partition, was told yes, and was paused
// before its write went out. It records what each held settlement came
// to once resumed.
type pausedDeliverer struct {
	scheduler.Deliverer
	p *pause

	held    atomic.Int32 // settlements waiting at the gate now
	mu      sync.Mutex
	results []error // of the settlements that waited, once they returned
}

func (d *pausedDeliverer) Settle(ctx context.Context, id store.ID, st store.Settlement, m store.Message) (store.Watch, error) {
	d.held.Add(1)
	d.p.wait()
	w, err := d.Deliverer.Settle(ctx, id, st, m)
	d.mu.Lock()
	d.results = append(d.results, err)
	d.mu.Unlock()
	d.held.Add(-1)
	return w, err
}

func (d *pausedDeliverer) returned() []error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]error(nil), d.results...)
}

// leaseCount records a node's lease moves in order: true a gain.
type leaseCount struct {
	mu    sync.Mutex
	moves []bool
}

func (c *leaseCount) Held(int, int) {}
func (c *leaseCount) Moved(gained bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.moves = append(c.moves, gained)
}
func (c *leaseCount) Renewed(bool) {}

// since is the moves from the i-th on.
func (c *leaseCount) since(i int) []bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]bool(nil), c.moves[i:]...)
}

func (c *leaseCount) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.moves)
}

// A stale owner writes nothing that sticks: node a's probes settle, but
// each settlement is held before its write, and then a's lease loop is
// paused past the TTL; b takes every partition and fires every watch.
// When a resumes, each settlement it held is refused by the store (the
// watch is no longer pending, or its partition fenced by b), a learns it lost its leases (the holder
// hears of each) before it holds any again, and every watch has exactly
// one message.
func TestAStaleOwnerWritesNothingThatSticks(t *testing.T) {
	if testing.Short() {
		t.Skip("two vigil nodes on a JetStream server")
	}
	srv, open, seen, jobs := nodeFixture(t, false)
	settles, leases := newPause(), newPause()
	var held *pausedDeliverer
	moves := &leaseCount{}
	a := startHookedNode(t, srv, "a", "digest", open, seen, jobs, nodeHooks{
		deliver: func(d *delivery.Delivery, _ *store.Store) scheduler.Deliverer {
			held = &pausedDeliverer{Deliverer: d, p: settles}
			return held
		},
		kv:      func(kv jetstream.KeyValue) jetstream.KeyValue { return pausedKV{KeyValue: kv, p: leases} },
		metrics: moves,
	})
	b := startNode(t, srv, "b", "digest", open, seen, jobs)
	ws, _ := splitAndRegister(t, a, b, seen)

	// a's settlements wait before their writes; the watches may settle.
	settles.stop()
	open.Store(true)
	natstest.WaitFor(t, within, "a settlement of a's held before its write", func() bool { return held.held.Load() > 0 })
	// Then a's lease loop stops too, past the TTL: b takes a's partitions
	// once their leases expire, and fires every watch.
	movedBefore := moves.count()
	heldByA := len(a.held())
	leases.stop()
	natstest.WaitFor(t, within, "b holding every partition", func() bool { return len(b.held()) == testPartitions })
	natstest.WaitFor(t, within, "every watch's message once, read through b", func() bool { return firedOnce(b.mailbox(t), ws) })
	waiting := int(held.held.Load())

	// a resumes: each settlement it held is refused, nothing it wrote
	// sticks, and it hears it lost every lease it held.
	settles.resume()
	leases.resume()
	natstest.WaitFor(t, within, "a's held settlements returning", func() bool { return len(held.returned()) >= waiting && held.held.Load() == 0 })
	for _, err := range held.returned() {
		// Refused by the row (settled since: no longer pending) or by the
		// partition's fence (b has fenced it since: not the owner).
		if !errors.Is(err, store.ErrNotPending) && !errors.Is(err, store.ErrNotOwner) {
			t.Fatalf("a stale owner's settlement came to %v, want it refused", err)
		}
	}
	natstest.WaitFor(t, within, "a learning it lost the partitions it held", func() bool {
		return len(moves.since(movedBefore)) >= heldByA
	})
	// Its first moves after the pause are the losses, before any gain.
	for i, gained := range moves.since(movedBefore)[:heldByA] {
		if gained {
			t.Fatalf("a's move %d after resuming is a gain, before it lost the %d leases it held", i, heldByA)
		}
	}
	if !firedOnce(b.mailbox(t), ws) {
		t.Fatalf("after the stale owner resumed, the mailbox is %+v", b.mailbox(t))
	}
	// a comes back as a live node and takes its share again.
	natstest.WaitFor(t, within, "a and b sharing the partitions again", func() bool {
		return len(a.held()) > 0 && len(a.held())+len(b.held()) == testPartitions
	})
	if !firedOnce(a.mailbox(t), ws) {
		t.Fatalf("once a is back, the mailbox is %+v", a.mailbox(t))
	}
	t.Logf("%d of a's settlements held past its lease, each refused; %d of its partitions lost and taken by b", waiting, heldByA)
}

// A stale owner's write to a row nobody wrote since it read it does not
// stick either: node a's settlements are held before their writes and
// its lease loop is paused past the TTL; b takes and fences every
// partition, but b's own settlements are held too, so a's watches' rows
// are as a read them. When a's settlements resume (its lease loop still
// paused: it has not heard of the loss), each is refused by the
// partition's fence (store.ErrNotOwner) and none mails anything; once
// b's resume, every watch has exactly one message, b's.
func TestAStaleOwnersWriteToAnUntouchedRowIsFenced(t *testing.T) {
	if testing.Short() {
		t.Skip("two vigil nodes on a JetStream server")
	}
	srv, open, seen, jobs := nodeFixture(t, false)
	settlesA, settlesB, leases := newPause(), newPause(), newPause()
	var heldA, heldB *pausedDeliverer
	a := startHookedNode(t, srv, "a", "digest", open, seen, jobs, nodeHooks{
		deliver: func(d *delivery.Delivery, _ *store.Store) scheduler.Deliverer {
			heldA = &pausedDeliverer{Deliverer: d, p: settlesA}
			return heldA
		},
		kv: func(kv jetstream.KeyValue) jetstream.KeyValue { return pausedKV{KeyValue: kv, p: leases} },
	})
	settlesB.stop()
	b := startHookedNode(t, srv, "b", "digest", open, seen, jobs, nodeHooks{
		deliver: func(d *delivery.Delivery, _ *store.Store) scheduler.Deliverer {
			heldB = &pausedDeliverer{Deliverer: d, p: settlesB}
			return heldB
		},
	})
	t.Cleanup(settlesB.resume)
	ws, inA := splitAndRegister(t, a, b, seen)
	settlesA.stop()
	t.Cleanup(settlesA.resume)
	open.Store(true)
	natstest.WaitFor(t, within, "a settlement of a's held before its write", func() bool { return heldA.held.Load() > 0 })
	leases.stop()
	t.Cleanup(leases.resume)
	natstest.WaitFor(t, within, "b holding and fencing every partition", func() bool {
		for p := range testPartitions {
			if !b.core.cluster.own.Holds(p) {
				return false
			}
		}
		return true
	})
	natstest.WaitFor(t, within, "a settlement of b's held before its write", func() bool { return heldB.held.Load() > 0 })
	waiting := int(heldA.held.Load())

	// a's held settlements go out on rows nobody wrote since a read them.
	settlesA.resume()
	natstest.WaitFor(t, within, "a's held settlements returning", func() bool {
		return len(heldA.returned()) >= waiting && heldA.held.Load() == 0
	})
	for _, err := range heldA.returned() {
		if !errors.Is(err, store.ErrNotOwner) {
			t.Fatalf("a stale owner's settlement of an untouched row came to %v, want ErrNotOwner", err)
		}
	}
	if msgs := b.mailbox(t); len(msgs) != 0 {
		t.Fatalf("a stale owner's settlement mailed %+v", msgs)
	}
	for _, w := range inA {
		got, err := b.core.Store.Get(context.Background(), w.ID)
		if err != nil || got.State != store.Pending {
			t.Fatalf("a stale owner's settlement stuck: %+v %v", got, err)
		}
	}
	// b's settlements go out: every watch once, by b.
	settlesB.resume()
	natstest.WaitFor(t, within, "every watch's message once, read through b", func() bool { return firedOnce(b.mailbox(t), ws) })
	leases.resume()
	natstest.WaitFor(t, within, "a and b sharing the partitions again", func() bool {
		return len(a.held()) > 0 && len(a.held())+len(b.held()) == testPartitions
	})
	if !firedOnce(a.mailbox(t), ws) {
		t.Fatalf("once a is back, the mailbox is %+v", a.mailbox(t))
	}
	t.Logf("%d of a's settlements of untouched rows held past its lease, each refused by the fence", waiting)
}

// unfenceRecorder is a ClusterStore that records the partitions it is
// told to let go; nothing else of it is called.
type unfenceRecorder struct {
	ClusterStore
	mu  sync.Mutex
	let []int
}

func (u *unfenceRecorder) Unfence(p int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.let = append(u.let, p)
}

// A lost partition is let go in the store as the lease loop tells of the
// loss, before anyone else can hold the lease, not when the partition
// queue gets to it: the store refuses the node's owner's writes of it at
// once, and the scheduler no longer holds it.
func TestALostPartitionIsUnfencedAtOnce(t *testing.T) {
	o := partitionedOutbox(t)
	rec := &unfenceRecorder{}
	cl := &clustered{adapter: rec, own: &ownership{n: testPartitions, fenced: make([]atomic.Bool, testPartitions)}}
	cl.own.fenced[3].Store(true)
	h := &holder{c: &Core{Outbox: o, cluster: cl}, queue: newPartitionQueue(clock.Wall{})} // the queue is not running
	h.Lost(cluster.PartitionLease(3))
	if cl.own.fenced[3].Load() {
		t.Fatal("partition 3 is still fenced after its loss")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.let) != 1 || rec.let[0] != 3 {
		t.Fatalf("the store was told to let go of %v, want [3]", rec.let)
	}
}

// failingFence is a ClusterStore whose partition fences fail while
// failing is set: the servers do not take the epoch's write.
type failingFence struct {
	ClusterStore
	failing atomic.Bool
}

func (f *failingFence) FencePartition(ctx context.Context, p int, node string, at time.Time) (uint64, error) {
	if f.failing.Load() {
		return 0, errors.New("fake: the epoch's write got no answer")
	}
	return f.ClusterStore.FencePartition(ctx, p, node, at)
}

// A partition whose lease the node holds is not the scheduler's until
// its epoch is written: a watch in it is neither armed nor probed, so no
// write of it goes out unfenced. Once the epoch is written (the queue
// tries the gain again), the watch is probed and fires.
func TestAPartitionIsNotHeldUntilItIsFenced(t *testing.T) {
	if testing.Short() {
		t.Skip("a vigil node on a JetStream server")
	}
	srv, open, seen, jobs := nodeFixture(t, true)
	ff := &failingFence{}
	ff.failing.Store(true)
	a := startHookedNode(t, srv, "a", "digest", open, seen, jobs, nodeHooks{
		store: func(st ClusterStore) ClusterStore { ff.ClusterStore = st; return ff },
	})
	natstest.WaitFor(t, within, "a holding every partition's lease", func() bool { return len(a.held()) == testPartitions })
	for p := range testPartitions {
		if a.core.cluster.own.Holds(p) {
			t.Fatalf("the scheduler holds partition %d, whose epoch was never written", p)
		}
	}
	every := time.Second
	w, err := a.core.Scheduler.Register(context.Background(), scheduler.Registration{Kind: "gate", Recipient: store.Recipient{ID: "r"}, Every: &every})
	if err != nil {
		t.Fatal(err)
	}
	ff.failing.Store(false)
	natstest.WaitFor(t, within, "the watch's message, once a's partitions are fenced", func() bool { return firedOnce(a.mailbox(t), []store.Watch{w}) })
}

// splitAndRegister waits for a and b to split the partitions, registers
// sixteen gate watches through b, and waits for a to probe one of those
// that landed in its partitions: all of them, and a's.
func splitAndRegister(t *testing.T, a, b *testNode, seen *observedBy) (ws, inA []store.Watch) {
	t.Helper()
	natstest.WaitFor(t, within, "the partitions split between a and b", func() bool {
		ha, hb := a.held(), b.held()
		return len(ha)+len(hb) == testPartitions && len(ha) > 0 && len(hb) > 0
	})
	every := time.Second
	for range 16 {
		w, err := b.core.Scheduler.Register(context.Background(), scheduler.Registration{Kind: "gate", Recipient: store.Recipient{ID: "r"}, Every: &every})
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
		if a.core.Node().Holds(cluster.PartitionLease(w.ID.Partition(testPartitions))) {
			inA = append(inA, w)
		}
	}
	if len(inA) == 0 {
		t.Fatal("no watch of sixteen landed in a's partitions")
	}
	natstest.WaitFor(t, within, "a probing a watch of its partitions", func() bool {
		for _, w := range inA {
			if seen.nodes(w.ID.String())["a"] > 0 {
				return true
			}
		}
		return false
	})
	return ws, inA
}
