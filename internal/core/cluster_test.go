package core

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/internal/cluster"
	"github.com/vigilhq/vigil/internal/delivery"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/lifecycle"
	"github.com/vigilhq/vigil/internal/natstest"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/natsstore"
)

const (
	testPartitions = 8
	testTTL        = 2 * time.Second
	// within bounds each wait on the cluster: leases move within a TTL,
	// a pass a sixth of it apart; the rest is a loaded machine's slack.
	within = 30 * time.Second
)

var (
	_ ClusterStore           = (*natsstore.Store)(nil)
	_ delivery.MailboxWaiter = store.Feeds{} // long polls wake on other nodes' appends
)

// observedBy records which node's kind probed each watch.
type observedBy struct {
	mu sync.Mutex
	by map[string]map[string]int // watch id -> node -> probes
}

func (o *observedBy) saw(watch, node string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.by[watch] == nil {
		o.by[watch] = map[string]int{}
	}
	o.by[watch][node]++
}

func (o *observedBy) nodes(watch string) map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string]int{}
	for k, v := range o.by[watch] {
		out[k] = v
	}
	return out
}

// fakeGateKind is a test kind: it settles a watch once open is true (at
// once when its name is "now"), and says which node probed it.
type fakeGateKind struct {
	name, node string
	open       *atomic.Bool
	seen       *observedBy
}

func (k fakeGateKind) Info() kind.Info { return kind.Info{Kind: k.name} }
func (k fakeGateKind) Admit(context.Context, kind.AdmitRequest) (kind.Admission, error) {
	return kind.Admission{}, nil
}
func (k fakeGateKind) Observe(_ context.Context, req abi.ObserveRequest) (kind.Observation, error) {
	k.seen.saw(req.WatchID, k.node)
	if k.name == "now" || k.open.Load() {
		return kind.Observation{Status: abi.StatusSettled, Outcome: &abi.Outcome{Result: "fired"}}, nil
	}
	return kind.Observation{Status: abi.StatusPending}, nil
}

// fakeJobs is a cluster-wide job for the test's nodes: it records where
// it runs, and whether it ever ran on two nodes at once.
type fakeJobs struct {
	mu      sync.Mutex
	running map[string]bool
	overlap bool
	// appended counts the appends to the observe stream the nodes heard of.
	appended atomic.Int32
}

func (j *fakeJobs) on(node string) func(context.Context) error {
	return func(ctx context.Context) error {
		j.mu.Lock()
		for other, r := range j.running {
			if r && other != node {
				j.overlap = true
			}
		}
		j.running[node] = true
		j.mu.Unlock()
		<-ctx.Done()
		j.mu.Lock()
		j.running[node] = false
		j.mu.Unlock()
		return nil
	}
}

// runJoined runs what Run runs of a joined core but the scheduler's loop:
// the outbox and the node, for a test that drives Tick or starts the loop
// itself. The returned function stops them and waits.
func runJoined(ctx context.Context, c *Core) func() error {
	run := c.cluster.takeRun()
	return lifecycle.Go(ctx, func(ctx context.Context) error {
		return lifecycle.Group(ctx, c.Outbox.Run, func(ctx context.Context) error {
			run(ctx)
			return nil
		})
	})
}

// where is the nodes the job runs on now.
func (j *fakeJobs) where() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []string
	for n, r := range j.running {
		if r {
			out = append(out, n)
		}
	}
	return out
}

// nodeFixture is a JetStream server and what the nodes a test starts on
// it share (startNode): the gate kinds' switch, set to open; what they
// observed; and the cluster-wide job's runs.
func nodeFixture(t *testing.T, open bool) (*server.Server, *atomic.Bool, *observedBy, *fakeJobs) {
	t.Helper()
	gate := &atomic.Bool{}
	gate.Store(open)
	return natstest.Start(t), gate, &observedBy{by: map[string]map[string]int{}}, &fakeJobs{running: map[string]bool{}}
}

// testNode is one vigil node: a real core on the cluster, its scheduler
// running, joined.
type testNode struct {
	name   string
	core   *Core
	cancel context.CancelFunc
	run    func() error // stops Run and waits
}

// nodeHooks are a test's ways into one node: a wrapper of the delivery
// its scheduler settles through, one of its leases bucket, and its lease
// metrics. Nil fields are the node's own.
type nodeHooks struct {
	deliver func(*delivery.Delivery, *store.Store) scheduler.Deliverer
	kv      func(jetstream.KeyValue) jetstream.KeyValue
	metrics cluster.Metrics
	store   func(ClusterStore) ClusterStore
	// kinds are registered beside the test's own.
	kinds []kind.Kind
	// with change the node's Config before it is built.
	with []func(*Config)
}

func startNode(t *testing.T, srv *server.Server, name, plugins string, open *atomic.Bool, seen *observedBy, jobs *fakeJobs, with ...func(*Config)) *testNode {
	t.Helper()
	return startHookedNode(t, srv, name, plugins, open, seen, jobs, nodeHooks{with: with})
}

func startHookedNode(t *testing.T, srv *server.Server, name, plugins string, open *atomic.Bool, seen *observedBy, jobs *fakeJobs, hooks nodeHooks) *testNode {
	t.Helper()
	reg := kind.NewRegistry()
	for _, k := range []string{"now", "gate"} {
		if err := reg.Register("test", fakeGateKind{name: k, node: name, open: open, seen: seen}); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range hooks.kinds {
		if err := reg.Register("test", k); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cfg := Config{Kinds: reg, Cluster: &Cluster{
		Open: func(ctx context.Context) (ClusterStore, error) {
			st, err := natsstore.Open(ctx, natsstore.Config{URLs: []string{srv.ClientURL()}, Partitions: testPartitions})
			if err != nil || hooks.store == nil {
				return st, err
			}
			return hooks.store(st), nil
		},
		Node: name, LeaseTTL: testTTL,
	}, Deliver: hooks.deliver}
	for _, w := range hooks.with {
		w(&cfg)
	}
	c, err := New(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if hooks.kv != nil {
		c.cluster.kv = hooks.kv(c.cluster.kv)
	}
	n := &testNode{name: name, core: c, cancel: cancel}
	t.Cleanup(n.stop)
	if _, err := c.Prime(ctx); err != nil {
		t.Fatal(err)
	}
	if err = c.Join(ctx, Join{Addr: "127.0.0.1:0", Plugins: plugins, Jobs: map[string]func(context.Context) error{"router": jobs.on(name)},
		Appends: map[string]func(){"observe": func() { jobs.appended.Add(1) }}, Metrics: hooks.metrics}); err != nil {
		t.Fatal(err)
	}
	n.run = lifecycle.Go(ctx, c.Run)
	return n
}

// stop stops the node cleanly: its scheduler, then the cluster (it
// leaves, deleting its leases), then the core.
func (n *testNode) stop() {
	if n.cancel == nil {
		return
	}
	n.cancel()
	if n.run != nil {
		_ = n.run()
	}
	_ = n.core.Close()
	n.cancel = nil
}

// held is the partitions n holds now.
func (n *testNode) held() []int {
	var out []int
	for p := range testPartitions {
		if n.core.Node().Holds(cluster.PartitionLease(p)) {
			out = append(out, p)
		}
	}
	return out
}

// mailbox reads recipient r's whole mailbox through n.
func (n *testNode) mailbox(t *testing.T) []store.Message {
	t.Helper()
	msgs, err := n.core.Store.ReadMailbox(context.Background(), "r", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// firedOnce says whether every watch in ids has exactly one message in
// msgs, and nothing else is there.
func firedOnce(msgs []store.Message, ids []store.Watch) bool {
	count := map[store.ID]int{}
	for _, m := range msgs {
		count[m.WatchID]++
	}
	for _, w := range ids {
		if count[w.ID] != 1 {
			return false
		}
	}
	return len(msgs) == len(ids)
}

// Two vigil nodes on one JetStream server: a watch registered through A
// in a partition B holds is probed and fired by B, learned through
// JetStream; A stopping cleanly hands B every partition at once, and B
// fires A's due watches; every watch's message is in the mailbox once,
// read through either node.
func TestTwoNodesShareTheWatches(t *testing.T) {
	if testing.Short() {
		t.Skip("two vigil nodes on a JetStream server")
	}
	srv, open, seen, jobs := nodeFixture(t, false)
	a := startNode(t, srv, "a", "digest", open, seen, jobs)
	b := startNode(t, srv, "b", "digest", open, seen, jobs)
	natstest.WaitFor(t, within, "the partitions split between a and b", func() bool {
		ha, hb := a.held(), b.held()
		return len(ha)+len(hb) == testPartitions && len(ha) > 0 && len(hb) > 0
	})
	natstest.WaitFor(t, within, "the job running on one node", func() bool { return len(jobs.where()) == 1 })
	holder := func(w store.Watch) string {
		if b.core.Node().Holds(cluster.PartitionLease(w.ID.Partition(testPartitions))) {
			return "b"
		}
		return "a"
	}
	ctx := context.Background()
	register := func(n *testNode, k string, count int) []store.Watch {
		var out []store.Watch
		every := time.Second
		for range count {
			w, err := n.core.Scheduler.Register(ctx, scheduler.Registration{Kind: k, Recipient: store.Recipient{ID: "r"}, Every: &every})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, w)
		}
		return out
	}

	// Through A: each fires once, on its partition's holder.
	now := register(a, "now", 16)
	owner := map[store.ID]string{}
	inB := 0
	for _, w := range now {
		owner[w.ID] = holder(w)
		if owner[w.ID] == "b" {
			inB++
		}
	}
	if inB == 0 {
		t.Fatal("no watch of sixteen landed in b's partitions")
	}
	natstest.WaitFor(t, within, "each watch's message once, read through b", func() bool { return firedOnce(b.mailbox(t), now) })
	if !firedOnce(a.mailbox(t), now) {
		t.Fatal("a reads another mailbox than b")
	}
	for _, w := range now {
		if by := seen.nodes(w.ID.String()); by[owner[w.ID]] == 0 || len(by) != 1 {
			t.Fatalf("watch %s of %s's partition was probed by %v", w.ID, owner[w.ID], by)
		}
	}

	// A's watches, not yet due to fire: A probes its own, B its own.
	gated := register(a, "gate", 16)
	natstest.WaitFor(t, within, "every gated watch probed by its holder", func() bool {
		for _, w := range gated {
			if seen.nodes(w.ID.String())[holder(w)] == 0 {
				return false
			}
		}
		return true
	})
	// A stops cleanly: B holds every partition well within a TTL, with
	// no wait for A's leases to expire, and fires A's watches.
	a.stop()
	natstest.WaitFor(t, within, "b holding every partition", func() bool { return len(b.held()) == testPartitions })
	natstest.WaitFor(t, within, "the job running on b", func() bool { w := jobs.where(); return len(w) == 1 && w[0] == "b" })
	open.Store(true)
	all := append(append([]store.Watch{}, now...), gated...)
	natstest.WaitFor(t, within, "every watch's message once", func() bool { return firedOnce(b.mailbox(t), all) })
	if st := b.core.Node().Status(); len(st.Nodes) != 1 || st.Nodes[0].Node != "b" {
		t.Fatalf("after a left, the status shows %+v", st.Nodes)
	}
	if jobs.overlap {
		t.Fatal("the cluster-wide job ran on two nodes at once")
	}
	// An append to the observe stream through one node is heard by the
	// other (where the observe router may run).
	if _, _, err := a2(t, srv).AppendEvent(ctx, store.Event{Stream: "observe", Key: "k", Type: "t", OccurredAt: time.Now(), Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, within, "b hearing of an append elsewhere", func() bool { return jobs.appended.Load() > 0 })
}

// A node whose plugin set digest differs from the cluster's holds no
// partition and takes no registration (503 plugin_set_mismatch, naming
// both digests): the owner of a watch it admitted might lack its kind.
// The watches registered through the others fire there.
func TestANodeWithAnotherPluginSetHoldsNoPartition(t *testing.T) {
	if testing.Short() {
		t.Skip("two vigil nodes on a JetStream server")
	}
	srv, open, seen, jobs := nodeFixture(t, true)
	a := startNode(t, srv, "a", "digest-1", open, seen, jobs)
	natstest.WaitFor(t, within, "a holding every partition", func() bool { return len(a.held()) == testPartitions })
	b := startNode(t, srv, "b", "digest-2", open, seen, jobs)
	natstest.WaitFor(t, within, "a seeing b refused", func() bool {
		st := a.core.Node().Status()
		return len(st.Nodes) == 2 && st.Nodes[1].Node == "b" && st.Nodes[1].Refused
	})
	c := startNode(t, srv, "c", "digest-1", open, seen, jobs)
	natstest.WaitFor(t, within, "a and c sharing the partitions", func() bool {
		return len(a.held())+len(c.held()) == testPartitions && len(c.held()) > 0
	})
	if h := b.held(); len(h) != 0 {
		t.Fatalf("b, with another plugin set, holds partitions %v", h)
	}
	every := time.Second
	_, err := b.core.Scheduler.Register(context.Background(), scheduler.Registration{Kind: "now", Recipient: store.Recipient{ID: "r"}, Every: &every})
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodePluginSetMismatch || ae.RetryAfter != testTTL ||
		!strings.Contains(ae.Message, "digest-2") || !strings.Contains(ae.Message, "digest-1") {
		t.Fatalf("register through b = %v; want plugin_set_mismatch naming digest-2 and digest-1, retry after %s", err, testTTL)
	}
	if rec, err := b.core.Store.GetRecipient(context.Background(), "r"); err == nil {
		t.Fatalf("b's refused registration wrote recipient %+v", rec)
	}
	var ws []store.Watch
	for i := range 4 {
		n := []*testNode{a, c}[i%2]
		w, err := n.core.Scheduler.Register(context.Background(), scheduler.Registration{Kind: "now", Recipient: store.Recipient{ID: "r"}, Every: &every})
		if err != nil {
			t.Fatalf("register through %s: %v", n.name, err)
		}
		ws = append(ws, w)
	}
	natstest.WaitFor(t, within, "the watches registered through a and c fired once", func() bool { return firedOnce(b.mailbox(t), ws) })
	for _, w := range ws {
		if by := seen.nodes(w.ID.String()); by["b"] != 0 {
			t.Fatalf("b probed %s: %v", w.ID, by)
		}
	}
	if h := b.held(); len(h) != 0 {
		t.Fatalf("b, with another plugin set, holds partitions %v", h)
	}
}

// fakePartitions records what the queue asks of the scheduler; fail
// makes the next that many gains fail.
type fakePartitions struct {
	mu   sync.Mutex
	log  []string
	fail int
}

func (f *fakePartitions) Gain(_ context.Context, p int) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, "+"+string(rune('0'+p)))
	if f.fail > 0 {
		f.fail--
		return 0, errors.New("fake: the store did not answer")
	}
	return 0, nil
}

func (f *fakePartitions) Drop(p int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, "-"+string(rune('0'+p)))
	return 0
}

// fakeOwnership holds the partitions in its set.
type fakeOwnership map[int]bool

func (f fakeOwnership) Partitions() int  { return 8 }
func (f fakeOwnership) Holds(p int) bool { return f[p] }

// The queue keeps each partition's latest news only, in the order the
// partitions first came, and arms a gained partition only while it is
// still held.
func TestPartitionQueueKeepsTheLatestInOrder(t *testing.T) {
	q := newPartitionQueue(clock.Wall{})
	q.put(1, true)
	q.put(2, true)
	q.put(1, false) // 1 lost before it was armed: a loss
	q.put(3, true)  // 3 gained, but no longer held when its turn comes
	q.put(4, true)
	f := &fakePartitions{}
	// With its context ended the queue drains what it holds, then returns.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	q.run(ctx, f, fakeOwnership{2: true, 4: true}, slogDiscard())
	if got := f.log; len(got) != 3 || got[0] != "-1" || got[1] != "+2" || got[2] != "+4" {
		t.Fatalf("the queue did %v, want [-1 +2 +4]", got)
	}
}

func slogDiscard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// A gain whose arming failed is tried again until it is armed.
func TestPartitionQueueRetriesAFailedGain(t *testing.T) {
	q := newPartitionQueue(clock.Wall{})
	q.put(5, true)
	f := &fakePartitions{fail: 2}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); q.run(ctx, f, fakeOwnership{5: true}, slogDiscard()) }()
	natstest.WaitFor(t, within, "the third try", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.log) == 3
	})
	cancel()
	<-done
	if got := f.log; len(got) != 3 || got[2] != "+5" {
		t.Fatalf("the queue did %v", got)
	}
}

// a2 is another process's store on srv.
func a2(t *testing.T, srv *server.Server) *store.Store {
	t.Helper()
	st, err := natsstore.OpenStore(context.Background(), natsstore.Config{URLs: []string{srv.ClientURL()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// Two clusters on one JetStream server, through different store buckets,
// keep their leases apart: the leases bucket is named after the store's
// (cluster.LeaseBucket), so each cluster's only node holds every partition
// and runs the cluster-wide job, where one shared leases bucket would
// split the partitions and the job between the two.
func TestClustersOnOtherBucketsDoNotShareLeases(t *testing.T) {
	if testing.Short() {
		t.Skip("two vigil nodes on a JetStream server")
	}
	srv := natstest.Start(t)
	open := &atomic.Bool{}
	seen := &observedBy{by: map[string]map[string]int{}}
	jobsA := &fakeJobs{running: map[string]bool{}}
	jobsB := &fakeJobs{running: map[string]bool{}}
	a := startNode(t, srv, "a", "digest", open, seen, jobsA)
	b := startNode(t, srv, "b", "digest", open, seen, jobsB, func(c *Config) {
		c.Cluster.Open = func(ctx context.Context) (ClusterStore, error) {
			return natsstore.Open(ctx, natsstore.Config{URLs: []string{srv.ClientURL()}, Partitions: testPartitions, Bucket: "other"})
		}
	})
	natstest.WaitFor(t, within, "a and b each holding every partition", func() bool {
		return len(a.held()) == testPartitions && len(b.held()) == testPartitions
	})
	natstest.WaitFor(t, within, "the job running on a and on b", func() bool {
		wa, wb := jobsA.where(), jobsB.where()
		return len(wa) == 1 && wa[0] == "a" && len(wb) == 1 && wb[0] == "b"
	})
	for _, n := range []*testNode{a, b} {
		st := n.core.Node().Status()
		if len(st.Nodes) != 1 || st.Nodes[0].Node != n.name {
			t.Fatalf("%s sees the nodes %+v, want itself alone", n.name, st.Nodes)
		}
	}
}
