package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/internal/cluster"
	"github.com/vigilhq/vigil/internal/delivery"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/lifecycle"
	"github.com/vigilhq/vigil/internal/probeshare"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/store"
)

// Cluster makes the core a node of a JetStream cluster: its store is
// the one Open returns (natsstore, on the cluster's servers), its leases
// bucket (internal/cluster) is opened on the same connection with the store's
// replica count, and its scheduler probes only the partitions the node
// holds leases on.
type Cluster struct {
	// Open opens the cluster's store (serve: natsstore.Open).
	Open func(ctx context.Context) (ClusterStore, error)
	// Node is this node's name, unique in the cluster; LeaseTTL every
	// lease's (cluster.MinTTL at least), the bucket's TTL.
	Node     string
	LeaseTTL time.Duration
	// Margin is cluster.Config.Margin (default a fifth of the TTL).
	Margin time.Duration
	// AskTimeout bounds asking a watch's owner what it holds in memory of
	// its probes, for a show on another node (Core.Seen; default
	// probeshare.DefaultTimeout, 250 ms).
	AskTimeout time.Duration
}

// ClusterStore is a cluster's adapter of the storage seam (store/natsstore
// is one), with what a node needs of it beside: the core builds its store
// over it (store.New), whose feeds tell of what every node commits.
type ClusterStore interface {
	store.KV
	store.Follower
	// JetStream is the adapter's JetStream context, for the leases bucket
	// and (its connection) the nodes' probe news (probes.go).
	JetStream() jetstream.JetStream
	// Bucket names the cluster's store: the probe news's subjects carry it.
	Bucket() string
	Replicas() int
	// Partitions is the cluster's partition count, fixed with its store.
	Partitions() int
	// FencePartition writes partition p's epoch (node and at recorded in
	// it) and makes every owner's transition of p's rows this store makes
	// from now on conditional on it: once another node fences p, they are
	// refused with store.ErrNotOwner. Unfence refuses them here at once.
	FencePartition(ctx context.Context, p int, node string, at time.Time) (uint64, error)
	Unfence(p int)
}

// Join is what a node publishes and runs once the host around the core
// is built: Core.Join.
type Join struct {
	// Addr is the node's API address; Plugins its plugin set digest
	// (PluginDigest), which must match the cluster's for the node to hold
	// any partition.
	Addr    string
	Plugins string
	// PluginSet, when set, is the node's plugins now and a channel closed
	// when they next change (a reload): the node publishes their digest
	// (kind.SetDigest) and kinds in place of Plugins, and again after each
	// change, so a reload that moves it off the cluster's set refuses it
	// (and one that brings it back admits it) within a pass.
	PluginSet func() ([]kind.Info, <-chan struct{})
	// Jobs run once per cluster, each only while this node holds its
	// cluster.JobLease: a component's Run, run (with a context that ends
	// when the lease is lost) on gaining it.
	Jobs map[string]func(context.Context) error
	// Appends are called after each append to their event stream, by
	// any node (coalesced): the observe router, running on one node,
	// hears of items recorded on the others.
	Appends map[string]func()
	// Metrics counts the node's leases; nil counts nothing.
	Metrics cluster.Metrics
}

// clustered is the core's part on a cluster.
type clustered struct {
	cfg Cluster
	// adapter is the store's adapter, st the store over it with its feeds.
	adapter ClusterStore
	st      store.Feeds
	kv      jetstream.KeyValue
	own     *ownership
	log     *slog.Logger
	node    atomic.Pointer[cluster.Node]
	// reconciled counts the passes JobReconcile finished on this node.
	reconciled atomic.Int64
	// share carries the probes' news between the nodes once joined.
	share atomic.Pointer[probeshare.Share]

	// retryFirst and retryMost, when set (tests), replace the feeds'
	// backoff, feedRetryFirst and feedRetryMost.
	retryFirst, retryMost time.Duration

	// mu guards joined, run and release.
	mu     sync.Mutex
	joined bool
	// run is what Join set up to run, taken by the core's Run; release
	// ends Join's subscriptions when nothing ran them (Close).
	run     func(context.Context)
	release func()
}

// ownership is the scheduler's scheduler.Ownership on a cluster: partition
// p is held while the node holds PartitionLease(p) and has fenced p in
// the store (its epoch written since it gained the lease); before Join,
// none is.
type ownership struct {
	n    int
	node *atomic.Pointer[cluster.Node]
	// fenced[p] is set once p's epoch is written after its lease was
	// gained, and cleared when the lease is lost.
	fenced []atomic.Bool
	// retry is the Retry-After of a refused registration: a lease TTL,
	// within which a reload is published and the nodes' sets judged again.
	retry time.Duration
}

func (o ownership) Partitions() int { return o.n }

func (o ownership) Holds(p int) bool {
	return o.leased(p) && o.fenced[p].Load()
}

// leased says whether the node holds p's lease, fenced or not yet.
func (o ownership) leased(p int) bool {
	n := o.node.Load()
	return n != nil && n.Holds(cluster.PartitionLease(p))
}

// leaseHeld is the ownership the partition queue asks before it fences
// and arms a gained partition: its lease alone.
type leaseHeld struct{ o *ownership }

func (l leaseHeld) Holds(p int) bool { return l.o.leased(p) }

// Admits refuses registrations while the node's plugin set differs from
// the cluster's (scheduler.Gate), as 503 plugin_set_mismatch: a watch of
// a kind only this node serves would be settled unwatchable by its owner.
func (o ownership) Admits() error {
	n := o.node.Load()
	if n == nil {
		return nil
	}
	err := n.Admits()
	var pe *cluster.PluginSetError
	if errors.As(err, &pe) {
		return &api.Error{Code: api.CodePluginSetMismatch, Message: pe.Error(), RetryAfter: o.retry}
	}
	return err
}

var _ scheduler.Gate = ownership{}

// openCluster opens the cluster's store and the leases bucket on its
// connection.
func openCluster(ctx context.Context, cfg Cluster, log *slog.Logger) (*clustered, error) {
	if cfg.Open == nil {
		return nil, errors.New("core: a cluster needs its store's Open")
	}
	if cfg.LeaseTTL < cluster.MinTTL {
		return nil, fmt.Errorf("core: lease ttl %s is under the minimum %s", cfg.LeaseTTL, cluster.MinTTL)
	}
	ad, err := cfg.Open(ctx)
	if err != nil {
		return nil, err
	}
	if ad == nil {
		return nil, errors.New("core: the cluster's Open returned no store")
	}
	st, err := store.New(ctx, ad)
	if err != nil {
		_ = ad.Close()
		return nil, err
	}
	feeds, _ := st.Feeds()
	kv, err := cluster.OpenBucket(ctx, ad.JetStream(), cluster.BucketConfig{Name: cluster.LeaseBucket(ad.Bucket()), TTL: cfg.LeaseTTL, Replicas: ad.Replicas()})
	if err != nil {
		_ = ad.Close()
		return nil, err
	}
	cl := &clustered{cfg: cfg, adapter: ad, st: feeds, kv: kv, log: log}
	cl.own = &ownership{n: ad.Partitions(), retry: cfg.LeaseTTL, fenced: make([]atomic.Bool, ad.Partitions())}
	cl.own.node = &cl.node
	return cl, nil
}

// Clustered says whether the core is a node of a cluster (Config.Cluster).
func (c *Core) Clustered() bool { return c.cluster != nil }

// Node is the core's cluster node once Join has built it; nil otherwise.
func (c *Core) Node() *cluster.Node {
	if c.cluster == nil {
		return nil
	}
	return c.cluster.node.Load()
}

// ErrNotClustered: Join on a core built without Config.Cluster.
var ErrNotClustered = errors.New("core: not a cluster node")

// Join sets the core's node up to live on the cluster; the core's Run
// runs it, until its context ends. It subscribes to the feeds and the
// probe news here, so nothing committed after Join returns goes untold;
// Run follows the pending index (so a watch registered on another node in
// a partition this one holds is armed at once) and the outbox (so a push
// written on another node for a recipient whose push partition this one
// holds is sent from here, and only from here), runs the node's lease
// loop, arms each partition it gains and forgets each it loses (in order
// per partition, on a goroutine of its own: arming reads the store; the
// outbox stops starting attempts of a lost partition at once), and
// runs j.Jobs and the core's own JobReconcile while their leases are
// held. A feed (the pending index, the outbox, an event stream's appends) that stops
// with an error is subscribed to again with a backoff, and what it would
// have told meanwhile is caught up: each held partition scanned again,
// each stream's follower called. Run returns once all of it has stopped
// and the node has left the cluster (its leases deleted, so the others
// take them at once). Join once, before Run.
func (c *Core) Join(ctx context.Context, j Join) error {
	cl := c.cluster
	if cl == nil {
		return ErrNotClustered
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.joined {
		return errors.New("core: the node has joined already")
	}
	if _, ok := j.Jobs[JobReconcile]; ok {
		return fmt.Errorf("core: the job name %q is the core's own", JobReconcile)
	}
	jobs := maps.Clone(j.Jobs)
	if jobs == nil {
		jobs = map[string]func(context.Context) error{}
	}
	jobs[JobReconcile] = c.reconcileOnce
	names := slices.Sorted(maps.Keys(jobs))
	var changed <-chan struct{}
	var kinds []string
	if j.PluginSet != nil {
		var infos []kind.Info
		infos, changed = j.PluginSet()
		j.Plugins, kinds = kind.SetDigest(infos), kindLines(infos)
	}
	h := &holder{c: c, jobs: jobs, running: map[string]func() error{}, queue: newPartitionQueue(c.clock)}
	node, err := cluster.New(cluster.Config{
		KV: cl.kv, TTL: cl.cfg.LeaseTTL, Margin: cl.cfg.Margin,
		Info:   cluster.Info{Node: cl.cfg.Node, Addr: j.Addr, StartedAt: c.clock.Now(), Plugins: j.Plugins, Kinds: kinds},
		Leases: cluster.Leases(cl.own.n, names...), Holder: h, Clock: c.clock, Logger: c.log, Metrics: j.Metrics,
	})
	if err != nil {
		return err
	}
	// Subscribe before any partition is gained: a registration after a
	// partition's scan is told by the feed, one before it is in the scan.
	feed, err := cl.st.FollowPending(ctx)
	if err != nil {
		return err
	}
	pending := func(run func(context.Context, func(store.Schedule)) error) func(context.Context) error {
		return func(ctx context.Context) error { return run(ctx, func(sc store.Schedule) { c.Scheduler.Adopt(sc) }) }
	}
	var pushes func(context.Context, func(store.Push)) error
	var firsts []func(context.Context) error
	// unsubscribe ends the feeds subscribed so far, when Join fails after
	// them.
	unsubscribe := func() {
		stopped, cancel := context.WithCancel(ctx)
		cancel()
		_ = feed(stopped, nil)
		if pushes != nil {
			_ = pushes(stopped, nil)
		}
		for _, run := range firsts {
			_ = run(stopped)
		}
	}
	pushes, err = cl.st.FollowPushes(ctx, c.Outbox.HoldsPushesOf)
	if err != nil {
		unsubscribe()
		return err
	}
	var appends []func(context.Context)
	for stream, fn := range j.Appends {
		af, err := cl.st.FollowAppends(ctx, stream)
		if err != nil {
			unsubscribe()
			return err
		}
		appended := func(run func(context.Context, func()) error) func(context.Context) error {
			return func(ctx context.Context) error { return run(ctx, fn) }
		}
		first := appended(af)
		firsts = append(firsts, first)
		appends = append(appends, func(ctx context.Context) {
			// Again after a feed stopped: an append meanwhile was told to
			// no one, so the follower is called once it is back.
			c.keepFollowing(ctx, "stream "+stream, first, func(ctx context.Context) (func(context.Context) error, error) {
				af, err := cl.st.FollowAppends(ctx, stream)
				if err != nil {
					return nil, err
				}
				return appended(af), nil
			}, fn)
		})
	}
	share, err := c.listenProbes()
	if err != nil {
		unsubscribe()
		return err
	}
	cl.node.Store(node)
	cl.joined = true
	cl.release = func() {
		unsubscribe()
		share.Close()
	}
	cl.run = func(runCtx context.Context) {
		h.ctx = runCtx
		var wg sync.WaitGroup
		for _, run := range appends {
			wg.Go(func() { run(runCtx) })
		}
		wg.Go(func() { c.runProbes(runCtx, share) })
		if changed != nil {
			wg.Go(func() { republish(runCtx, node, j.PluginSet, changed) })
		}
		wg.Go(func() {
			// Again after the feed stopped: a registration meanwhile was told
			// to no one, so each partition held is armed again (its scan
			// arms only what is not armed yet) once the feed is back.
			c.keepFollowing(runCtx, "pending", pending(feed), func(ctx context.Context) (func(context.Context) error, error) {
				f, err := cl.st.FollowPending(ctx)
				if err != nil {
					return nil, err
				}
				return pending(f), nil
			}, func() {
				for p := range cl.own.n {
					if cl.own.Holds(p) {
						h.queue.put(p, true)
					}
				}
			})
		})
		wg.Go(func() {
			// Again after the feed stopped: a push written meanwhile was told
			// to no one, so the held partitions' live pushes are read again
			// (the outbox queues each one once) once the feed is back.
			follow := func(run func(context.Context, func(store.Push)) error) func(context.Context) error {
				return func(ctx context.Context) error { return run(ctx, c.Outbox.Enqueue) }
			}
			c.keepFollowing(runCtx, "outbox", follow(pushes), func(ctx context.Context) (func(context.Context) error, error) {
				f, err := cl.st.FollowPushes(ctx, c.Outbox.HoldsPushesOf)
				if err != nil {
					return nil, err
				}
				return follow(f), nil
			}, func() {
				err := cl.st.LivePushesOf(runCtx, c.Outbox.HoldsPushesOf, func(p store.Push) error {
					c.Outbox.Enqueue(p)
					return nil
				})
				if err != nil && runCtx.Err() == nil {
					c.log.Error("cluster: reading the held partitions' pushes again failed; they wait for the next ownership change", "err", err)
				}
			})
		})
		wg.Go(func() {
			h.queue.run(runCtx, nodePartitions{s: c.Scheduler, o: c.Outbox, fence: func(ctx context.Context, p int) error {
				return cl.fence(ctx, p, c.clock.Now())
			}}, leaseHeld{cl.own}, c.log)
		})
		wg.Go(func() {
			defer h.stopJobs()
			runNode(runCtx, c.clock, node, c.log)
		})
		wg.Wait()
	}
	return nil
}

// republish publishes the node's plugin set again each time it changes
// (changed closes), until ctx ends.
func republish(ctx context.Context, node *cluster.Node, set func() ([]kind.Info, <-chan struct{}), changed <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
		var infos []kind.Info
		infos, changed = set()
		node.SetPlugins(kind.SetDigest(infos), kindLines(infos))
	}
}

// kindLines are a plugin set's kinds as a node publishes them, one
// "kind version sha256" line each, in kind order: what the digest is of.
func kindLines(infos []kind.Info) []string {
	out := make([]string, 0, len(infos))
	for _, i := range infos {
		out = append(out, i.Kind+" "+i.Version+" "+i.SHA256)
	}
	slices.Sort(out)
	return out
}

// JobReconcile is the core's own cluster-wide job: the pass over every
// recipient that one host makes in Prime (recipients.ReconcileAll). Run
// on every node as it starts, two nodes starting together would each find
// the same standing watch missing and each register it; under the lease,
// one node runs it once when it gains the lease (again only when the
// lease moves, which the pass, being idempotent, allows).
const JobReconcile = "reconcile"

// reconcileOnce is JobReconcile: one pass (tried again a second on while
// the store does not answer), then nothing until the lease is lost.
func (c *Core) reconcileOnce(ctx context.Context) error {
	for {
		err := c.Recipients.ReconcileAll(ctx)
		if err == nil {
			c.cluster.reconciled.Add(1)
			return nil
		}
		if ctx.Err() != nil {
			return nil
		}
		c.log.Error("cluster: reconciling the recipients failed; trying again", "err", err)
		if !sleepCtx(ctx, c.clock, retryGain) {
			return nil
		}
	}
}

// Backoff between a feed stopping and subscribing to it again: doubling
// from the first to the most, and back to the first once a subscription
// has lasted the most.
const (
	feedRetryFirst = 100 * time.Millisecond
	feedRetryMost  = 10 * time.Second
)

// keepFollowing reads a feed (run, already subscribed) until ctx ends.
// When it stops with an error, it subscribes again (subscribe) after a
// backoff, and once the new subscription is in place calls caughtUp, for
// what happened while none was: a feed tells only of what happens while
// it is subscribed.
func (c *Core) keepFollowing(ctx context.Context, what string, run func(context.Context) error,
	subscribe func(context.Context) (func(context.Context) error, error), caughtUp func(),
) {
	first, most := c.cluster.retryFirst, c.cluster.retryMost
	if first <= 0 {
		first, most = feedRetryFirst, feedRetryMost
	}
	delay := first
	for {
		began := c.clock.Now()
		err := run(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("it ended")
		}
		if c.clock.Now().Sub(began) >= most {
			delay = first // it had been following for a while: a new fault
		}
		for {
			c.log.Error("cluster: a feed stopped; subscribing to it again", "feed", what, "err", err, "after", delay)
			if !sleepCtx(ctx, c.clock, delay) {
				return
			}
			delay = min(delay*2, most)
			next, serr := subscribe(ctx)
			if serr == nil {
				run = next
				break
			}
			if ctx.Err() != nil {
				return
			}
			err = serr
		}
		caughtUp()
	}
}

// sleepCtx waits d on clk; false when ctx ends first.
func sleepCtx(ctx context.Context, clk clock.Clock, d time.Duration) bool {
	return clk.Sleep(ctx, d) == nil
}

// runNode runs the node's loop until ctx ends, starting it again a second
// after it fails (the servers' watcher ended): its leases' trust runs out
// meanwhile, so nothing is acted on without them.
func runNode(ctx context.Context, clk clock.Clock, node *cluster.Node, log *slog.Logger) {
	for {
		err := node.Run(ctx)
		if ctx.Err() != nil {
			return
		}
		log.Error("cluster: the lease loop stopped; starting it again", "err", err)
		if !sleepCtx(ctx, clk, time.Second) {
			return
		}
	}
}

// takeRun is what Join set up to run, once; nil before Join or after.
func (cl *clustered) takeRun() func(context.Context) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	run := cl.run
	cl.run, cl.release = nil, nil
	return run
}

// release ends Join's subscriptions when nothing ran them. Safe before
// Join and more than once.
func (cl *clustered) releaseUnrun() {
	cl.mu.Lock()
	release := cl.release
	cl.run, cl.release = nil, nil
	cl.mu.Unlock()
	if release != nil {
		release()
	}
}

// holder is the node's cluster.Holder: partitions go to the queue, in
// order, off the node's goroutine; jobs start and stop here.
type holder struct {
	c     *Core
	ctx   context.Context
	jobs  map[string]func(context.Context) error
	queue *partitionQueue

	// mu guards running: each job's stop (lifecycle.Go's).
	mu      sync.Mutex
	running map[string]func() error
}

func (h *holder) Gained(l cluster.Lease) {
	if p, ok := l.Partition(); ok {
		// The outbox's claim follows the lease here, in the lease loop's
		// order; its load waits its turn in the queue.
		h.c.Outbox.Claim(p)
		h.queue.put(p, true)
		return
	}
	name, start := h.job(l)
	if start == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.running[name]; ok {
		return
	}
	h.running[name] = lifecycle.Go(h.ctx, func(ctx context.Context) error {
		err := start(ctx)
		if err != nil {
			h.c.log.Error("cluster: a cluster-wide job failed here", "job", name, "err", err)
		}
		return err
	})
	h.c.log.Info("cluster: running a cluster-wide job here", "job", name)
}

// Lost stops a job and waits for it, so it has stopped before anyone else
// can hold its lease.
func (h *holder) Lost(l cluster.Lease) {
	if p, ok := l.Partition(); ok {
		// The outbox lets go here, before anyone else can hold the lease
		// (an attempt in flight finishes); forgetting the watches may
		// wait its turn in the queue, since every probe asks first. The
		// store refuses this node's owner's writes of p from now on,
		// without asking the servers.
		if cl := h.c.cluster; cl != nil {
			cl.unfence(p)
		}
		h.c.Outbox.Drop(p)
		h.queue.put(p, false)
		return
	}
	name, _ := h.job(l)
	h.mu.Lock()
	stop, ok := h.running[name]
	delete(h.running, name)
	h.mu.Unlock()
	if ok {
		_ = stop()
		h.c.log.Info("cluster: a cluster-wide job stopped here", "job", name)
	}
}

func (h *holder) job(l cluster.Lease) (string, func(context.Context) error) {
	for name, start := range h.jobs {
		if cluster.JobLease(name) == l {
			return name, start
		}
	}
	return "", nil
}

func (h *holder) stopJobs() {
	h.mu.Lock()
	running := h.running
	h.running = map[string]func() error{}
	h.mu.Unlock()
	for _, stop := range running {
		_ = stop()
	}
}

// partitionQueue carries gains and losses of partitions to one goroutine,
// in order; a partition's latest news replaces what it had queued (a gain
// then a loss is a loss), so it holds at most one entry per partition.
type partitionQueue struct {
	clock clock.Clock
	mu    sync.Mutex
	want  map[int]bool
	order []int
	wake  chan struct{}
}

func newPartitionQueue(clk clock.Clock) *partitionQueue {
	return &partitionQueue{clock: clk, want: map[int]bool{}, wake: make(chan struct{}, 1)}
}

func (q *partitionQueue) put(p int, gained bool) {
	q.mu.Lock()
	if _, ok := q.want[p]; !ok {
		q.order = append(q.order, p)
	}
	q.want[p] = gained
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *partitionQueue) next() (p int, gained, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.order) == 0 {
		return 0, false, false
	}
	p, q.order = q.order[0], q.order[1:]
	gained = q.want[p]
	delete(q.want, p)
	return p, gained, true
}

// retryGain is how long the queue waits before arming again a partition
// whose arming failed (the store did not answer).
const retryGain = time.Second

// retryAfter waits d (false when ctx ends first), then queues p's gain
// again unless newer news of p is queued.
func (q *partitionQueue) retryAfter(ctx context.Context, p int, d time.Duration) bool {
	if !sleepCtx(ctx, q.clock, d) {
		return false
	}
	q.mu.Lock()
	_, queued := q.want[p]
	q.mu.Unlock()
	if !queued {
		q.put(p, true)
	}
	return true
}

// fence writes p's epoch and marks p fenced: the scheduler holds p from
// then on, and every owner's write of p's rows carries the epoch's check.
func (cl *clustered) fence(ctx context.Context, p int, at time.Time) error {
	if _, err := cl.adapter.FencePartition(ctx, p, cl.cfg.Node, at); err != nil {
		return err
	}
	cl.own.fenced[p].Store(true)
	return nil
}

// unfence lets p go: the scheduler no longer holds it and the store
// refuses this node's owner's writes of p.
func (cl *clustered) unfence(p int) {
	cl.own.fenced[p].Store(false)
	cl.adapter.Unfence(p)
}

// partitions is what the queue drives: nodePartitions.
type partitions interface {
	Gain(ctx context.Context, p int) (int, error)
	Drop(p int) int
}

// nodePartitions is a partition's two holders on a node: the scheduler
// (the partition's watches) and the outbox (the pushes of the recipients
// whose push partition it is, store.PushPartition).
type nodePartitions struct {
	s     *scheduler.Scheduler
	o     *delivery.Outbox
	fence func(ctx context.Context, p int) error
}

// Gain fences p (its epoch written: no earlier owner's write of p's rows
// sticks from now on), arms p's watches, then loads p's pushes; it counts
// the watches. A failure of any is retried whole: each is idempotent (a
// second fence only moves the epoch on again).
func (n nodePartitions) Gain(ctx context.Context, p int) (int, error) {
	if err := n.fence(ctx, p); err != nil {
		return 0, err
	}
	armed, err := n.s.Gain(ctx, p)
	if err != nil {
		return 0, err
	}
	if _, err := n.o.Gain(ctx, p); err != nil {
		return 0, err
	}
	return armed, nil
}

func (n nodePartitions) Drop(p int) int {
	n.o.Drop(p)
	return n.s.Drop(p)
}

// run arms each gained partition still held and forgets each lost one,
// until ctx ends.
func (q *partitionQueue) run(ctx context.Context, s partitions, own interface{ Holds(p int) bool }, log *slog.Logger) {
	for {
		p, gained, ok := q.next()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-q.wake:
				continue
			}
		}
		if !gained {
			s.Drop(p)
			continue
		}
		if !own.Holds(p) {
			continue // lost again before it could be armed: its loss follows
		}
		n, err := s.Gain(ctx, p)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			// Try again a second on, unless newer news of p came.
			log.Error("cluster: arming a gained partition failed; trying again", "partition", p, "err", err)
			if !q.retryAfter(ctx, p, retryGain) {
				return
			}
			continue
		}
		log.Debug("cluster: partition armed", "partition", p, "armed", n)
	}
}
