package hooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"

	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/sdk/abi"
)

// Waker maps a verified event to the partition keys of the watches it
// concerns: kind.Registry.Wake (bounded; an error wakes nothing).
type Waker interface {
	Wake(ctx context.Context, kind string, ev abi.WakeRequest) ([]string, error)
}

// Poker makes every pending watch of kind with one of keys due now,
// coalesced (a watch already due is not queued twice); it answers how
// many it woke.
type Poker interface {
	PokeKeys(ctx context.Context, kind string, keys []string) (int, error)
}

// Counter counts requests and events by source and outcome (metrics).
type Counter interface {
	Hook(source, outcome string)
}

// DefaultQueue bounds the events accepted and not yet handed to their
// kind's wake.
const DefaultQueue = 4096

// ErrBusy: the queue is full; the sender retries later (503,
// Retry-After).
var ErrBusy = errors.New("the hook queue is full")

// ReceiverConfig builds a Receiver.
type ReceiverConfig struct {
	Sources *Sources
	Wake    Waker
	Poke    Poker
	Counter Counter // nil: not counted
	Clock   clock.Clock
	Logger  *slog.Logger
	// Queue bounds the events waiting for the worker (DefaultQueue when
	// zero or negative).
	Queue int
}

// Receiver takes verified events off the request's path: Accept verifies
// and queues, answering at once; Run's one worker hands each event to
// its kind's wake and pokes the watches of the keys it answers.
type Receiver struct {
	cfg   ReceiverConfig
	queue chan Event
	// handled counts the events the worker finished (for tests and the
	// benchmark to wait on).
	handled atomic.Uint64
}

// NewReceiver builds a Receiver; it starts nothing.
func NewReceiver(cfg ReceiverConfig) *Receiver {
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultQueue
	}
	cfg.Clock = clock.Or(cfg.Clock)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Logger = cfg.Logger.With("component", "hooks")
	return &Receiver{cfg: cfg, queue: make(chan Event, cfg.Queue)}
}

// Sources is the configuration the receiver verifies against.
func (r *Receiver) Sources() *Sources { return r.cfg.Sources }

// Handled is how many events the worker has finished.
func (r *Receiver) Handled() uint64 { return r.handled.Load() }

// Accept verifies a request to the source named name and queues its
// event. It answers queued false and no error for a replayed
// webhook-id (the sender's retry of an event already taken), ErrBusy
// when the queue is full, or Verify's error; a refusal is counted and
// logged without the body.
func (r *Receiver) Accept(name string, h http.Header, body []byte) (queued bool, err error) {
	label := name
	if _, ok := r.cfg.Sources.Source(name); !ok {
		label = "unknown" // a name no one configured is no label
	}
	ev, err := r.cfg.Sources.Verify(name, h, body, r.cfg.Clock.Now())
	switch {
	case errors.Is(err, ErrReplay):
		r.count(label, "replayed")
		return false, nil
	case errors.Is(err, ErrEvent):
		r.count(label, "invalid")
		return false, err
	case err != nil:
		r.count(label, "unverified")
		r.cfg.Logger.Warn("hook refused: its signature does not verify", "source", label, "bytes", len(body), "err", err)
		return false, err
	}
	select {
	case r.queue <- ev:
		r.count(label, "accepted")
		return true, nil
	default:
		r.count(label, "busy")
		return false, fmt.Errorf("source %q: %w", name, ErrBusy)
	}
}

// Run hands each queued event to its kind's wake, one at a time, until
// ctx ends.
func (r *Receiver) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-r.queue:
			r.handle(ctx, ev)
			r.handled.Add(1)
		}
	}
}

func (r *Receiver) handle(ctx context.Context, ev Event) {
	keys, err := r.cfg.Wake.Wake(ctx, ev.Kind, ev.Wake)
	if err != nil {
		r.count(ev.Source, "fault")
		r.cfg.Logger.Warn("hook event woke nothing: the kind's wake failed", "source", ev.Source, "kind", ev.Kind, "event", ev.Wake.Event, "err", err)
		return
	}
	if len(keys) == 0 {
		r.count(ev.Source, "no_keys")
		return
	}
	n, err := r.cfg.Poke.PokeKeys(ctx, ev.Kind, keys)
	if err != nil {
		r.count(ev.Source, "fault")
		r.cfg.Logger.Warn("hook event: poking its watches failed; the cadence stays the fallback", "source", ev.Source, "kind", ev.Kind, "keys", len(keys), "err", err)
		return
	}
	r.count(ev.Source, "woken")
	r.cfg.Logger.Debug("hook event", "source", ev.Source, "kind", ev.Kind, "event", ev.Wake.Event, "keys", len(keys), "woken", n)
}

func (r *Receiver) count(source, outcome string) {
	if r.cfg.Counter != nil {
		r.cfg.Counter.Hook(source, outcome)
	}
}
