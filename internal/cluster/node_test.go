package cluster

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/natstest"
)

// recordingHolder is a fake Holder: it keeps what it was told.
type recordingHolder struct {
	mu     sync.Mutex
	holds  map[Lease]bool
	events []string
}

func newHolder() *recordingHolder { return &recordingHolder{holds: map[Lease]bool{}} }

func (h *recordingHolder) Gained(l Lease) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.holds[l] = true
	h.events = append(h.events, "+"+string(l))
}

func (h *recordingHolder) Lost(l Lease) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.holds, l)
	h.events = append(h.events, "-"+string(l))
}

func (h *recordingHolder) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.holds)
}

const testTTL = 2 * time.Second

func bucket(t testing.TB) jetstream.KeyValue {
	t.Helper()
	_, js := natstest.Connect(t, natstest.Start(t))
	kv, err := OpenBucket(context.Background(), js, BucketConfig{TTL: testTTL})
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

func node(t *testing.T, kv jetstream.KeyValue, name string, clk clock.Clock, leases []Lease) (*Node, *recordingHolder) {
	t.Helper()
	h := newHolder()
	n, err := New(Config{KV: kv, TTL: testTTL, Info: Info{Node: name}, Leases: leases, Holder: h, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return n, h
}

// turn is one node's turn with a fresh view, as Run would take it after
// the watcher delivered the others' writes.
func turn(t testing.TB, n *Node) {
	t.Helper()
	ctx := context.Background()
	if err := n.sync(ctx); err != nil {
		t.Fatal(err)
	}
	n.Pass(ctx)
}

// exclusive fails the test if two nodes would both act on one lease.
func exclusive(t *testing.T, leases []Lease, nodes ...*Node) {
	t.Helper()
	for _, l := range leases {
		var by []string
		for _, n := range nodes {
			if n.Holds(l) {
				by = append(by, n.Name())
			}
		}
		if len(by) > 1 {
			t.Fatalf("lease %s held by %v at once", l, by)
		}
	}
}

func TestLeasesSpreadAsNodesJoinAndLeave(t *testing.T) {
	kv := bucket(t)
	clock := fakeclock.At(time.Unix(1_800_000_000, 0))
	leases := Leases(12, "router")
	a, ha := node(t, kv, "a", clock, leases)
	b, hb := node(t, kv, "b", clock, leases)
	c, hc := node(t, kv, "c", clock, leases)

	turn(t, a)
	if ha.count() != len(leases) {
		t.Fatalf("a alone holds %d of %d leases", ha.count(), len(leases))
	}
	// b joins: it publishes itself but can take nothing a holds; a gives
	// up b's share on its next turn, and b takes it on its own.
	turn(t, b)
	exclusive(t, leases, a, b)
	turn(t, a)
	exclusive(t, leases, a, b)
	turn(t, b)
	exclusive(t, leases, a, b)
	if ha.count()+hb.count() != len(leases) || ha.count() < 6 || hb.count() < 6 {
		t.Fatalf("a holds %d and b %d of %d leases; want them split evenly", ha.count(), hb.count(), len(leases))
	}
	turn(t, c)
	turn(t, a)
	turn(t, b)
	turn(t, c)
	exclusive(t, leases, a, b, c)
	for _, h := range []*recordingHolder{ha, hb, hc} {
		if h.count() < 4 || h.count() > 5 {
			t.Fatalf("holders hold %d, %d and %d of %d leases; want 4 or 5 each", ha.count(), hb.count(), hc.count(), len(leases))
		}
	}
	// c leaves cleanly: its leases are free at once and the others take
	// them on their next turns, with no wait for a TTL.
	c.Leave(context.Background())
	if hc.count() != 0 {
		t.Fatalf("c still holds %d leases after leaving", hc.count())
	}
	turn(t, a)
	turn(t, b)
	exclusive(t, leases, a, b, c)
	// b gave up what the two-node assignment moves to a; a takes it.
	turn(t, a)
	exclusive(t, leases, a, b, c)
	if ha.count()+hb.count() != len(leases) {
		t.Fatalf("after c left, a holds %d and b %d of %d", ha.count(), hb.count(), len(leases))
	}
}

// A node that has not renewed in time stops acting on its leases before
// they can have expired in the servers, whether or not anyone took them.
func TestOverdueLeasesAreNotTrusted(t *testing.T) {
	kv := bucket(t)
	clock := fakeclock.At(time.Unix(1_800_000_000, 0))
	leases := Leases(4)
	a, ha := node(t, kv, "a", clock, leases)
	turn(t, a)
	l := PartitionLease(0)
	if !a.Holds(l) {
		t.Fatal("a does not hold its lease")
	}
	clock.Add(testTTL - a.cfg.Margin - time.Millisecond)
	if !a.Holds(l) {
		t.Fatal("a stopped trusting its lease before the margin")
	}
	clock.Add(time.Millisecond)
	if a.Holds(l) {
		t.Fatalf("a still trusts a lease %s after its last renewal, with a %s margin of a %s TTL", testTTL-a.cfg.Margin, a.cfg.Margin, testTTL)
	}
	// Its next turn tells the holder before it writes anything.
	ha.mu.Lock()
	ha.events = nil
	ha.mu.Unlock()
	a.Pass(context.Background())
	ha.mu.Lock()
	defer ha.mu.Unlock()
	if len(ha.events) == 0 || ha.events[0] != "-"+string(PartitionLease(0)) && ha.events[0][0] != '-' {
		t.Fatalf("the overdue pass began with %v, want the leases lost first", ha.events)
	}
}

// A stale owner (a node paused past its lease, then resumed) gets nothing
// to stick: its renewal is refused by the revision the new holder wrote.
func TestAStaleOwnersRenewalIsRefused(t *testing.T) {
	kv := bucket(t)
	leases := Leases(3)
	// a's clock stands still: it believes its leases are fresh, as a
	// process frozen mid-pass would.
	frozen := fakeclock.At(time.Unix(1_800_000_000, 0))
	a, ha := node(t, kv, "a", frozen, leases)
	turn(t, a)
	if ha.count() != 3 {
		t.Fatalf("a holds %d leases", ha.count())
	}
	// The servers expire a's leases and node key; b, on the wall clock,
	// takes everything once they are gone.
	b, hb := node(t, kv, "b", clock.Wall{}, leases)
	natstest.WaitFor(t, 4*testTTL, "b taking a's expired leases", func() bool {
		turn(t, b)
		return hb.count() == 3
	})
	frozen.Add(a.renewEvery())
	ctx := context.Background()
	if err := a.sync(ctx); err != nil {
		t.Fatal(err)
	}
	a.Pass(ctx)
	if ha.count() != 0 {
		t.Fatalf("a's stale renewal kept %d leases", ha.count())
	}
	for _, l := range leases {
		e, err := kv.Get(ctx, string(l))
		if err != nil {
			t.Fatal(err)
		}
		if string(e.Value()) != string(b.self) {
			t.Fatalf("lease %s is %q's after a's stale pass, want b's", l, e.Value())
		}
	}
}

// A node that dies holding leases (no Leave) loses them to the TTL: a
// running node takes them within the TTL and a pass.
func TestRunTakesOverADeadNodesLeases(t *testing.T) {
	kv := bucket(t)
	leases := Leases(8, "upkeep")
	dead, hd := node(t, kv, "dead", clock.Wall{}, leases)
	live, hl := node(t, kv, "live", clock.Wall{}, leases)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Both run; once split, dead stops without leaving, as a SIGKILL.
	deadCtx, kill := context.WithCancel(ctx)
	done := make(chan error, 2)
	go func() { done <- dead.runUntilKilled(deadCtx) }()
	go func() { done <- live.Run(ctx) }()
	natstest.WaitFor(t, 4*testTTL, "the two nodes splitting the leases", func() bool {
		return hd.count() > 0 && hl.count() > 0 && hd.count()+hl.count() == len(leases)
	})
	kill()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	natstest.WaitFor(t, 4*testTTL, "live taking the dead node's leases", func() bool { return hl.count() == len(leases) })
	if took := time.Since(killed); took > testTTL+time.Second {
		t.Fatalf("the takeover took %s, more than the %s TTL and a second", took, testTTL)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Run left on its way out: nothing is held.
	for _, l := range leases {
		if _, err := kv.Get(context.Background(), string(l)); !errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Fatalf("lease %s after a clean stop: %v, want it released", l, err)
		}
	}
}

// runUntilKilled is Run without the Leave a clean stop does.
func (n *Node) runUntilKilled(ctx context.Context) error {
	err := n.runLoop(ctx)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

func TestOpenBucketRefusesAnotherShape(t *testing.T) {
	_, js := natstest.Connect(t, natstest.Start(t))
	ctx := context.Background()
	if _, err := OpenBucket(ctx, js, BucketConfig{TTL: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenBucket(ctx, js, BucketConfig{TTL: 2 * time.Second}); err != nil {
		t.Fatalf("reopening the same shape: %v", err)
	}
	_, err := OpenBucket(ctx, js, BucketConfig{TTL: 3 * time.Second})
	var mm *MismatchError
	if !errors.As(err, &mm) || mm.Field != "lease ttl" {
		t.Fatalf("another ttl: %v, want a *MismatchError on the lease ttl", err)
	}
	if _, err := OpenBucket(ctx, js, BucketConfig{TTL: 2 * time.Second, Replicas: 3}); !errors.As(err, &mm) || mm.Field != "replicas" {
		t.Fatalf("another replica count: %v, want a *MismatchError on replicas", err)
	}
	if _, err := OpenBucket(ctx, js, BucketConfig{TTL: time.Millisecond}); err == nil {
		t.Fatal("a ttl under the minimum was accepted")
	}
}

// A named leases bucket is its own: another TTL there is no mismatch
// with the default one, and a mismatch names the bucket it found.
func TestOpenBucketByName(t *testing.T) {
	if got := LeaseBucket("vigil"); got != Bucket {
		t.Fatalf("LeaseBucket(vigil) = %q, want %q", got, Bucket)
	}
	_, js := natstest.Connect(t, natstest.Start(t))
	ctx := context.Background()
	if _, err := OpenBucket(ctx, js, BucketConfig{TTL: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	kv, err := OpenBucket(ctx, js, BucketConfig{Name: LeaseBucket("other"), TTL: 3 * time.Second})
	if err != nil {
		t.Fatalf("another cluster's leases bucket: %v", err)
	}
	if kv.Bucket() != "other_leases" {
		t.Fatalf("opened %q, want other_leases", kv.Bucket())
	}
	_, err = OpenBucket(ctx, js, BucketConfig{Name: "other_leases", TTL: 2 * time.Second})
	var mm *MismatchError
	if !errors.As(err, &mm) || mm.Bucket != "other_leases" {
		t.Fatalf("another ttl on other_leases: %v, want a *MismatchError naming it", err)
	}
}

// A node alone holds every lease, and tells its metrics the partitions
// and the jobs apart.
func TestHeldCountsPartitionsAndJobsApart(t *testing.T) {
	kv := bucket(t)
	clock := fakeclock.At(time.Unix(1_800_000_000, 0))
	m := &countingMetrics{}
	n, err := New(Config{KV: kv, TTL: testTTL, Info: Info{Node: "a"}, Leases: Leases(6, "router", "upkeep"), Holder: newHolder(), Clock: clock, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	turn(t, n)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.partitions != 6 || m.jobs != 2 {
		t.Fatalf("held %d partitions and %d jobs, want 6 and 2", m.partitions, m.jobs)
	}
}

func TestStatusShowsWhoHoldsWhat(t *testing.T) {
	kv := bucket(t)
	clock := fakeclock.At(time.Unix(1_800_000_000, 0))
	leases := Leases(4, "router")
	a, _ := node(t, kv, "a", clock, leases)
	turn(t, a)
	if err := a.sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := a.Status()
	if len(st.Nodes) != 1 || st.Nodes[0].Node != "a" || len(st.Nodes[0].Leases) != len(leases) || len(st.Vacant) != 0 {
		t.Fatalf("status %+v", st)
	}
	var names []Lease
	for _, l := range st.Nodes[0].Leases {
		names = append(names, l.Lease)
	}
	if !slices.Equal(names, leases) {
		t.Fatalf("status lists %v, want %v", names, leases)
	}
}

// countingMetrics is a fake Metrics: it counts successful renewals and
// keeps the last leases held it was told.
type countingMetrics struct {
	mu         sync.Mutex
	renewed    int
	partitions int
	jobs       int
}

func (m *countingMetrics) Held(partitions, jobs int) {
	m.mu.Lock()
	m.partitions, m.jobs = partitions, jobs
	m.mu.Unlock()
}
func (m *countingMetrics) Moved(bool) {}
func (m *countingMetrics) Renewed(ok bool) {
	if ok {
		m.mu.Lock()
		m.renewed++
		m.mu.Unlock()
	}
}

func (m *countingMetrics) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.renewed
}

// On three servers with the bucket replicated three times, losing the
// server that leads the bucket's stream costs no lease: the nodes keep
// renewing through the new leader.
func TestLeasesSurviveLosingTheStreamLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-server cluster")
	}
	servers := natstest.Cluster(t, 3)
	_, js := natstest.Connect(t, servers...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kv, err := OpenBucket(ctx, js, BucketConfig{TTL: testTTL, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	leases := Leases(6)
	var holders []*recordingHolder
	var metrics []*countingMetrics
	done := make(chan error, 2)
	for _, name := range []string{"a", "b"} {
		_, js := natstest.Connect(t, servers...)
		kv, err := js.KeyValue(ctx, Bucket)
		if err != nil {
			t.Fatal(err)
		}
		h, m := newHolder(), &countingMetrics{}
		n, err := New(Config{KV: kv, TTL: testTTL, Info: Info{Node: name}, Leases: leases, Holder: h, Clock: clock.Wall{}, Metrics: m})
		if err != nil {
			t.Fatal(err)
		}
		holders, metrics = append(holders, h), append(metrics, m)
		go func() { done <- n.Run(ctx) }()
	}
	natstest.WaitFor(t, 4*testTTL, "the nodes splitting the leases", func() bool {
		return holders[0].count() == 3 && holders[1].count() == 3
	})
	killed := ""
	for _, s := range servers {
		if s.JetStreamIsStreamLeader("$G", "KV_"+Bucket) {
			killed = s.Name()
			s.Shutdown()
			break
		}
	}
	if killed == "" {
		t.Fatal("no server leads the leases bucket's stream")
	}
	natstest.WaitFor(t, 6*testTTL, "the bucket answering after losing its leader "+killed, func() bool {
		_, err := kv.Status(ctx)
		return err == nil
	})
	before := []int{metrics[0].count(), metrics[1].count()}
	natstest.WaitFor(t, 6*testTTL, "every lease renewed through a new leader", func() bool {
		return metrics[0].count() >= before[0]+3 && metrics[1].count() >= before[1]+3
	})
	if holders[0].count() != 3 || holders[1].count() != 3 {
		t.Fatalf("after the leader's loss the nodes hold %d and %d of 6", holders[0].count(), holders[1].count())
	}
	cancel()
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// sync reads the bucket's whole state into the view, in place of the
// watcher Run keeps, so a test drives Pass without Run.
func (n *Node) sync(ctx context.Context) error {
	w, err := n.cfg.KV.WatchAll(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = w.Stop() }()
	n.mu.Lock()
	n.view = map[string]entry{}
	n.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e := <-w.Updates():
			n.observe(e)
			if e == nil {
				return nil
			}
		}
	}
}

// slowKV is a bucket whose renewal of one lease takes long: the clock
// moves on by slow while it is in flight.
type slowKV struct {
	jetstream.KeyValue
	clock *fakeclock.Clock
	key   string
	slow  time.Duration
	on    *atomic.Bool
}

func (k slowKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	if k.on.Load() && key == k.key {
		k.clock.Add(k.slow)
	}
	return k.KeyValue.Update(ctx, key, value, rev)
}

// A renewal that succeeds after the lease's trust ran out (the node
// stopped acting on it meanwhile, without losing it) tells the holder it
// gained the lease again, so what it dropped or refused in the gap is
// taken up; one back in time tells it nothing.
func TestARenewalAfterATrustGapIsGainedAgain(t *testing.T) {
	for _, tt := range []struct {
		name  string
		slow  time.Duration
		again bool
	}{
		{"in time", time.Millisecond, false},
		{"after a gap", testTTL, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clock := fakeclock.At(time.Unix(1_800_000_000, 0))
			l := PartitionLease(0)
			on := &atomic.Bool{}
			kv := slowKV{KeyValue: bucket(t), clock: clock, key: string(l), slow: tt.slow, on: on}
			a, ha := node(t, kv, "a", clock, Leases(1))
			turn(t, a)
			if !a.Holds(l) {
				t.Fatal("a does not hold its lease")
			}
			clock.Add(a.renewEvery())
			on.Store(true)
			a.Pass(context.Background())
			ha.mu.Lock()
			defer ha.mu.Unlock()
			want := []string{"+" + string(l)}
			if tt.again {
				want = append(want, "+"+string(l))
			}
			if !slices.Equal(ha.events, want) {
				t.Fatalf("the holder heard %v, want %v", ha.events, want)
			}
		})
	}
}

// A key the view holds but the watcher has not told of for longer than
// the TTL is read again: a lease the view shows taken by a node that
// released it (the watcher missed the deletion) is taken once that is
// found, where it was left to no one.
func TestAViewEntryTheWatcherMissedIsReadAgain(t *testing.T) {
	kv := bucket(t)
	clock := fakeclock.At(time.Unix(1_800_000_000, 0))
	l := PartitionLease(0)
	a, _ := node(t, kv, "a", clock, Leases(1))
	turn(t, a)
	if !a.Holds(l) {
		t.Fatal("a does not hold its lease")
	}
	a.Leave(context.Background())
	// The view shows the lease held by a node long gone: its release
	// never reached the watcher.
	a.mu.Lock()
	a.view[string(l)] = entry{value: []byte("ghost/1"), rev: 1, seen: clock.Now()}
	a.mu.Unlock()
	a.Pass(context.Background())
	if a.Holds(l) {
		t.Fatal("a took a lease its view shows another node holding, within the TTL")
	}
	clock.Add(testTTL + time.Millisecond)
	a.Pass(context.Background())
	if !a.Holds(l) {
		t.Fatal("a never took the lease its view wrongly shows held")
	}
}
