package upkeep

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/internal/fetch"
	"github.com/vigilhq/vigil/internal/observe"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/store"
)

// The retentions of the classes the upkeep alone keeps; a settled row's
// is the scheduler's (scheduler.DefaultRetention), which its start-time
// backstop prune uses too.
const (
	// MessageRetention keeps a mailbox message this long after it was
	// written.
	MessageRetention = 7 * 24 * time.Hour
	// PushRetention keeps a final outbox record this long after it became
	// final.
	PushRetention = 7 * 24 * time.Hour
	// EventRetention keeps fetch facts and dead letters this long after
	// they occurred.
	EventRetention = 7 * 24 * time.Hour
	// IdemRetention keeps an idempotency key's record this long after
	// its request came: a client retrying a write with its key is
	// answered the first answer within it (the API's contract).
	IdemRetention = 24 * time.Hour
)

// DefaultBatch is how many records one batch prunes.
const DefaultBatch = 256

// retryAfterError is how long a class waits after a store error.
const retryAfterError = time.Minute

// Store is what the upkeep needs of the store: a class's oldest record's
// time, and a bounded batch of its records older than a cutoff pruned in
// one transaction (the host's *store.Store).
type Store interface {
	Oldest(ctx context.Context, c store.Retained) (time.Time, bool, error)
	PruneOldest(ctx context.Context, c store.Retained, cutoff time.Time, limit int) (int, error)
}

// Follower is a store other processes commit to as well (a cluster's
// shared store): FollowRetained tells of each retained record of classes
// that any of them commits, so the upkeep, which runs on one node of a
// cluster, hears of records the other nodes write, which its own store's
// OnRetained never tells. *natsstore.Store is one; badger, which one
// process holds, is not, and needs none.
type Follower interface {
	FollowRetained(ctx context.Context, classes []store.Retained) (func(context.Context, func(store.Retained, time.Time)) error, error)
}

// refollowAfter is how long the upkeep waits to follow the store again
// after its feed ended (the servers ended it).
const refollowAfter = time.Second

// Class is one retained class and how long its records are kept.
type Class struct {
	Class     store.Retained
	Retention time.Duration
}

// DefaultClasses are the classes vigil serve keeps, each with its
// retention. The observe streams are not among them, and never may be.
func DefaultClasses() []Class {
	return []Class{
		{store.RetainedSettled, scheduler.DefaultRetention},
		{store.RetainedMessages, MessageRetention},
		{store.RetainedPushes, PushRetention},
		{store.RetainedEvents(fetch.StreamFacts), EventRetention},
		{store.RetainedEvents(fetch.StreamDeadLetters), EventRetention},
		{store.RetainedIdem, IdemRetention},
	}
}

// Config configures an Upkeep. Zero fields take the defaults.
type Config struct {
	Store Store
	// Classes are what is kept and for how long (default DefaultClasses).
	Classes []Class
	// Batch bounds how many records one transaction prunes (default 256).
	Batch  int
	Clock  clock.Clock
	Logger *slog.Logger
}

// ErrConfig: New was given a configuration it refuses. The error returned
// is a *ConfigError.
var ErrConfig = errors.New("upkeep: invalid configuration")

// ConfigError names the field New refuses and why.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("upkeep: %s: %s", e.Field, e.Reason) }

// Is makes errors.Is(err, ErrConfig) true.
func (e *ConfigError) Is(target error) bool { return target == ErrConfig }

// Error is a store call of one class that failed.
type Error struct {
	Class store.Retained
	Op    string // "oldest" or "prune"
	Err   error
}

func (e *Error) Error() string { return fmt.Sprintf("upkeep: %s of %s: %v", e.Op, e.Class, e.Err) }

func (e *Error) Unwrap() error { return e.Err }

// class is one class's place in the heap.
type class struct {
	Class
	// due is when the oldest record comes due; meaningful while index >= 0.
	due time.Time
	// index is the class's place in the heap, -1 while it holds nothing.
	index int
	// notes counts Notify calls, so a read that began before one never
	// forgets it.
	notes uint64
	// pruned counts what the batches took off since the class was last
	// caught up; only the loop's goroutine touches it.
	pruned int
}

// Upkeep prunes the retained classes as they come due.
type Upkeep struct {
	cfg Config
	log *slog.Logger

	// mu guards h and every class's due, index and notes; never held
	// across a store call.
	mu      sync.Mutex
	h       classHeap
	byClass map[store.Retained]*class

	wake chan struct{}
}

// New builds an Upkeep; it starts nothing. Call Run (or, in tests,
// Prime and Tick).
func New(cfg Config) (*Upkeep, error) {
	if cfg.Store == nil {
		return nil, &ConfigError{Field: "Store", Reason: "is required"}
	}
	if cfg.Classes == nil {
		cfg.Classes = DefaultClasses()
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	cfg.Clock = clock.Or(cfg.Clock)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	u := &Upkeep{
		cfg:     cfg,
		log:     cfg.Logger.With("component", "upkeep"),
		byClass: map[store.Retained]*class{},
		wake:    make(chan struct{}, 1),
	}
	for _, c := range cfg.Classes {
		if stream, ok := c.Class.Stream(); ok && (stream == observe.Stream || stream == observe.SkippedStream) {
			return nil, &ConfigError{Field: "Classes", Reason: fmt.Sprintf("%s holds observed items, the Once identities: it is never pruned", stream)}
		}
		if c.Retention <= 0 {
			return nil, &ConfigError{Field: "Classes", Reason: fmt.Sprintf("%s: retention %v, want more than zero", c.Class, c.Retention)}
		}
		if _, dup := u.byClass[c.Class]; dup {
			return nil, &ConfigError{Field: "Classes", Reason: fmt.Sprintf("%s named twice", c.Class)}
		}
		u.byClass[c.Class] = &class{Class: c, index: -1}
	}
	return u, nil
}

func (u *Upkeep) signal() {
	select {
	case u.wake <- struct{}{}:
	default:
	}
}

// Notify tells the upkeep that a record of c, ordered by at, was
// committed: if c was not due as early, it is armed for at plus its
// retention. A class the upkeep does not keep is ignored. It never blocks
// and touches no store (the store's OnRetained calls it on the writer's
// goroutine).
func (u *Upkeep) Notify(c store.Retained, at time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	cl, ok := u.byClass[c]
	if !ok {
		return
	}
	cl.notes++
	due := at.Add(cl.Retention)
	if cl.index >= 0 && !due.Before(cl.due) {
		return
	}
	u.arm(cl, due)
	u.signal()
}

// arm puts cl in the heap at due, or moves it there. The caller holds mu.
func (u *Upkeep) arm(cl *class, due time.Time) {
	cl.due = due
	if cl.index >= 0 {
		heap.Fix(&u.h, cl.index)
		return
	}
	heap.Push(&u.h, cl)
}

// retryLater arms cl for after a store error: retryAfterError on from
// now, or one retention when that is shorter. The caller holds mu.
func (u *Upkeep) retryLater(cl *class, now time.Time) {
	u.arm(cl, now.Add(min(retryAfterError, cl.Retention)))
}

// disarm takes cl out of the heap. The caller holds mu.
func (u *Upkeep) disarm(cl *class) {
	if cl.index >= 0 {
		heap.Remove(&u.h, cl.index)
	}
}

// refresh reads cl's oldest record and arms cl for when it comes due, or
// takes it out of the heap when it holds none. A Notify that lands while
// the read is in flight is kept: the earlier of the two wins.
func (u *Upkeep) refresh(ctx context.Context, cl *class, now time.Time) error {
	u.mu.Lock()
	notes := cl.notes
	u.mu.Unlock()
	at, ok, err := u.cfg.Store.Oldest(ctx, cl.Class.Class)
	u.mu.Lock()
	defer u.mu.Unlock()
	if err != nil {
		u.retryLater(cl, now)
		return &Error{Class: cl.Class.Class, Op: "oldest", Err: err}
	}
	noted := cl.notes != notes && cl.index >= 0
	switch {
	case ok && noted:
		u.arm(cl, minTime(at.Add(cl.Retention), cl.due))
	case ok:
		u.arm(cl, at.Add(cl.Retention))
	case !noted:
		u.disarm(cl)
	}
	return nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// Prime reads every class's oldest record and arms the heap. Run calls
// it; tests call it before Tick.
func (u *Upkeep) Prime(ctx context.Context) error {
	now := u.cfg.Clock.Now()
	var errs []error
	for _, c := range u.cfg.Classes {
		if err := u.refresh(ctx, u.byClass[c.Class], now); err != nil {
			errs = append(errs, err)
		}
	}
	u.signal()
	return errors.Join(errs...)
}

// NextWake is when the earliest class comes due, or false when nothing is
// retained (and no timer is armed).
func (u *Upkeep) NextWake() (time.Time, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.h) == 0 {
		return time.Time{}, false
	}
	return u.h[0].due, true
}

// Tick prunes one batch of the class that is most overdue at now, if any
// is due, then re-reads that class's oldest and re-arms it. It returns how
// many entries the batch took off the class. The loop calls it; tests
// call it with a fake clock's time.
func (u *Upkeep) Tick(ctx context.Context, now time.Time) (int, error) {
	u.mu.Lock()
	if len(u.h) == 0 || u.h[0].due.After(now) {
		u.mu.Unlock()
		return 0, nil
	}
	cl := u.h[0]
	u.mu.Unlock()
	// A record is due once it is a retention old: the store prunes what
	// is before its cutoff, so the cutoff is a nanosecond past now less the
	// retention.
	cutoff := now.Add(-cl.Retention + time.Nanosecond)
	n, err := u.cfg.Store.PruneOldest(ctx, cl.Class.Class, cutoff, u.cfg.Batch)
	if err != nil {
		u.mu.Lock()
		u.retryLater(cl, now)
		u.mu.Unlock()
		return 0, &Error{Class: cl.Class.Class, Op: "prune", Err: err}
	}
	cl.pruned += n
	if err := u.refresh(ctx, cl, now); err != nil {
		return n, err
	}
	u.mu.Lock()
	caughtUp := cl.index < 0 || cl.due.After(now)
	u.mu.Unlock()
	if caughtUp && cl.pruned > 0 {
		// One line per catch-up, not per batch.
		u.log.Info("pruned", "class", string(cl.Class.Class), "count", cl.pruned, "retention", cl.Retention.String())
		cl.pruned = 0
	}
	if n == 0 {
		// Due, and the batch could take nothing off: what is oldest is
		// held aside. Look again one retention later, not in a loop.
		u.mu.Lock()
		if cl.index >= 0 && !cl.due.After(now) {
			u.arm(cl, now.Add(cl.Retention))
			u.log.Warn("oldest records cannot be pruned by this build; looking again after one retention", "class", string(cl.Class.Class))
		}
		u.mu.Unlock()
	}
	return n, nil
}

// Run primes the heap and runs the loop until ctx ends, then returns nil.
// On a store that is a Follower it first subscribes to the retained
// records every process commits, and keeps a second goroutine reading
// them into Notify, so a class that read empty is armed by another node's
// record; Run returns once both have stopped.
func (u *Upkeep) Run(ctx context.Context) error {
	var classes []store.Retained
	for _, c := range u.cfg.Classes {
		classes = append(classes, c.Class)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	if f, follows := u.cfg.Store.(Follower); follows {
		// Subscribe before Prime reads: a record committed after the
		// read is told by the feed, one before it is in the read.
		run, err := f.FollowRetained(ctx, classes)
		if err != nil {
			u.log.Error("following the retained records of other nodes; following again after "+refollowAfter.String(), "err", err)
		}
		wg.Go(func() { u.follow(ctx, f, classes, run) })
	}
	if err := u.Prime(ctx); err != nil {
		u.log.Error("reading the oldest records", "err", err)
	}
	u.loop(ctx)
	return nil
}

// follow reads the store's feed of retained records into Notify until
// ctx ends; when the feed ends, or run is nil (subscribing failed), it
// subscribes again after refollowAfter and reads every class's oldest
// again, so a record committed meanwhile is not forgotten.
func (u *Upkeep) follow(ctx context.Context, f Follower, classes []store.Retained, run func(context.Context, func(store.Retained, time.Time)) error) {
	for {
		if run != nil {
			err := run(ctx, u.Notify)
			if ctx.Err() != nil {
				return
			}
			u.log.Error("the feed of retained records ended; following again after "+refollowAfter.String(), "err", err)
		}
		t := u.cfg.Clock.NewTimer(refollowAfter)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		var err error
		if run, err = f.FollowRetained(ctx, classes); err != nil {
			u.log.Error("following the retained records of other nodes", "err", err)
			continue
		}
		if err := u.Prime(ctx); err != nil {
			u.log.Error("reading the oldest records", "err", err)
		}
	}
}

// loop is the upkeep's one goroutine: a batch whenever a class is due,
// else one timer for the earliest, else none.
func (u *Upkeep) loop(ctx context.Context) {
	var timer clock.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for ctx.Err() == nil {
		now := u.cfg.Clock.Now()
		next, armed := u.NextWake()
		if armed && !next.After(now) {
			if _, err := u.Tick(ctx, now); err != nil && ctx.Err() == nil {
				u.log.Error("pruning", "err", err)
			}
			// Batches are separate transactions; let others run between.
			runtime.Gosched()
			continue
		}
		var fire <-chan time.Time
		if armed {
			if timer == nil {
				timer = u.cfg.Clock.NewTimer(next.Sub(now))
			} else {
				timer.Reset(next.Sub(now))
			}
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-u.wake:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// classHeap orders the classes that hold records by due.
type classHeap []*class

func (h classHeap) Len() int           { return len(h) }
func (h classHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h classHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *classHeap) Push(x any) {
	c := x.(*class)
	c.index = len(*h)
	*h = append(*h, c)
}
func (h *classHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	old[len(old)-1] = nil
	c.index = -1
	*h = old[:len(old)-1]
	return c
}

var _ heap.Interface = (*classHeap)(nil)
