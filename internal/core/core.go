package core

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"

	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/internal/delivery"
	"github.com/vigilhq/vigil/internal/heartbeat"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/lifecycle"
	"github.com/vigilhq/vigil/internal/netguard"
	"github.com/vigilhq/vigil/internal/recipients"
	"github.com/vigilhq/vigil/internal/reminder"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/internal/signal"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

// Metrics is what the core's components count.
type Metrics interface {
	scheduler.Metrics
	delivery.Metrics
}

// The components the core composes fit the interfaces their consumers
// declare: checked here, where they are composed.
var (
	_ Kinds                   = (*kind.Registry)(nil)
	_ recipients.Destinations = (*netguard.Guard)(nil)
)

// Kinds is what the core's components need of the kinds: the scheduler's
// (scheduler.Kinds) and the list of them, by which recipients'
// reconciliation finds the standing ones.
type Kinds interface {
	scheduler.Kinds
	Infos() []kind.Info
}

// Config shapes a Core. OpenStore or StoreDir is required.
type Config struct {
	// OpenStore opens the storage backend the core is built over; the
	// core closes it in Close (and when New fails). Nil: the badger store
	// in StoreDir with the options Store (OpenBadger).
	OpenStore func(ctx context.Context) (*store.Store, error)
	// StoreDir is the badger store's directory; Store its options. Both
	// are unused when OpenStore is set.
	StoreDir string
	Store    badger.Options
	// Kinds the scheduler serves. Nil: a new registry, Core.Registry,
	// where the plugin runtime and the built-in kinds register, the phase
	// reminder (internal/reminder) registered in it here.
	Kinds Kinds
	// Clock (default the wall clock) and Logger (default discard) reach
	// every component.
	Clock  clock.Clock
	Logger *slog.Logger
	// Metrics, when set, makes the metrics every component counts into,
	// from the opened store (which counts the watches by state).
	Metrics func(*store.Store) Metrics
	// Workers probe due watches (the scheduler's default when zero).
	Workers int
	// Guard screens webhook destinations, for the outbox and for the
	// recipients' webhook check (default: refuse every special-purpose
	// address).
	Guard *netguard.Guard
	// Limits bound each recipient's refs and pending watches.
	Limits recipients.Limits
	// IDs is the randomness of watch ids (default crypto/rand).
	IDs io.Reader
	// Cluster, when set, makes the core a node of a JetStream cluster
	// (cluster.go): the store is natsstore (OpenStore and StoreDir are
	// unused), the scheduler probes only the partitions the node holds,
	// and Join makes the node live. Nil: one host, which owns every watch.
	Cluster *Cluster
	// Deliver, in tests, wraps the delivery the scheduler settles
	// through; it is given the store.
	Deliver func(*delivery.Delivery, *store.Store) scheduler.Deliverer
}

// Core is the built core. Its fields are the components, for the layers
// above (the API, observe) to use; Close stops and closes them.
type Core struct {
	// Store is the store Config.OpenStore opened.
	Store *store.Store
	// Registry is the kind registry the core made, nil when Config.Kinds
	// was given.
	Registry   *kind.Registry
	Kinds      Kinds
	Metrics    Metrics // nil without Config.Metrics
	Outbox     *delivery.Outbox
	Delivery   *delivery.Delivery
	Scheduler  *scheduler.Scheduler
	Recipients *recipients.Service

	log     *slog.Logger
	clock   clock.Clock
	cluster *clustered // nil on one host
	running atomic.Bool
	closed  bool
}

// New builds the core: it opens the store (Config.OpenStore) and starts
// nothing. Prime, then Run (or, in tests, drive the scheduler's Tick).
func New(ctx context.Context, cfg Config) (_ *Core, err error) {
	if cfg.OpenStore == nil && cfg.StoreDir == "" && cfg.Cluster == nil {
		return nil, errors.New("core: OpenStore or StoreDir is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Clock = clock.Or(cfg.Clock)
	c := &Core{log: cfg.Logger, clock: cfg.Clock}
	if cfg.Cluster != nil {
		cc := *cfg.Cluster
		cfg.OpenStore = func(ctx context.Context) (*store.Store, error) {
			cl, err := openCluster(ctx, cc, cfg.Logger)
			if err != nil {
				return nil, err
			}
			c.cluster = cl
			return cl.st.Store, nil
		}
	} else if cfg.OpenStore == nil {
		if cfg.Store.Logger == nil {
			cfg.Store.Logger = cfg.Logger
		}
		cfg.OpenStore = OpenBadger(cfg.StoreDir, cfg.Store)
	}
	if c.Store, err = cfg.OpenStore(ctx); err != nil {
		return nil, fmt.Errorf("opening the store: %w", err)
	}
	if c.Store == nil {
		return nil, errors.New("core: OpenStore returned no store")
	}
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()
	c.Kinds = cfg.Kinds
	if c.Kinds == nil {
		c.Registry = kind.NewRegistry()
		c.Kinds = c.Registry
		// The host's own standing kind, kept by the recipients' reconciler.
		if err = reminder.New(c.Store).Register(c.Registry); err != nil {
			return nil, fmt.Errorf("registering %s: %w", reminder.Name, err)
		}
		// The heartbeat, a standing kind the reconciler keeps per declared
		// heartbeat, woken by its pings.
		if err = heartbeat.New(c.Store).Register(c.Registry); err != nil {
			return nil, fmt.Errorf("registering %s: %w", heartbeat.Name, err)
		}
		// The signal, a wait its capability URL completes.
		if err = (signal.Kind{}).Register(c.Registry); err != nil {
			return nil, fmt.Errorf("registering %s: %w", signal.Name, err)
		}
	}
	var dm delivery.Metrics
	var sm scheduler.Metrics
	if cfg.Metrics != nil {
		c.Metrics = cfg.Metrics(c.Store)
		dm, sm = c.Metrics, c.Metrics
	}
	// On a cluster the outbox holds the push partitions its node holds
	// (cluster.go), and hears of every push through the store's feed, in
	// the order they were committed, whichever node settled them; on one
	// host it owns every push and settling hands it each one.
	ocfg := delivery.OutboxConfig{Store: c.Store, Guard: cfg.Guard, Clock: cfg.Clock, Logger: cfg.Logger, Metrics: dm}
	var enqueue delivery.Enqueuer
	if c.cluster != nil {
		ocfg.Partitions = c.cluster.own.n
	}
	if c.Outbox, err = delivery.NewOutbox(ocfg); err != nil {
		return nil, err
	}
	if c.cluster == nil {
		enqueue = c.Outbox
	}
	// On a cluster delivery takes the store with its feeds: a long poll
	// wakes on any node's appends (delivery.MailboxWaiter).
	var ds delivery.Store = c.Store
	if f, ok := c.Store.Feeds(); ok {
		ds = f
	}
	if c.Delivery, err = delivery.New(delivery.Config{Store: ds, Outbox: enqueue, Clock: cfg.Clock, Logger: cfg.Logger, Metrics: dm}); err != nil {
		return nil, err
	}
	var deliver scheduler.Deliverer = c.Delivery
	if cfg.Deliver != nil {
		deliver = cfg.Deliver(c.Delivery, c.Store)
	}
	var own scheduler.Ownership
	var onChange func(store.ID)
	var ownerSeen func(context.Context, store.ID) (scheduler.Seen, bool)
	if c.cluster != nil {
		own, onChange = c.cluster.own, c.cluster.publishChange
		ownerSeen = func(ctx context.Context, id store.ID) (scheduler.Seen, bool) {
			seen, _, ok := c.Seen(ctx, id)
			return seen, ok
		}
	}
	if c.Scheduler, err = scheduler.New(scheduler.Config{
		Store: c.Store, Plugins: c.Kinds, Deliver: deliver, Recipients: c.Store, Clock: cfg.Clock,
		Logger: cfg.Logger, Workers: cfg.Workers, Metrics: sm, IDs: cfg.IDs, Ownership: own, OnChange: onChange, OwnerSeen: ownerSeen,
		MaxPending: cfg.Limits.Pending(),
	}); err != nil {
		return nil, err
	}
	c.Recipients = recipients.New(c.Store, c.Scheduler, c.Kinds, cfg.Clock, cfg.Logger).WithLimits(cfg.Limits)
	if cfg.Guard != nil {
		// The rules delivery dials through: a guard is immutable, so the
		// outbox's and this one agree.
		c.Recipients = c.Recipients.WithDestinations(cfg.Guard)
	}
	return c, nil
}

// Prime arms the pending watches and reconciles every recipient's watches
// with its record; it returns how many watches are pending. On a cluster
// the reconciliation is a cluster-wide job instead (JobReconcile, run by
// Join), so nodes starting together do not each register the same missing
// standing watch.
func (c *Core) Prime(ctx context.Context) (int, error) {
	pending, err := c.Scheduler.Prime(ctx)
	if err != nil {
		return 0, err
	}
	if c.cluster != nil {
		return pending, nil
	}
	if err := c.Recipients.ReconcileAll(ctx); err != nil {
		return 0, fmt.Errorf("reconciling recipients: %w", err)
	}
	return pending, nil
}

// Run runs the outbox and the scheduler's loop and workers until ctx
// ends and, on a cluster, what Join set up: the node, its feeds and its
// jobs. When ctx ends the scheduler finishes its probes in flight and the
// outbox stops; only then does the node leave the cluster, so the leases
// stand while the probes settle. On a store whose tables are mapped into
// the process (badger), it also hands their resident pages back every
// TrimEvery while they are over MappedBudget (mapped.go). Run returns once all of it has stopped:
// nil, or the first error (the outbox's recovery). Run once.
func (c *Core) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("core: already running")
	}
	if c.cluster != nil {
		if run := c.cluster.takeRun(); run != nil {
			leave := lifecycle.Go(context.WithoutCancel(ctx), func(ctx context.Context) error {
				run(ctx)
				return nil
			})
			defer func() { _ = leave() }()
		}
	}
	runs := []func(context.Context) error{c.Outbox.Run, c.Scheduler.Run}
	if _, ok := c.Store.KV().(mappedTrimmer); ok {
		runs = append(runs, c.trimLoop)
	}
	return lifecycle.Group(ctx, runs...)
}

// Close releases what New and Join acquired: Join's subscriptions, if
// nothing ran them, then the store. Stop Run first (end its context and
// wait for it to return). Close is safe to call more than once.
func (c *Core) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	if c.cluster != nil {
		c.cluster.releaseUnrun()
	}
	if c.Store == nil {
		return nil
	}
	if err := c.Store.Close(); err != nil {
		return fmt.Errorf("closing the store: %w", err)
	}
	return nil
}
