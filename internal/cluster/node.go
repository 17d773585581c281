package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/vigilhq/vigil/internal/clock"
)

// Holder is told of each lease this node gains and loses: the scheduler
// loads a gained partition's pending watches and drops a lost one's. Both
// are called from the node's one goroutine, in order, and must not block
// for long. Lost comes before anyone else can hold the lease.
type Holder interface {
	Gained(l Lease)
	Lost(l Lease)
}

// Metrics counts what the node does with its leases; nil counts nothing.
type Metrics interface {
	// Held is the number of leases this node holds now: partitions of
	// the watches, and cluster-wide jobs.
	Held(partitions, jobs int)
	// Moved counts a lease gained (true) or lost (false).
	Moved(gained bool)
	// Renewed counts a renewal: ok, or refused because another holds it.
	Renewed(ok bool)
}

// Info is what a node publishes of itself, for GET /api/v1/cluster and
// for the plugin-set check.
type Info struct {
	Node        string    `json:"node"`
	Incarnation string    `json:"incarnation"`
	Addr        string    `json:"addr,omitempty"`
	StartedAt   time.Time `json:"started_at"`
	Plugins     string    `json:"plugins,omitempty"`
	// Kinds are the node's plugins, one "kind version sha256" line each
	// (what Plugins digests), so a refused node can say which kinds
	// differ from the cluster's; empty when the node did not say.
	Kinds []string `json:"kinds,omitempty"`
}

// Config is a node's.
type Config struct {
	// KV is the leases bucket (OpenBucket); TTL is its TTL.
	KV  jetstream.KeyValue
	TTL time.Duration
	// Margin is how long before a lease could have expired the node stops
	// acting on it: it trusts a lease until the send time of its last
	// renewal plus TTL minus Margin. Default a fifth of the TTL.
	Margin time.Duration
	// Info is this node's; Info.Node its name, unique in the cluster.
	Info Info
	// Leases is every lease in the cluster (Leases), the same list on
	// every node.
	Leases  []Lease
	Holder  Holder
	Clock   clock.Clock
	Logger  *slog.Logger
	Metrics Metrics
}

var nodeName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// held is a lease this node holds: the revision its last renewal wrote and
// when that renewal was sent.
type held struct {
	rev  uint64
	sent time.Time
}

// entry is the node's view of one key in the bucket; seen is when this
// node last heard of it (its own clock).
type entry struct {
	value   []byte
	rev     uint64
	created time.Time
	// info is a node key's value, read once when it arrives (the zero
	// Info when unreadable); nil for a lease.
	info *Info
	// seen is when the watcher last told of the key (the local clock).
	seen time.Time
}

// Node holds leases for one vigil node: it publishes itself, renews what it
// holds, gives up what the assignment moves elsewhere and takes what moves
// to it. Run owns its one goroutine's loop; Pass is one turn of it.
type Node struct {
	cfg    Config
	self   []byte // the value written into each lease: node/incarnation
	mu     sync.Mutex
	held   map[Lease]held
	view   map[string]entry
	me     uint64    // revision of this node's own key; 0 before it is written
	meSent time.Time // when that revision's write was sent
	ready  bool      // the watcher has delivered the bucket's initial state
	// refused: the last assignment left this node out for its plugin set
	// (logged once each time it starts).
	refused bool
	// plugins and kinds are the plugin set this node publishes: Info's,
	// until SetPlugins changes them.
	plugins string
	kinds   []string
	// poke wakes Run for a pass out of turn (SetPlugins).
	poke chan struct{}
}

// New checks cfg and makes a node; nothing is written until Run or Pass.
func New(cfg Config) (*Node, error) {
	if cfg.KV == nil || cfg.Holder == nil || cfg.Clock == nil {
		return nil, errors.New("cluster: a node needs the bucket, a holder and a clock")
	}
	if !nodeName.MatchString(cfg.Info.Node) {
		return nil, fmt.Errorf("cluster: node name %q: want 1 to 64 of A-Z a-z 0-9 _ -", cfg.Info.Node)
	}
	if cfg.TTL < MinTTL {
		return nil, fmt.Errorf("cluster: lease ttl %s is under the minimum %s", cfg.TTL, MinTTL)
	}
	if cfg.Margin <= 0 {
		cfg.Margin = cfg.TTL / 5
	}
	if cfg.Margin >= cfg.TTL/2 {
		return nil, fmt.Errorf("cluster: lease margin %s must be under half the ttl %s", cfg.Margin, cfg.TTL)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Info.Incarnation == "" {
		var b [6]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("cluster: incarnation: %w", err)
		}
		cfg.Info.Incarnation = hex.EncodeToString(b[:])
	}
	return &Node{
		cfg:  cfg,
		self: []byte(cfg.Info.Node + "/" + cfg.Info.Incarnation),
		held: map[Lease]held{},
		view: map[string]entry{},

		plugins: cfg.Info.Plugins,
		kinds:   slices.Clone(cfg.Info.Kinds),
		poke:    make(chan struct{}, 1),
	}, nil
}

// SetPlugins makes digest and kinds the plugin set the node publishes (a
// reload changed it): the node's key is rewritten at the next pass, which
// comes at once under Run, so the others judge the new set within a pass,
// and the assignment and Admits follow it.
func (n *Node) SetPlugins(digest string, kinds []string) {
	n.mu.Lock()
	if digest == n.plugins && slices.Equal(kinds, n.kinds) {
		n.mu.Unlock()
		return
	}
	n.plugins, n.kinds = digest, slices.Clone(kinds)
	n.meSent = time.Time{} // due for publishing
	n.mu.Unlock()
	select {
	case n.poke <- struct{}{}:
	default:
	}
}

// Name is the node's name.
func (n *Node) Name() string { return n.cfg.Info.Node }

// Holds says whether this node may act on l now: it holds it and its last
// renewal is recent enough that no other node can hold it. The scheduler
// asks before it starts each write on a partition's watch.
func (n *Node) Holds(l Lease) bool {
	n.mu.Lock()
	h, ok := n.held[l]
	n.mu.Unlock()
	return ok && n.cfg.Clock.Now().Before(n.trustedUntil(h))
}

func (n *Node) trustedUntil(h held) time.Time { return h.sent.Add(n.cfg.TTL - n.cfg.Margin) }

func nodeKey(node string) string { return "n." + node }

// Run publishes the node, follows the bucket and renews every third of the
// TTL, until ctx ends; then it gives up every lease it holds so the others
// take them at once, and returns.
func (n *Node) Run(ctx context.Context) error {
	err := n.runLoop(ctx)
	if errors.Is(err, context.Canceled) || ctx.Err() != nil {
		n.Leave(context.WithoutCancel(ctx))
		return nil
	}
	return err
}

// runLoop is Run's loop; it returns ctx's error when ctx ends.
func (n *Node) runLoop(ctx context.Context) error {
	w, err := n.cfg.KV.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("cluster: follow the %s bucket: %w", n.cfg.KV.Bucket(), err)
	}
	defer func() { _ = w.Stop() }()
	// Renewals are due a third of the TTL apart; a pass a sixth apart
	// makes each at most a sixth late.
	every := n.cfg.TTL / 6
	t := n.cfg.Clock.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return fmt.Errorf("cluster: the %s bucket's watcher stopped", n.cfg.KV.Bucket())
			}
			n.observe(e)
			// Drain what else is queued before acting on it.
			for more := true; more; {
				select {
				case e, ok := <-w.Updates():
					if !ok {
						return fmt.Errorf("cluster: the %s bucket's watcher stopped", n.cfg.KV.Bucket())
					}
					n.observe(e)
				default:
					more = false
				}
			}
			if !n.isReady() {
				continue
			}
			n.Pass(ctx)
		case <-t.C():
			if n.isReady() {
				n.Pass(ctx)
			}
			t.Reset(every)
		case <-n.poke:
			if n.isReady() {
				n.Pass(ctx)
			}
		}
	}
}

func (n *Node) isReady() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ready
}

// observe applies one watcher update to the view; nil is the end of the
// initial state.
func (n *Node) observe(e jetstream.KeyValueEntry) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if e == nil {
		n.ready = true
		return
	}
	if e.Operation() != jetstream.KeyValuePut {
		delete(n.view, e.Key())
		return
	}
	n.view[e.Key()] = newEntry(e.Key(), e.Value(), e.Revision(), e.Created(), n.cfg.Clock.Now())
}

// newEntry is a key's entry in the view, a node key's value read once.
func newEntry(key string, value []byte, rev uint64, created, seen time.Time) entry {
	en := entry{value: value, rev: rev, created: created, seen: seen}
	if strings.HasPrefix(key, "n.") {
		en.info = &Info{}
		_ = json.Unmarshal(en.value, en.info) // unreadable: the empty digest, a minority of one
	}
	return en
}

// refresh reads again each key the view has not heard of for longer than
// the TTL. A live key is rewritten every third of the TTL and a dead one
// expires at the TTL, so such an entry is news the watcher missed (its
// consumer is recreated when the bucket's stream changes leader, and a
// deletion or expiry can fall in between): kept, it would show a lease
// taken, or a node live, forever.
func (n *Node) refresh(ctx context.Context, now time.Time) {
	n.mu.Lock()
	var stale []string
	for k, e := range n.view {
		if now.Sub(e.seen) > n.cfg.TTL {
			stale = append(stale, k)
		}
	}
	n.mu.Unlock()
	for _, k := range stale {
		e, err := n.cfg.KV.Get(ctx, k)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
			n.mu.Lock()
			if v, ok := n.view[k]; ok && now.Sub(v.seen) > n.cfg.TTL {
				delete(n.view, k)
			}
			n.mu.Unlock()
		case err == nil:
			n.mu.Lock()
			if v, ok := n.view[k]; !ok || v.rev <= e.Revision() {
				n.view[k] = newEntry(k, e.Value(), e.Revision(), e.Created(), n.cfg.Clock.Now())
			}
			n.mu.Unlock()
		default:
			n.cfg.Logger.Warn("cluster: reading a key the watcher has not told of lately failed", "key", k, "err", err)
		}
	}
}

// Pass is one turn: drop what can no longer be trusted, renew the node and
// what it holds where a renewal is due, then give up and take leases to match the assignment
// over the live nodes.
func (n *Node) Pass(ctx context.Context) {
	now := n.cfg.Clock.Now()
	// A lease not renewed in time (a pause, a partition from the servers)
	// may already be another node's: stop acting on it before trying to
	// renew it.
	for _, l := range n.heldLeases() {
		if h := n.heldOf(l); !now.Before(n.trustedUntil(h)) {
			n.lose(l, "its renewal is overdue")
		}
	}
	n.publish(ctx, now)
	n.refresh(ctx, now)
	for _, l := range n.heldLeases() {
		h := n.heldOf(l)
		if now.Sub(h.sent) < n.renewEvery() {
			continue
		}
		sent := n.cfg.Clock.Now()
		rev, err := n.cfg.KV.Update(ctx, string(l), n.self, h.rev)
		switch {
		case err == nil:
			// A renewal that came back after the lease's trust ran out
			// (a pass slowed by the servers' election) leaves a gap in
			// which Holds said no: the holder may have dropped what came
			// due or refused what was registered meanwhile. No one else
			// can have held it (the revision is still ours), so the
			// holder hears it gained again and takes up what it missed.
			gap := !n.cfg.Clock.Now().Before(n.trustedUntil(h))
			n.mu.Lock()
			n.held[l] = held{rev: rev, sent: sent}
			n.mu.Unlock()
			n.renewed(true)
			if gap {
				n.cfg.Logger.Info("cluster: a lease renewed after its trust ran out; taking it up again", "lease", string(l))
				n.cfg.Holder.Gained(l)
			}
		case errors.Is(err, jetstream.ErrKeyRevisionMismatch), errors.Is(err, jetstream.ErrKeyNotFound):
			n.renewed(false)
			n.lose(l, "another node holds it")
		default:
			// The servers did not answer: keep it until its trust runs out.
			n.cfg.Logger.Warn("cluster: renewing a lease failed", "lease", string(l), "err", err)
		}
	}
	want := Assign(n.live(now), n.cfg.Leases)
	me := n.cfg.Info.Node
	for _, l := range n.heldLeases() {
		if want[l] == me {
			continue
		}
		h := n.heldOf(l)
		n.lose(l, "assigned to "+want[l])
		if err := n.cfg.KV.Delete(ctx, string(l), jetstream.LastRevision(h.rev)); err != nil && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			n.cfg.Logger.Warn("cluster: releasing a lease failed; it expires instead", "lease", string(l), "err", err)
		}
	}
	for _, l := range n.cfg.Leases {
		if want[l] != me || n.holding(l) || n.taken(l) {
			continue
		}
		sent := n.cfg.Clock.Now()
		rev, err := n.cfg.KV.Create(ctx, string(l), n.self)
		if err != nil {
			if !errors.Is(err, jetstream.ErrKeyExists) {
				n.cfg.Logger.Warn("cluster: taking a lease failed", "lease", string(l), "err", err)
			}
			continue
		}
		n.mu.Lock()
		n.held[l] = held{rev: rev, sent: sent}
		n.mu.Unlock()
		n.moved(true)
		n.cfg.Holder.Gained(l)
	}
	n.count()
}

// publish writes the node's own key, which is how the others know it is
// live. A key left by an earlier process of the same name is overwritten.
func (n *Node) publish(ctx context.Context, now time.Time) {
	info := n.cfg.Info
	n.mu.Lock()
	info.Plugins, info.Kinds = n.plugins, n.kinds
	rev, last := n.me, n.meSent
	n.mu.Unlock()
	if rev != 0 && now.Sub(last) < n.renewEvery() {
		return
	}
	b, err := json.Marshal(info)
	if err != nil {
		return
	}
	var next uint64
	if rev == 0 {
		next, err = n.cfg.KV.Put(ctx, nodeKey(info.Node), b)
	} else {
		next, err = n.cfg.KV.Update(ctx, nodeKey(info.Node), b, rev)
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyNotFound) {
			// It expired (a pause) or another process took the name.
			n.cfg.Logger.Warn("cluster: this node's key changed under it; another process may use the name", "node", info.Node)
			next, err = n.cfg.KV.Put(ctx, nodeKey(info.Node), b)
		}
	}
	if err != nil {
		n.cfg.Logger.Warn("cluster: publishing the node failed", "err", err)
		return
	}
	n.mu.Lock()
	n.me = next
	if n.plugins == info.Plugins && slices.Equal(n.kinds, info.Kinds) {
		n.meSent = now
	} // else SetPlugins came meanwhile: publish again at the next pass
	n.mu.Unlock()
}

// renewEvery is how often a lease and the node's key are renewed: three
// renewals fit in a TTL, so one lost write costs no lease.
func (n *Node) renewEvery() time.Duration { return n.cfg.TTL / 3 }

// live is the nodes whose keys are in the view, and this one when its own
// key is written, less those whose plugin set differs from the cluster's
// (Refused): a node that lacks a plugin another admitted a watch with
// must own none of the watches.
func (n *Node) live(time.Time) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	digests := n.digestsLocked()
	want := ClusterDigest(digests)
	var out []string
	for name, d := range digests {
		if d == want {
			out = append(out, name)
		}
	}
	if mine := n.plugins; n.me != 0 && mine != want {
		if !n.refused {
			n.refused = true
			n.cfg.Logger.Error("cluster: this node's plugin set differs from the cluster's; it holds no partition and takes no registration until they match",
				"node", n.cfg.Info.Node, "plugins", mine, "cluster_plugins", want)
		}
	} else {
		n.refused = false
	}
	return out
}

// digestsLocked is the plugin set digest of each live node, by name, this
// one included once its key is written. The caller holds mu.
func (n *Node) digestsLocked() map[string]string {
	out := map[string]string{}
	for k, e := range n.view {
		if e.info != nil {
			out[k[2:]] = e.info.Plugins
		}
	}
	if n.me != 0 {
		out[n.cfg.Info.Node] = n.plugins
	}
	return out
}

// ClusterDigest is the plugin set digest the cluster runs: the one most
// live nodes publish, the lexicographically smallest on a tie, so every
// node computes the same from the same view.
func ClusterDigest(digests map[string]string) string {
	count := map[string]int{}
	for _, d := range digests {
		count[d]++
	}
	best, bestN := "", 0
	for d, c := range count {
		if c > bestN || (c == bestN && d < best) {
			best, bestN = d, c
		}
	}
	return best
}

// taken says whether the view shows l held by anyone, this node's earlier
// incarnations included: those expire in their own time.
func (n *Node) taken(l Lease) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.view[string(l)]
	return ok
}

func (n *Node) holding(l Lease) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.held[l]
	return ok
}

func (n *Node) heldOf(l Lease) held {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.held[l]
}

func (n *Node) heldLeases() []Lease {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]Lease, 0, len(n.held))
	for l := range n.held {
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}

// lose stops acting on l: the holder hears first, then the lease is gone
// from what Holds answers.
func (n *Node) lose(l Lease, why string) {
	n.mu.Lock()
	_, ok := n.held[l]
	delete(n.held, l)
	n.mu.Unlock()
	if !ok {
		return
	}
	n.cfg.Logger.Info("cluster: lease lost", "lease", string(l), "why", why)
	n.moved(false)
	n.cfg.Holder.Lost(l)
}

// Leave gives up every lease and the node's key, so the others take over
// at once rather than after the TTL.
func (n *Node) Leave(ctx context.Context) {
	for _, l := range n.heldLeases() {
		h := n.heldOf(l)
		n.lose(l, "leaving")
		_ = n.cfg.KV.Delete(ctx, string(l), jetstream.LastRevision(h.rev))
	}
	n.mu.Lock()
	rev := n.me
	n.me = 0
	n.mu.Unlock()
	if rev != 0 {
		_ = n.cfg.KV.Delete(ctx, nodeKey(n.cfg.Info.Node), jetstream.LastRevision(rev))
	}
	n.count()
}

func (n *Node) count() {
	if n.cfg.Metrics == nil {
		return
	}
	n.mu.Lock()
	partitions := 0
	for l := range n.held {
		if _, ok := l.Partition(); ok {
			partitions++
		}
	}
	jobs := len(n.held) - partitions
	n.mu.Unlock()
	n.cfg.Metrics.Held(partitions, jobs)
}

func (n *Node) moved(gained bool) {
	if n.cfg.Metrics != nil {
		n.cfg.Metrics.Moved(gained)
	}
}

func (n *Node) renewed(ok bool) {
	if n.cfg.Metrics != nil {
		n.cfg.Metrics.Renewed(ok)
	}
}
