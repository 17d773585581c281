package delivery

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vigilhq/vigil/api/webhooks"
	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/internal/netguard"
	"github.com/vigilhq/vigil/store"
)

// OutboxStore is what the outbox needs of the store.
type OutboxStore interface {
	RecoverPushes(ctx context.Context, at time.Time) ([]store.Push, error)
	LivePushes(ctx context.Context, fn func(store.Push) error) error
	// RecoverPushesOf and LivePushesOf are the two above for the
	// recipients keep accepts: a cluster node's outbox recovers and loads
	// one push partition's (store.PushPartition) when it gains it.
	RecoverPushesOf(ctx context.Context, at time.Time, keep func(rid string) bool) ([]store.Push, error)
	LivePushesOf(ctx context.Context, keep func(rid string) bool, fn func(store.Push) error) error
	BeginPush(ctx context.Context, rid string, seq uint64, at time.Time) (store.Push, store.Message, store.RecipientRecord, error)
	FinishPush(ctx context.Context, p store.Push) error
	DisableWebhook(ctx context.Context, rid, url, reason string, at time.Time) (bool, error)
}

// RetrySchedule is the Standard Webhooks schedule: the delay before each
// attempt after a failed one, the first attempt being immediate. A push
// that has made len(RetrySchedule()) attempts without a delivery is failed.
func RetrySchedule() []time.Duration {
	return []time.Duration{0, 5 * time.Second, 5 * time.Minute, 30 * time.Minute,
		2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}
}

// maxRetryAfter bounds how long a receiver's Retry-After can hold a push.
const maxRetryAfter = 24 * time.Hour

// OutboxConfig configures an Outbox. Zero fields take the defaults.
type OutboxConfig struct {
	Store   OutboxStore
	Metrics Metrics
	// Guard screens webhook destinations (default: refuse every
	// special-purpose address, allow none).
	Guard *netguard.Guard
	// Timeout bounds one webhook POST (default 10 s).
	Timeout time.Duration
	// Workers send pushes (default 4, at most 16). A recipient has at most
	// one request in flight, so a slow receiver holds one worker.
	Workers int
	// Schedule is the delay before each attempt (default RetrySchedule).
	Schedule []time.Duration
	// Partitions, on a cluster node, is the cluster's partition count: the
	// outbox then sends only the pushes of recipients whose push partition
	// (store.PushPartition) it holds (Claim, Gain, Drop), none before,
	// and Run recovers nothing (each Gain recovers its partition's).
	// Zero: one host, whose outbox owns every recipient's pushes.
	Partitions int
	Clock      clock.Clock
	Logger     *slog.Logger
}

type pushKey struct {
	rid string
	seq uint64
}

// lane is one recipient's pushes that may be sent now.
type lane struct {
	first  []uint64 // first attempts, in mailbox order
	ready  []uint64 // retries whose time has come, ascending
	busy   bool     // a request of this recipient is in flight
	queued bool     // in runq
}

func (l *lane) idle() bool { return len(l.first) == 0 && len(l.ready) == 0 }

// take removes and returns the lowest seq the lane may send, and whether
// it is a first attempt.
func (l *lane) take() (uint64, bool) {
	if len(l.ready) == 0 || (len(l.first) > 0 && l.first[0] < l.ready[0]) {
		seq := l.first[0]
		l.first = l.first[1:]
		return seq, true
	}
	seq := l.ready[0]
	l.ready = l.ready[1:]
	return seq, false
}

// retry is a push waiting for its next attempt.
type retry struct {
	key   pushKey
	due   int64
	index int
}

type retryHeap []*retry

func (h retryHeap) Len() int           { return len(h) }
func (h retryHeap) Less(i, j int) bool { return h[i].due < h[j].due }
func (h retryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *retryHeap) Push(x any) { r := x.(*retry); r.index = len(*h); *h = append(*h, r) }
func (h *retryHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	*h = old[:len(old)-1]
	r.index = -1
	return r
}

// Outbox sends the webhook pushes that settling wrote to the store, on
// its own small pool of workers, never on a probe's path.
type Outbox struct {
	cfg    OutboxConfig
	log    *slog.Logger
	client *http.Client

	// mu guards everything below it; it is never held across a store call
	// or a request.
	mu       sync.Mutex
	cond     *sync.Cond // signalled when runq gains a lane or stopping is set
	lanes    map[string]*lane
	runq     []string         // recipients whose lane has work and is not busy, FIFO
	retries  retryHeap        // pushes waiting for a time
	known    map[pushKey]bool // every push queued, waiting or in flight
	stopping bool
	// parts is the push partitions held on a cluster (nil on one host,
	// which holds every one), from Claim to Drop; a partition's pushes are
	// queued from its Claim and sent once Gain has loaded it, so a push
	// told early waits for the lower seqs the load finds. claims numbers
	// the claims, so a load that a drop and a new claim overtook does not
	// count for the new claim.
	parts  map[int]pushPartition
	claims uint64

	wake    chan struct{} // the loop re-reads the retry heap
	started atomic.Bool
}

// NewOutbox builds an Outbox; it starts nothing. Run sends.
func NewOutbox(cfg OutboxConfig) (*Outbox, error) {
	if cfg.Store == nil {
		return nil, errors.New("delivery: outbox: Store is required")
	}
	if cfg.Guard == nil {
		cfg.Guard = netguard.New(nil)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	cfg.Workers = min(max(cfg.Workers, 0), 16)
	if cfg.Workers == 0 {
		cfg.Workers = 4
	}
	if len(cfg.Schedule) == 0 {
		cfg.Schedule = RetrySchedule()
	}
	cfg.Clock = clock.Or(cfg.Clock)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = nopMetrics{}
	}
	transport := &http.Transport{
		Proxy:               nil, // a proxy would dial for us, past the guard
		DialContext:         cfg.Guard.Dialer(cfg.Timeout).DialContext,
		TLSHandshakeTimeout: cfg.Timeout,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	o := &Outbox{
		cfg: cfg,
		log: cfg.Logger.With("component", "outbox"),
		client: &http.Client{
			Transport: transport,
			Timeout:   cfg.Timeout,
			// A redirect is not an acceptance: the receiver did not take
			// the message at the address it registered.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		lanes: map[string]*lane{},
		known: map[pushKey]bool{},
		wake:  make(chan struct{}, 1),
	}
	if cfg.Partitions > 0 {
		o.parts = map[int]pushPartition{}
	}
	o.cond = sync.NewCond(&o.mu)
	return o, nil
}

var _ Enqueuer = (*Outbox)(nil)

// Run recovers the outbox and runs its loop and workers until ctx ends;
// it returns nil once they have stopped, or recovery's error. Recovery
// comes first: every push found sending is recorded unknown and never
// sent again (a request may have gone out before the host stopped), and
// every pending or retrying push is queued, first attempts in mailbox
// order. On a cluster (Partitions) it recovers nothing: recovery and
// loading are per push partition, in Gain. A request in flight when ctx
// ends is abandoned: if its headers had gone out it is recorded unknown,
// otherwise it is put back to be sent after the next start. Run once.
func (o *Outbox) Run(ctx context.Context) error {
	if !o.started.CompareAndSwap(false, true) {
		return errors.New("delivery: outbox already running")
	}
	if o.parts != nil {
		// A cluster node: each push partition is recovered when it is
		// gained, never one another live node holds.
		o.log.Info("outbox started; pushes are sent for the push partitions this node gains", "workers", o.cfg.Workers)
		o.run(ctx)
		return nil
	}
	now := o.cfg.Clock.Now()
	recovered, err := o.cfg.Store.RecoverPushes(ctx, now)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting: a clean stop
		}
		return fmt.Errorf("delivery: outbox: recovering pushes in flight: %w", err)
	}
	for _, p := range recovered {
		o.cfg.Metrics.Push(store.PushUnknown)
		o.log.Warn("push outcome unknown: the host stopped while it was in flight; it is not sent again",
			"recipient", p.Recipient, "seq", p.Seq, "message", p.MessageID)
	}
	queued := 0
	err = o.cfg.Store.LivePushes(ctx, func(p store.Push) error {
		o.Enqueue(p)
		queued++
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("delivery: outbox: loading pushes: %w", err)
	}
	o.log.Info("outbox started", "queued", queued, "recovered_unknown", len(recovered), "workers", o.cfg.Workers)
	o.run(ctx)
	return nil
}

// run runs the loop and the workers until ctx ends and they have stopped.
func (o *Outbox) run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { o.loop(ctx) })
	for range o.cfg.Workers {
		wg.Go(func() { o.work(ctx) })
	}
	wg.Wait()
}

// Enqueue implements Enqueuer: it queues a push that is pending (for its
// first attempt) or retrying (at its next attempt). A push it already
// holds, or a final one, is ignored; so, on a cluster, is a push of a
// recipient whose push partition this outbox does not hold: it is the
// holder's to send.
func (o *Outbox) Enqueue(p store.Push) {
	k := pushKey{p.Recipient, p.Seq}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.known[k] {
		return
	}
	if _, held := o.holds(k.rid); !held {
		return
	}
	switch p.State {
	case store.PushPending:
		o.known[k] = true
		o.addFirst(k)
	case store.PushRetrying:
		o.known[k] = true
		due := o.cfg.Clock.Now()
		if p.NextAttempt != nil {
			due = *p.NextAttempt
		}
		o.addRetry(k, due)
	}
}

// pushPartition is a claimed push partition: which claim, and whether
// Gain has loaded it.
type pushPartition struct {
	claim  uint64
	loaded bool
}

// holds says whether rid's push partition is held (claimed) and whether
// it is loaded, so its pushes may be sent; both on one host. The caller
// holds mu.
func (o *Outbox) holds(rid string) (loaded, held bool) {
	if o.parts == nil {
		return true, true
	}
	pp, held := o.parts[store.PushPartition(rid, o.cfg.Partitions)]
	return pp.loaded, held
}

// HoldsPushesOf says whether this outbox holds recipient rid's push
// partition (claimed, loaded or not): whether a push of rid told now is
// queued here. Always on one host.
func (o *Outbox) HoldsPushesOf(rid string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, held := o.holds(rid)
	return held
}

// Claim makes push partition p this outbox's from now (its node has just
// gained the partition's lease): pushes of p told from now on are queued,
// and sent once Gain has loaded p. It reads nothing, so the lease loop
// calls it as it gains the lease, as it calls Drop as it loses one: what
// the outbox holds follows the leases in their order, whenever the loads
// run. On one host it does nothing.
func (o *Outbox) Claim(p int) {
	if o.parts == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.parts[p]; !ok {
		o.claims++
		o.parts[p] = pushPartition{claim: o.claims}
	}
}

// Gain loads push partition p, claimed (Claim): it recovers p's pushes
// found sending (unknown, never sent again: the node that began them is
// gone or has let go) and queues p's pending and retrying ones, and only
// then sends any push of p, so a recipient's first attempts start again
// from its lowest seq not delivered. Pushes told meanwhile (Enqueue) are
// queued in order with them. A partition not claimed (dropped since), or
// loaded already, is left alone; one dropped and claimed again while it
// loads stays to be loaded by the next Gain. It returns how many pushes
// it queued. On one host it does nothing. Gains are called one at a time.
func (o *Outbox) Gain(ctx context.Context, p int) (int, error) {
	if o.parts == nil {
		return 0, nil
	}
	o.mu.Lock()
	pp, ok := o.parts[p]
	o.mu.Unlock()
	if !ok || pp.loaded {
		return 0, nil
	}
	keep := func(rid string) bool { return store.PushPartition(rid, o.cfg.Partitions) == p }
	recovered, err := o.cfg.Store.RecoverPushesOf(ctx, o.cfg.Clock.Now(), keep)
	if err == nil {
		for _, p := range recovered {
			o.cfg.Metrics.Push(store.PushUnknown)
			o.log.Warn("push outcome unknown: its sender stopped or let go while it was in flight; it is not sent again",
				"recipient", p.Recipient, "seq", p.Seq, "message", p.MessageID)
		}
	}
	queued := 0
	if err == nil {
		err = o.cfg.Store.LivePushesOf(ctx, keep, func(p store.Push) error {
			o.Enqueue(p)
			queued++
			return nil
		})
	}
	if err != nil {
		// p stays claimed and unloaded (what was told of it waits,
		// unsent) for the caller to try again.
		return 0, fmt.Errorf("delivery: outbox: loading push partition %d: %w", p, err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if cur, ok := o.parts[p]; !ok || cur.claim != pp.claim {
		return queued, nil // dropped (and perhaps claimed again) meanwhile
	}
	o.parts[p] = pushPartition{claim: pp.claim, loaded: true}
	for rid, l := range o.lanes {
		if store.PushPartition(rid, o.cfg.Partitions) == p {
			o.ready(rid, l)
		}
	}
	if len(o.retries) > 0 {
		select {
		case o.wake <- struct{}{}:
		default:
		}
	}
	return queued, nil
}

// Drop gives up push partition p (its node is losing the lease): no new
// attempt of its pushes starts here, and what was queued of them is
// forgotten (the partition's new holder loads them from the store). An
// attempt in flight finishes and records its result. It returns how many
// queued pushes it forgot. On one host it does nothing.
func (o *Outbox) Drop(p int) int {
	if o.parts == nil {
		return 0
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.parts, p)
	mine := func(rid string) bool { return store.PushPartition(rid, o.cfg.Partitions) == p }
	dropped := 0
	for rid, l := range o.lanes {
		if !mine(rid) {
			continue
		}
		for _, seq := range slices.Concat(l.first, l.ready) {
			delete(o.known, pushKey{rid, seq})
			dropped++
		}
		l.first, l.ready, l.queued = nil, nil, false
		if !l.busy {
			delete(o.lanes, rid)
		}
	}
	o.runq = slices.DeleteFunc(o.runq, mine)
	kept := o.retries[:0]
	for _, r := range o.retries {
		if mine(r.key.rid) {
			delete(o.known, r.key)
			dropped++
			continue
		}
		kept = append(kept, r)
	}
	clear(o.retries[len(kept):])
	o.retries = kept
	for i, r := range o.retries {
		r.index = i
	}
	heap.Init(&o.retries)
	return dropped
}

// PushPartitions is how many push partitions the outbox holds and has
// loaded (Gain), for a node's status and its tests; 0 on one host.
func (o *Outbox) PushPartitions() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, pp := range o.parts {
		if pp.loaded {
			n++
		}
	}
	return n
}

// retryLater puts a push its attempt left for later on the retry heap,
// or, when its push partition was dropped meanwhile, forgets it: the new
// holder loads it. The caller holds mu.
func (o *Outbox) retryLater(k pushKey, due time.Time) {
	if _, held := o.holds(k.rid); !held {
		delete(o.known, k)
		return
	}
	o.addRetry(k, due)
}

// lane returns rid's lane, making it; the caller holds mu.
func (o *Outbox) lane(rid string) *lane {
	l := o.lanes[rid]
	if l == nil {
		l = &lane{}
		o.lanes[rid] = l
	}
	return l
}

// addFirst queues a first attempt in mailbox order; the caller holds mu.
func (o *Outbox) addFirst(k pushKey) {
	l := o.lane(k.rid)
	i, _ := slices.BinarySearch(l.first, k.seq)
	l.first = slices.Insert(l.first, i, k.seq)
	o.ready(k.rid, l)
}

// addRetry puts a push on the retry heap; the caller holds mu.
func (o *Outbox) addRetry(k pushKey, due time.Time) {
	heap.Push(&o.retries, &retry{key: k, due: due.UnixNano()})
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// ready puts a lane with work, and no request in flight, on the run
// queue; the caller holds mu.
func (o *Outbox) ready(rid string, l *lane) {
	if l.busy || l.queued || l.idle() {
		return
	}
	if loaded, _ := o.holds(rid); !loaded {
		return // Gain readies it once its partition is loaded
	}
	l.queued = true
	o.runq = append(o.runq, rid)
	o.cond.Signal()
}

// promote moves every retry due at or before now to its lane and returns
// when the next one is due (false: none waits).
func (o *Outbox) promote(now time.Time) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := now.UnixNano()
	for len(o.retries) > 0 && o.retries[0].due <= n {
		r := heap.Pop(&o.retries).(*retry)
		l := o.lane(r.key.rid)
		i, _ := slices.BinarySearch(l.ready, r.key.seq)
		l.ready = slices.Insert(l.ready, i, r.key.seq)
		o.ready(r.key.rid, l)
	}
	if len(o.retries) == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, o.retries[0].due), true
}

// NextRetry is when the earliest retry is due; false when none waits, and
// then the loop arms no timer.
func (o *Outbox) NextRetry() (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.retries) == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, o.retries[0].due).UTC(), true
}

// loop owns the retry heap's one timer: it sleeps until the earliest
// retry is due or a new one is added, and with no retry waiting it arms
// no timer at all.
func (o *Outbox) loop(ctx context.Context) {
	for {
		next, ok := o.promote(o.cfg.Clock.Now())
		var t clock.Timer
		var fire <-chan time.Time
		if ok {
			t = o.cfg.Clock.NewTimer(next.Sub(o.cfg.Clock.Now()))
			fire = t.C()
			if !o.cfg.Clock.Now().Before(next) {
				// It came due while the timer was armed (a clock moved
				// between the two reads, which a timer armed after the
				// move would wait out once more): promote it now.
				t.Stop()
				continue
			}
		}
		select {
		case <-ctx.Done():
		case <-o.wake:
		case <-fire:
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			// The workers stop too, whether or not Stop was called.
			o.mu.Lock()
			o.stopping = true
			o.cond.Broadcast()
			o.mu.Unlock()
			return
		}
	}
}

// take returns the next push to send, marking its recipient busy; false
// when there is none now. The caller holds mu.
func (o *Outbox) take() (pushKey, bool, bool) {
	var rid string
	var l *lane
	for l == nil {
		if len(o.runq) == 0 {
			return pushKey{}, false, false
		}
		rid = o.runq[0]
		o.runq = o.runq[1:]
		if l = o.lanes[rid]; l != nil && (!l.queued || l.idle()) {
			l = nil // dropped with its partition since it was queued
		}
	}
	l.queued = false
	seq, first := l.take()
	l.busy = true
	return pushKey{rid, seq}, first, true
}

// done releases a recipient after an attempt; final says the push left
// the outbox. The caller holds mu.
func (o *Outbox) done(k pushKey, final bool) {
	if final {
		delete(o.known, k)
	}
	l := o.lanes[k.rid]
	l.busy = false
	if l.idle() && !l.queued {
		delete(o.lanes, k.rid)
		return
	}
	o.ready(k.rid, l)
}

// work is one worker: it takes the next push and sends it, until Stop.
func (o *Outbox) work(ctx context.Context) {
	for {
		o.mu.Lock()
		var k pushKey
		var first, ok bool
		for !o.stopping {
			if k, first, ok = o.take(); ok {
				break
			}
			o.cond.Wait()
		}
		if !ok {
			o.mu.Unlock()
			return
		}
		o.mu.Unlock()
		final := o.attempt(ctx, k, first)
		o.mu.Lock()
		o.done(k, final)
		o.mu.Unlock()
	}
}

// outcome classifies what became of one attempt.
type outcome int

const (
	delivered outcome = iota
	retryable         // not reached, or answered 5xx or 429
	refused           // answered another 4xx (or a 3xx), or nothing to send to
	gone              // answered 410: refused, and the webhook is disabled
	uncertain         // the request went out and no answer came
	notSent           // the host is stopping; nothing went out
)

// attempt makes one attempt of a push and records its result; it reports
// whether the push left the outbox (final, or not found).
func (o *Outbox) attempt(ctx context.Context, k pushKey, first bool) bool {
	p, m, rec, err := o.cfg.Store.BeginPush(ctx, k.rid, k.seq, o.cfg.Clock.Now())
	switch {
	case errors.Is(err, store.ErrPushState):
		return true // finished or recovered meanwhile
	case errors.Is(err, store.ErrNotFound):
		o.cfg.Metrics.Push(store.PushFailed)
		o.log.Warn("push failed: its message or recipient is gone", "recipient", k.rid, "seq", k.seq)
		return true
	case err != nil:
		if ctx.Err() == nil {
			o.log.Error("starting a push", "recipient", k.rid, "seq", k.seq, "err", err)
		}
		// Nothing was marked: try again after the schedule's first wait.
		o.mu.Lock()
		o.retryLater(k, o.cfg.Clock.Now().Add(o.cfg.Schedule[min(1, len(o.cfg.Schedule)-1)]))
		o.mu.Unlock()
		return false
	}
	o.cfg.Metrics.Push(store.PushSending)
	res, reason, retryAfter := o.send(ctx, p, m, rec)
	now := o.cfg.Clock.Now().UTC()
	p.UpdatedAt, p.LastError, p.NextAttempt = now, reason, nil
	switch res {
	case delivered:
		p.State = store.PushDelivered
	case retryable:
		if p.Attempts >= len(o.cfg.Schedule) {
			p.State = store.PushFailed
			p.LastError = reason + fmt.Sprintf("; gave up after %d attempts", p.Attempts)
			break
		}
		next := now.Add(max(o.cfg.Schedule[p.Attempts], retryAfter))
		p.State, p.NextAttempt = store.PushRetrying, &next
	case refused:
		p.State = store.PushFailed
	case gone:
		p.State = store.PushFailed
		why := fmt.Sprintf("the receiver answered 410 Gone to message %d", p.Seq)
		disabled, err := o.cfg.Store.DisableWebhook(context.WithoutCancel(ctx), rec.ID, rec.Webhook.URL, why, now)
		if err != nil {
			o.log.Error("disabling a webhook that answered 410", "recipient", rec.ID, "err", err)
		} else if disabled {
			o.log.Warn("webhook disabled: the receiver answered 410 Gone", "recipient", rec.ID, "message", p.MessageID)
		}
	case uncertain:
		p.State = store.PushUnknown
	case notSent:
		// Stopping before anything went out: put it back as it was, to be
		// sent after the next start.
		p.Attempts--
		p.State = store.PushPending
		if !first {
			p.State, p.NextAttempt = store.PushRetrying, &now
		}
	}
	if err := o.cfg.Store.FinishPush(context.WithoutCancel(ctx), p); err != nil {
		o.log.Error("recording a push's result", "recipient", k.rid, "seq", k.seq, "state", p.State, "err", err)
		return true
	}
	if res == notSent {
		return true
	}
	o.cfg.Metrics.Push(p.State)
	switch p.State {
	case store.PushRetrying:
		o.log.Info("push will be retried", "recipient", k.rid, "seq", k.seq, "attempts", p.Attempts, "reason", reason, "next", p.NextAttempt)
		o.mu.Lock()
		o.retryLater(k, *p.NextAttempt)
		o.mu.Unlock()
		return false
	case store.PushFailed, store.PushUnknown:
		o.log.Warn("push "+string(p.State), "recipient", k.rid, "seq", k.seq, "message", p.MessageID, "attempts", p.Attempts, "reason", reason)
	}
	return true
}

// send makes one signed POST of m and classifies what became of it, with
// a short reason and the receiver's Retry-After, if any.
func (o *Outbox) send(ctx context.Context, p store.Push, m store.Message, rec store.RecipientRecord) (outcome, string, time.Duration) {
	// A notice is sent only to a recipient running now: it never reaches,
	// and never revives, one that stopped after it was mailed.
	if p.Notice && rec.Status != store.StatusRunning {
		return refused, fmt.Sprintf("the recipient is %s", rec.Status), 0
	}
	switch {
	case rec.Webhook == nil || rec.Webhook.URL == "":
		return refused, "the recipient has no webhook", 0
	case rec.Webhook.DisabledAt != nil:
		return refused, "the recipient's webhook is disabled", 0
	}
	body, err := json.Marshal(m)
	if err != nil {
		return refused, "the message does not encode", 0
	}
	hdr, err := webhooks.Headers(rec.Webhook.Secret, m.ID.String(), o.cfg.Clock.Now(), body)
	if err != nil {
		return refused, "the recipient's secret is unusable", 0
	}
	rctx, cancel := context.WithTimeout(ctx, o.cfg.Timeout)
	defer cancel()
	var wrote atomic.Bool
	rctx = httptrace.WithClientTrace(rctx, &httptrace.ClientTrace{
		WroteHeaders: func() { wrote.Store(true) },
	})
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, rec.Webhook.URL, bytes.NewReader(body))
	if err != nil {
		return refused, "the webhook URL is unusable", 0
	}
	req.Header = hdr
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "vigil-webhook/1")
	resp, err := o.client.Do(req)
	if err != nil {
		return classifyError(ctx, err, wrote.Load())
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	code := resp.StatusCode
	reason := "status " + strconv.Itoa(code)
	switch {
	case code >= 200 && code < 300:
		return delivered, "", 0
	case code == http.StatusGone:
		return gone, reason, 0
	case code == http.StatusTooManyRequests || code >= 500:
		return retryable, reason, retryAfter(resp.Header.Get("Retry-After"), o.cfg.Clock.Now())
	default:
		return refused, reason, 0
	}
}

// classifyError classifies a request that got no answer, by the error's
// type and by whether its headers had gone out; never by its text.
func classifyError(ctx context.Context, err error, wrote bool) (outcome, string, time.Duration) {
	var dns *net.DNSError
	var unresolved *netguard.ResolveError
	switch {
	case wrote:
		// It may have arrived: never sent again.
		return uncertain, "the request went out and no answer came", 0
	case errors.Is(err, netguard.ErrRefused):
		return refused, "the destination guard refuses the webhook's address", 0
	case ctx.Err() != nil:
		return notSent, "", 0
	case errors.Is(err, syscall.ECONNREFUSED):
		return retryable, "connection refused", 0
	case errors.As(err, &dns), errors.As(err, &unresolved):
		return retryable, "name resolution failed", 0
	default:
		// Nothing went out (a dial or TLS failure, a timeout before the
		// headers): the receiver never saw it.
		return retryable, "the request did not reach the receiver", 0
	}
}

// retryAfter reads a Retry-After header (seconds, or an HTTP date), at
// most maxRetryAfter; zero if absent or unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), maxRetryAfter)
}
