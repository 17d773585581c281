package overview

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/store"
)

// DefaultMaxAge is how old the counts by state may be by default.
const DefaultMaxAge = 5 * time.Second

// States counts rows by state and the pending ones by kind
// (store.Store.CountByState, CountPendingByKind), each from an index's
// keys.
type States interface {
	CountByState(ctx context.Context) (map[store.State]int, error)
	CountPendingByKind(ctx context.Context) (map[string]int, error)
}

// Counters are the metrics' in-memory counters (*metrics.Metrics).
type Counters interface {
	Kinds() []api.KindView
	LagQuantiles() (p50, p99 float64)
	ReadyDepth() int
	PushesEntered() map[string]uint64
}

// Armed is the scheduler's heap (*scheduler.Scheduler).
type Armed interface {
	Pending() int
	NextWake() (time.Time, bool)
}

// Outbox is the webhook outbox's memory (*delivery.Outbox).
type Outbox interface {
	Counts() (held, retrying int)
}

// Seqs reads a stream's last sequence number (store.Store.LastEventSeq).
type Seqs interface {
	LastEventSeq(ctx context.Context, stream string) (uint64, error)
}

// Disk is the store's data directory and its free space
// (store.Store.DiskSpace); false when it cannot be measured.
type Disk interface {
	DiskSpace() (store.DiskSpace, bool)
}

// Config is what an Overview reads. Every source but Clock and States may
// be nil: its part of the overview is then zero.
type Config struct {
	States   States
	Counters Counters
	Armed    Armed
	Outbox   Outbox
	Seqs     Seqs
	// DeadLetters is the fetch dead letters' stream name.
	DeadLetters string
	// Disk, when set, is the store's disk (the embedded store's; a
	// JetStream store has none of its own).
	Disk  Disk
	Clock clock.Clock
	// MaxAge bounds how old the counts by state and by kind may be
	// (DefaultMaxAge when zero).
	MaxAge time.Duration
}

// Overview answers the overview.
type Overview struct {
	cfg Config

	// mu guards the counts by state and by kind and when they were
	// taken; it is held across the counts, so concurrent overviews past
	// MaxAge count once.
	mu        sync.Mutex
	counts    *counts
	countedAt time.Time
}

// New builds an Overview.
func New(cfg Config) (*Overview, error) {
	if cfg.States == nil || cfg.Clock == nil {
		return nil, fmt.Errorf("overview: States and Clock are required")
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	return &Overview{cfg: cfg}, nil
}

// Overview composes the overview at the clock's now.
func (o *Overview) Overview(ctx context.Context) (api.Overview, error) {
	now := o.cfg.Clock.Now()
	counts, at, err := o.states(ctx, now)
	if err != nil {
		return api.Overview{}, err
	}
	out := api.Overview{At: now, Watches: map[string]int{}, PendingByKind: map[string]int{}, WatchesCountedAt: at,
		Kinds: []api.KindView{}, Pushes: api.PushView{Entered: map[string]uint64{}}}
	for _, s := range store.States() {
		out.Watches[string(s)] = counts.byState[s]
	}
	for k, n := range counts.pendingByKind {
		if n > 0 {
			out.PendingByKind[k] = n
		}
	}
	if c := o.cfg.Counters; c != nil {
		out.Kinds = c.Kinds()
		out.Scheduler.LagP50Seconds, out.Scheduler.LagP99Seconds = c.LagQuantiles()
		out.Scheduler.Ready = c.ReadyDepth()
		out.Pushes.Entered = c.PushesEntered()
	}
	if a := o.cfg.Armed; a != nil {
		out.Scheduler.Armed = a.Pending()
		if t, ok := a.NextWake(); ok {
			out.Scheduler.NextWake = &t
		}
	}
	if b := o.cfg.Outbox; b != nil {
		out.Pushes.Queued, out.Pushes.Retrying = b.Counts()
	}
	if s := o.cfg.Seqs; s != nil && o.cfg.DeadLetters != "" {
		if out.DeadLetters, err = s.LastEventSeq(ctx, o.cfg.DeadLetters); err != nil {
			return api.Overview{}, fmt.Errorf("reading the dead letters' sequence: %w", err)
		}
	}
	if d := o.cfg.Disk; d != nil {
		if sp, ok := d.DiskSpace(); ok {
			out.Storage = &api.StorageView{Dir: sp.Dir, FreeBytes: sp.Free, ReserveBytes: sp.Reserve, NeededBytes: sp.Need, ReadOnly: sp.Full, MeasuredAt: sp.At}
		}
	}
	return out, nil
}

// counts are the watch counts one overview reads, taken together.
type counts struct {
	byState       map[store.State]int
	pendingByKind map[string]int
}

// states is the counts by state and by kind, counted again only when the
// last count is MaxAge old (or from a clock that went back).
func (o *Overview) states(ctx context.Context, now time.Time) (*counts, time.Time, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.counts != nil && !now.Before(o.countedAt) && now.Sub(o.countedAt) < o.cfg.MaxAge {
		return o.counts, o.countedAt, nil
	}
	byState, err := o.cfg.States.CountByState(ctx)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("counting watches by state: %w", err)
	}
	byKind, err := o.cfg.States.CountPendingByKind(ctx)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("counting pending watches by kind: %w", err)
	}
	o.counts, o.countedAt = &counts{byState: byState, pendingByKind: byKind}, now
	return o.counts, now, nil
}
