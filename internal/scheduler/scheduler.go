package scheduler

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/watchwait"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// Kinds is what the scheduler needs of the kinds it serves: the host's
// kind.Registry, where the plugin runtime and the built-in kinds register.
// Settled tells a watch's kind of its settlement once the outcome is
// persisted and before it is delivered; it must not block for long.
type Kinds interface {
	Lookup(name string) (kind.Info, bool)
	Admit(ctx context.Context, name string, req kind.AdmitRequest) (kind.Admission, error)
	Observe(ctx context.Context, req abi.ObserveRequest) (kind.Observation, error)
	Settled(ctx context.Context, w store.Watch)
}

// Deliverer settles a watch and mails its outcome in one store
// transaction, and records a baseline with its change mail likewise; the
// webhook push, if any, leaves later from an outbox, never from here. Both
// return store.ErrNotPending, having written and mailed nothing, when the
// watch is no longer pending (a cancel committed first), and on a cluster
// store.ErrNotOwner when its partition has passed to another node since
// this one gained it: the watch is dropped here either way, never retried.
//
// Settle's message goes to a running recipient (the receipt is then
// delivered); a recipient that is not running settles the watch
// undeliverable. Carry's change is a message the host sends on its own
// initiative: mailed only to a running recipient, and its push re-checks
// that the recipient is live just before it is sent and never revives one
// that is not. Carry reports whether the change was mailed.
type Deliverer interface {
	Settle(ctx context.Context, id store.ID, st store.Settlement, m store.Message) (store.Watch, error)
	Carry(ctx context.Context, id store.ID, baseline json.RawMessage, attempts int, note string, change *store.Message) (bool, error)
}

// Store is what the scheduler needs of the store: rows written, read and
// moved on conditionally (each transition only while the row is pending,
// store.ErrNotPending otherwise), the due index read a window at a time, the
// pending rows parked on a subject, and the start-time prune of settled
// rows an older build left unindexed (the backstop of the upkeep's
// retention). Settlements with mail go
// through the Deliverer, not here.
type Store interface {
	// Create writes a new row; store.ErrExists if the id is taken.
	Create(ctx context.Context, w store.Watch) error
	// Get reads a row; store.ErrNotFound if absent or held aside.
	Get(ctx context.Context, id store.ID) (store.Watch, error)
	// Settle makes a pending row final (a cancel, here).
	Settle(ctx context.Context, id store.ID, s store.Settlement) (store.Watch, error)
	// SetNextCheck and RecordProbe keep a pending row's schedule and
	// what its probes saw (the owner's writes: store.ErrNotOwner on a
	// cluster once the partition has another owner, and the watch is
	// dropped).
	SetNextCheck(ctx context.Context, id store.ID, next time.Time) error
	RecordProbe(ctx context.Context, id store.ID, p store.Probe) error
	// ScanDue reads a slice of the due index by time: Prime's first
	// window, the loader's later ones, a gained partition's (window.go).
	ScanDue(ctx context.Context, q store.DueQuery, fn func(store.Schedule) error) (store.DueSlice, error)
	PendingBySubject(ctx context.Context, subject string) ([]store.ID, error)
	PendingByKey(ctx context.Context, kind string, keys []string) ([]store.ID, error)
	// PruneUnindexed is the retention's start-time backstop for records
	// an older build wrote without their time index, run once in a
	// store's life (then it reads nothing): what settled before cutoff;
	// never a pending row.
	PruneUnindexed(ctx context.Context, cutoff time.Time) (int, error)
}

// Recipients is what registration needs of the recipients: the named one,
// created running with a mailbox only if it is new, and the row written
// only if the recipient is running in the transaction that writes it (a
// *store.NotRunningError otherwise).
type Recipients interface {
	EnsureRecipient(ctx context.Context, id string, now time.Time) (store.RecipientRecord, error)
	// GetRecipient reads a record; store.ErrNotFound if there is none.
	GetRecipient(ctx context.Context, id string) (store.RecipientRecord, error)
	CreateIfRunning(ctx context.Context, w store.Watch, maxPending int) error
}

// Metrics is what the scheduler reports. Ready is called with the
// scheduler's lock held, and none of them may block.
type Metrics interface {
	// Probe counts a probe by kind and result (pending, settled, changed,
	// expired, unwatchable, fault, error).
	Probe(kind, result string)
	// Lag is how late a probe started after its due time.
	Lag(kind string, d time.Duration)
	// Ready is the ready queue's depth: due watches no worker has taken.
	Ready(depth int)
}

type nopMetrics struct{}

func (nopMetrics) Probe(string, string)      {}
func (nopMetrics) Lag(string, time.Duration) {}
func (nopMetrics) Ready(int)                 {}

var _ Metrics = nopMetrics{}

// The worker pool's default and bound.
const (
	DefaultWorkers = 4
	MaxWorkers     = 16
)

// DefaultRetention is how long a settled row is kept after it settled
// (seed 002: seven days): Config.Retention's default, for the start-time
// backstop prune, and the upkeep's settled class, so the two cannot
// drift apart.
const DefaultRetention = 7 * 24 * time.Hour

// The cadence of a watch whose kind names none, and the deadline of an
// open-ended watch that sets none (Config.DefaultEvery, DefaultDeadline):
// named here so the dry run (vigil plugin try) says what serve would do.
const (
	DefaultEvery    = 30 * time.Second
	DefaultDeadline = 15 * time.Minute
)

// Config configures a Scheduler. Zero fields take the defaults.
type Config struct {
	Metrics Metrics
	Store   Store
	// Plugins are the kinds the scheduler serves (a *kind.Registry).
	Plugins Kinds
	Deliver Deliverer
	// Recipients, when set, makes Register create an unknown recipient and
	// refuse one that is not running.
	Recipients Recipients
	Clock      clock.Clock
	Logger     *slog.Logger
	// Workers is the fixed pool of long-lived probe workers (default 4, at
	// most 16), never scaled with the watches. No kind and no recipient
	// holds more than Workers-1 of them at once.
	Workers int
	// MaxBackoff caps how far a fault or a plugin error backs a watch
	// off (default 1 h; never below the watch's own cadence).
	MaxBackoff time.Duration
	// MinEvery is the shortest re-check interval (default 1 s).
	MinEvery time.Duration
	// DefaultEvery applies when neither the watch nor the plugin names one
	// (default 30 s).
	DefaultEvery time.Duration
	// DefaultDeadline is the open-ended default (default 15 min).
	DefaultDeadline time.Duration
	// MaxDeadline bounds every deadline (default 7 days).
	MaxDeadline time.Duration
	// Retention keeps settled rows this long (default 7 days).
	Retention time.Duration
	// OverdueRate is how many overdue watches a second Prime lets come
	// due after a restart, the pool's assumed capacity (default 1,000 per
	// worker): up to that many are spread over one second, more over
	// proportionally longer.
	OverdueRate int
	// Jitter spreads recovered watches without a next check across their
	// interval; tests seed it. Default: a randomly seeded source.
	Jitter *mrand.Rand
	// IDs is the randomness of new watch ids (default crypto/rand).
	IDs io.Reader
	// MaxPending bounds a recipient's pending watches, for the
	// registrations that ask (Registration.Bounded): checked in the
	// transaction that writes the row, with Recipients. Zero: none.
	MaxPending int
	// MaxWaiters bounds the requests waiting on a watch's change at once
	// (WaitChange; default watchwait.DefaultLimit).
	MaxWaiters int
	// Ownership, on a cluster, is which partitions this scheduler
	// probes; nil owns every watch.
	Ownership Ownership
	// OnChange, when set, is told of each change the scheduler makes to
	// a watch, after its own waiters are woken (on a cluster the core
	// tells the other nodes, whose waiters Notify wakes). It must not
	// block.
	OnChange func(store.ID)
	// Horizon is how far ahead of now the window of watches held in
	// memory reaches (default 15 min); a watch due later is in the
	// store's due index only. Lead is how long before the window's edge
	// the next slice is read (default a third of Horizon). WindowMax
	// bounds the watches one read of the window takes (default 100,000).
	Horizon   time.Duration
	Lead      time.Duration
	WindowMax int
	// OwnerSeen, on a cluster, is what the owner of a watch this
	// scheduler does not hold has seen of its probes (bounded; false
	// without an answer): a cancel made here keeps the owner's count.
	OwnerSeen func(ctx context.Context, id store.ID) (Seen, bool)
}

func (c Config) withDefaults() Config {
	c.Clock = clock.Or(c.Clock)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Metrics == nil {
		c.Metrics = nopMetrics{}
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	c.Workers = min(c.Workers, MaxWorkers)
	if c.MinEvery <= 0 {
		c.MinEvery = time.Second
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = time.Hour
	}
	if c.DefaultEvery <= 0 {
		c.DefaultEvery = DefaultEvery
	}
	if c.DefaultDeadline <= 0 {
		c.DefaultDeadline = DefaultDeadline
	}
	if c.MaxDeadline <= 0 {
		c.MaxDeadline = 7 * 24 * time.Hour
	}
	if c.Retention <= 0 {
		c.Retention = DefaultRetention
	}
	if c.OverdueRate <= 0 {
		c.OverdueRate = 1000 * c.Workers
	}
	if c.Jitter == nil {
		c.Jitter = mrand.New(mrand.NewPCG(mrand.Uint64(), mrand.Uint64()))
	}
	if c.IDs == nil {
		c.IDs = rand.Reader
	}
	if c.Horizon <= 0 {
		c.Horizon = DefaultHorizon
	}
	if c.Lead <= 0 || c.Lead >= c.Horizon {
		c.Lead = c.Horizon / 3
	}
	if c.WindowMax <= 0 {
		c.WindowMax = DefaultWindowMax
	}
	return c
}

// Scheduler owns the pending watches' schedule.
type Scheduler struct {
	cfg Config
	log *slog.Logger

	// mu guards the in-memory schedule only: the heap, the index, the
	// ready queue and what is being read. It is never held across a store
	// commit or a plugin call; the store's conditional transitions decide
	// between a cancel and a settlement.
	mu   sync.Mutex
	h    dueHeap
	byID map[store.ID]*entry
	// pokedAt is when each watch poked by an event (PokeKeys) and not
	// probed since was last poked: its probe may be answered only from a
	// read made after then (pokekeys.go). Entries leave with the probe,
	// or with the watch.
	pokedAt map[store.ID]int64
	// fallbacks is each hooked kind's fallback cadence (SetFallbacks).
	fallbacks atomic.Pointer[map[string]time.Duration]
	ready     readyQueue
	// reading is how many batches of due entries workers are reading;
	// parked, how many workers wait for work.
	reading, parked int
	// work is signalled when there is work to take, a probe ends, or the
	// loop stops. Its lock is mu.
	work *sync.Cond

	wake    chan struct{}
	running atomic.Bool
	// The window (window.go), guarded by mu: windowed once Prime has
	// read the first one; edge, the index's key through which every
	// watch was read; beyond, whether the index may hold a key after
	// it; loading, a load running. loadWake asks Run's loader for one.
	windowed, beyond, loading bool
	edge                      store.DueKey
	loadWake                  chan struct{}
	// marks counts the watches written beyond the window (markBeyond),
	// so a load knows whether one came while it read.
	marks uint64
	// diskFull is set while the store refuses the scheduler's writes
	// for a full disk, so that is logged once (storeFailed).
	diskFull atomic.Bool
	// changes wakes the waiters on a watch after each change the
	// scheduler makes to it.
	changes *watchwait.Notifier
}

// New builds a scheduler; it starts nothing. Call Prime, then Run (or
// Tick, in tests).
func New(cfg Config) (*Scheduler, error) {
	if cfg.Store == nil || cfg.Plugins == nil || cfg.Deliver == nil {
		return nil, errors.New("scheduler: Store, Plugins and Deliver are required")
	}
	cfg = cfg.withDefaults()
	s := &Scheduler{
		cfg:     cfg,
		log:     cfg.Logger.With("component", "scheduler"),
		byID:    map[store.ID]*entry{},
		pokedAt: map[store.ID]int64{},
		ready:   newReadyQueue(),
		wake:    make(chan struct{}, 1),

		loadWake: make(chan struct{}, 1),

		changes: watchwait.New(cfg.MaxWaiters),
	}
	s.work = sync.NewCond(&s.mu)
	return s, nil
}

func (s *Scheduler) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Prime prunes settled rows past the retention that an older build wrote
// without their time index (once in a store's life, on one host; the
// retention upkeep keeps the rest) and arms the first window of the
// pending watches from the store's due index (window.go): every one due
// by now + Config.Horizon, the overdue among them, at most
// Config.WindowMax; later ones are read as the window advances. Each is
// armed at its durable next check when it has one; a watch never probed
// at once (it was due when it was registered); any other at a random
// point of its own interval; never past its deadline. The overdue (due
// before now) are spread from now at Config.OverdueRate a second, oldest
// due first: within a second when fewer than that are overdue. It
// returns how many it armed.
func (s *Scheduler) Prime(ctx context.Context) (int, error) {
	now := s.cfg.Clock.Now()
	// The start-time backstop for records written without their time
	// index reads every row, message and push, once in the store's life:
	// after it, a restart reads no row to prune, and the retention upkeep
	// keeps each class by its index. On a cluster it is not run: the
	// retention upkeep (one node, under its lease) keeps each class by
	// its index, which the JetStream store always writes.
	pruned := 0
	var err error
	if s.cfg.Ownership == nil {
		if pruned, err = s.cfg.Store.PruneUnindexed(ctx, now.Add(-s.cfg.Retention)); err != nil {
			return 0, fmt.Errorf("scheduler: prune: %w", err)
		}
	}
	s.mu.Lock()
	s.h = s.h[:0]
	clear(s.byID)
	s.ready = newReadyQueue()
	s.windowed, s.beyond, s.edge = true, true, store.DueKey{}
	hold := s.holdsAny()
	s.mu.Unlock()
	// A cluster node primes before it holds any partition: its watches
	// are armed as each is gained (Gain), so nothing is read here but
	// where the window stands.
	armed := 0
	if hold {
		if armed, err = s.load(ctx, true); err != nil {
			return 0, fmt.Errorf("scheduler: load pending: %w", err)
		}
	} else {
		s.mu.Lock()
		s.edge = store.DueKey{At: now.Add(s.cfg.Horizon).UnixNano(), ID: maxID}
		s.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log.Info("primed", "armed", armed, "held", len(s.byID), "window_edge", time.Unix(0, s.edge.At).UTC(), "pruned", pruned)
	s.signal()
	return armed, nil
}

// recovered is the entry of a pending watch read back from the store, at
// its recovered due time, registered in byID but not yet in the heap. The
// caller holds mu.
func (s *Scheduler) recovered(sc store.Schedule, now int64) *entry {
	e := &entry{id: sc.ID, every: everyMillis(sc.Every)}
	e.setTries(sc.Attempts, 0)
	if !sc.Expires.IsZero() {
		e.deadline = sc.Expires.UnixNano()
	}
	e.due = s.recoveredDue(sc, e.deadline, now)
	s.byID[sc.ID] = e
	return e
}

// recoveredDue is when a recovered watch is due, before the overdue are
// spread: its durable next check; for one never probed, when it was
// registered (its id's instant); else now plus a random part of its
// interval, so a restart does not probe them all in the same instant.
// Never past its deadline.
func (s *Scheduler) recoveredDue(sc store.Schedule, deadline, now int64) int64 {
	var due int64
	switch {
	case !sc.Next.IsZero():
		due = sc.Next.UnixNano()
	case sc.Attempts == 0:
		due = sc.ID.Time().UnixNano()
	default:
		due = now + s.cfg.Jitter.Int64N(max(int64(sc.Every), 1))
	}
	if deadline != 0 && deadline < due {
		due = deadline
	}
	return due
}

// spread arms the overdue entries, oldest due first, evenly from now at
// Config.OverdueRate a second: within a second when there are fewer than
// that, over as many seconds as the rate needs when there are more; never
// all at the same instant, and never over their whole interval. The
// caller holds mu.
func (s *Scheduler) spread(overdue []*entry, now int64) {
	if len(overdue) == 0 {
		return
	}
	slices.SortFunc(overdue, func(a, b *entry) int { return cmp.Compare(a.due, b.due) })
	// Paced at the workers' capacity: a few overdue watches are all
	// probed within a few milliseconds, a million over as long as the
	// workers need, and none of them waits out its interval.
	window := time.Duration(len(overdue)) * time.Second / time.Duration(s.cfg.OverdueRate)
	step := int64(window) / int64(len(overdue))
	for i, e := range overdue {
		e.due = now + int64(i)*step
		e.index = int32(len(s.h))
		s.h = append(s.h, e)
	}
}

// Seen is what the scheduler knows of a pending watch's probes beyond its
// row, which is written only when what they see changes: the probes so
// far, and when the last one began (zero if none has since the
// scheduler took the watch, e.g. since a restart).
type Seen struct {
	Attempts  int
	LastProbe time.Time
}

// Seen looks up a pending watch it holds; false if it holds none by id.
func (s *Scheduler) Seen(id store.ID) (Seen, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byID[id]
	if e == nil {
		return Seen{}, false
	}
	out := Seen{Attempts: e.attempts()}
	if t, ok := e.lastProbe(); ok {
		out.LastProbe = t.UTC()
	}
	return out, true
}

// WaitChange returns the channel the next change the scheduler makes to
// watch id closes (its registration, a cancel, a probe's end, whether it
// rewrote the row or only counted an attempt), and release, to call once
// the waiter stops waiting. Take it before reading the watch.
// watchwait.ErrTooManyWaiters at the bound (Config.MaxWaiters).
func (s *Scheduler) WaitChange(id store.ID) (<-chan struct{}, func(), error) {
	return s.changes.Wait(id)
}

// changed wakes the waiters on watch id after a change the scheduler
// made, and tells Config.OnChange.
func (s *Scheduler) changed(id store.ID) {
	s.changes.Changed(id)
	if s.cfg.OnChange != nil {
		s.cfg.OnChange(id)
	}
}

// Notify wakes the requests waiting on watch id (WaitChange) for a change
// made elsewhere: another node's probe, registration or cancel. It does
// not tell Config.OnChange.
func (s *Scheduler) Notify(id store.ID) { s.changes.Changed(id) }

// Waiters is how many requests wait on a watch's change now.
func (s *Scheduler) Waiters() int { return s.changes.Waiters() }

// NextWake is when the next watch in the heap is due; false when the heap
// is empty, and then no timer exists. Watches already due, in the ready
// queue or being probed, are not in the heap.
func (s *Scheduler) NextWake() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.h) == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, s.h[0].due), true
}

// Pending is how many watches the scheduler holds.
func (s *Scheduler) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID)
}
