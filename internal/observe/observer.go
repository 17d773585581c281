package observe

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/store"
)

// Store is what the observer needs of the store.
type Store interface {
	AppendEvent(ctx context.Context, e store.Event) (store.Event, bool, error)
	EventByKey(ctx context.Context, stream, key string) (store.Event, error)
	ReadEvents(ctx context.Context, stream string, after uint64, limit int) ([]store.Event, error)
	RouterCursor(ctx context.Context, name string) (uint64, error)
	RouteBatch(ctx context.Context, steps []store.RouteStep) ([]store.Routed, error)
	GetWork(ctx context.Context, id store.ID) (store.Work, error)
	WorkInputs(ctx context.Context, id store.ID, after int) ([]store.WorkInput, error)
	ListWork(ctx context.Context, scope string, st store.WorkState) ([]store.Work, error)
	ClaimWork(ctx context.Context, id store.ID, recipient string, now time.Time) (store.Work, error)
	// GetRecipient reads a recipient's record (a claim's claimer);
	// store.ErrNotFound if there is none.
	GetRecipient(ctx context.Context, id string) (store.RecipientRecord, error)
	CompleteWorkAs(ctx context.Context, id store.ID, now time.Time, claimedBy string) (store.Work, error)
	ConsumeWork(ctx context.Context, id store.ID, recipient string, n int) (store.Work, error)
}

// Waker wakes the watches parked on a subject: the scheduler's Poke.
type Waker interface {
	Poke(ctx context.Context, subject string) (int, error)
}

// Options configure an Observer.
type Options struct {
	Store  Store
	Waker  Waker
	Clock  clock.Clock
	Logger *slog.Logger
	// Rate and Burst bound recording per principal (default 100 items/s,
	// burst 200). A negative Rate is no limit.
	Rate  float64
	Burst int
	// RunPerMinute bounds recording per run of a principal: new items per
	// minute, which a run may also spend at once (default
	// DefaultRunPerMinute). A negative value is no limit.
	RunPerMinute int
	// IDs is the randomness of Work ids (default crypto/rand).
	IDs io.Reader
	// Principal validates reporter names in the configuration.
	Principal ValidPrincipal
	// Metrics, when set, counts records by outcome and routed items by
	// action.
	Metrics Metrics
}

// Metrics counts what the observer does. Outcomes are "recorded",
// "duplicate" or a refusal's code; actions are a store.RouteAction.
type Metrics interface {
	Record(outcome string)
	Route(action string)
}

type nopMetrics struct{}

func (nopMetrics) Record(string) {}
func (nopMetrics) Route(string)  {}

// DefaultRunPerMinute is the default per-run budget: new items per minute.
const DefaultRunPerMinute = 1000

// WorkKind is the kind of Work an observed thread becomes, and the
// built-in watch kind its agent parks on between turns.
const WorkKind = "observe.thread"

// routerCursor names the router's cursor in the store.
const routerCursor = "observe.router"

// Observer records items, routes them to Work, and serves the Work.
type Observer struct {
	o   Options
	log *slog.Logger
	cfg atomic.Pointer[view]

	budgets *budgets

	routeMu sync.Mutex // one routing pass at a time
	wake    chan struct{}
}

// New builds an Observer over cfg, which it validates.
func New(o Options, cfg Config) (*Observer, error) {
	if o.Store == nil || o.Clock == nil {
		return nil, errors.New("observe: Store and Clock are required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Rate == 0 {
		o.Rate = 100
	}
	if o.Burst <= 0 {
		o.Burst = 200
	}
	if o.RunPerMinute == 0 {
		o.RunPerMinute = DefaultRunPerMinute
	}
	var perPrincipal, perRun limit
	if o.Rate > 0 {
		perPrincipal = limit{rate: o.Rate, size: float64(o.Burst)}
	}
	if o.RunPerMinute > 0 {
		perRun = limit{rate: float64(o.RunPerMinute) / 60, size: float64(o.RunPerMinute)}
	}
	if o.Metrics == nil {
		o.Metrics = nopMetrics{}
	}
	ob := &Observer{o: o, log: o.Logger.With("component", "observe"), budgets: newBudgets(perPrincipal, perRun), wake: make(chan struct{}, 1)}
	if err := ob.SetConfig(cfg); err != nil {
		return nil, err
	}
	return ob, nil
}

// SetWaker sets what wakes a Work's parked watches (the scheduler, which
// is built after the observer because it serves the observer's kind). Call
// it before Run.
func (ob *Observer) SetWaker(w Waker) { ob.o.Waker = w }

// SetConfig validates cfg and puts it in force at once: a source it no
// longer declares stops routing immediately, even for items accepted
// before and not yet routed. On error the configuration in force stays.
func (ob *Observer) SetConfig(cfg Config) error {
	if err := cfg.Validate(ob.o.Principal); err != nil {
		return err
	}
	ob.cfg.Store(compile(cfg))
	return nil
}

// Recorded is the answer to a record.
type Recorded struct {
	Event     store.Event
	Duplicate bool
	ThreadKey string
}

// Record records r for principal in scope. The reporter is principal,
// never a field of r. It returns the event (the first one again for an
// exact repeat, with Duplicate set), or an *api.Error: observe_unavailable,
// not_a_reporter, invalid_field (source), once_conflict, rate_limited; or
// ErrUnknownScope. Only a new event spends budget: a repeat is answered
// as a duplicate however spent the budgets are. The text is stored on the
// event and never logged.
func (ob *Observer) Record(ctx context.Context, principal, scope string, r Record) (Recorded, error) {
	got, err := ob.record(ctx, principal, scope, r)
	var e *api.Error
	switch {
	case err == nil && got.Duplicate:
		ob.o.Metrics.Record("duplicate")
	case err == nil:
		ob.o.Metrics.Record("recorded")
	case errors.As(err, &e):
		ob.o.Metrics.Record(e.Code)
	case errors.Is(err, ErrUnknownScope):
		ob.o.Metrics.Record("unknown_scope")
	default:
		ob.o.Metrics.Record("error")
	}
	return got, err
}

// Recordable says whether scope has the record operation, whatever the
// record and its principal: nil, ErrUnknownScope for a scope the
// configuration does not name, or observe_unavailable for a scope with no
// observe entry (its last one removed): the operation goes with the last
// entry. The API asks it before it reads the body.
func (ob *Observer) Recordable(scope string) error {
	return ob.cfg.Load().recordable(scope)
}

func (ob *Observer) record(ctx context.Context, principal, scope string, r Record) (Recorded, error) {
	if err := r.Validate(); err != nil {
		return Recorded{}, err
	}
	v := ob.cfg.Load()
	if err := v.recordable(scope); err != nil {
		return Recorded{}, err
	}
	mine := v.reported(scope, principal)
	source := r.Source
	switch {
	case len(mine) == 0:
		return Recorded{}, &api.Error{Code: api.CodeNotAReporter, Message: fmt.Sprintf("principal %q reports no source of scope %s", principal, scope)}
	case source == "" && len(mine) > 1:
		return Recorded{}, &api.Error{Code: api.CodeInvalidField, Field: "source", Message: fmt.Sprintf("required: principal %q reports %d sources of scope %s (%v)", principal, len(mine), scope, mine)}
	case source == "":
		source = mine[0]
	case !slices.Contains(mine, source):
		return Recorded{}, &api.Error{Code: api.CodeNotAReporter, Field: "source", Message: fmt.Sprintf("principal %q is not a reporter of source %s in scope %s", principal, source, scope)}
	}
	now := ob.o.Clock.Now().UTC()
	payload, err := json.Marshal(ItemV1{Source: source, Item: r.Item, Revision: r.Revision, Thread: r.Thread, Text: r.Text})
	if err != nil {
		return Recorded{}, err
	}
	key := threadKey(scope, source, r.Thread)
	e := store.Event{
		Stream: Stream, Key: Once(scope, source, r.Item, r.Revision), Type: EventRecorded,
		OccurredAt: now, Payload: payload, Actor: principal, Run: r.Run, Address: key,
	}
	ref, ok := ob.budgets.take(principal, r.Run, now)
	if !ok {
		// Over budget: a repeat is still answered, from a read alone.
		return ob.repeat(ctx, e, r, source, principal, ref)
	}
	got, dup, err := ob.o.Store.AppendEvent(ctx, e)
	if dup || err != nil {
		ob.budgets.refund(principal, r.Run, now) // nothing was added
	}
	if errors.Is(err, store.ErrEventConflict) {
		return Recorded{}, onceConflict(r, source)
	}
	if err != nil {
		return Recorded{}, fmt.Errorf("observe: record: %w", err)
	}
	if !dup {
		ob.signal()
	}
	return Recorded{Event: got, Duplicate: dup, ThreadKey: key}, nil
}

// repeat answers a record over budget: the first event again when it is
// an exact repeat of one (the store's rule: the same type and payload),
// once_conflict when its identity names another, and rate_limited when it
// is new.
func (ob *Observer) repeat(ctx context.Context, e store.Event, r Record, source, principal string, ref refusal) (Recorded, error) {
	prev, err := ob.o.Store.EventByKey(ctx, e.Stream, e.Key)
	switch {
	case err == nil && prev.Type == e.Type && bytes.Equal(prev.Payload, e.Payload):
		return Recorded{Event: prev, Duplicate: true, ThreadKey: e.Address}, nil
	case err == nil:
		return Recorded{}, onceConflict(r, source)
	case !errors.Is(err, store.ErrNotFound):
		return Recorded{}, fmt.Errorf("observe: record: %w", err)
	}
	msg := fmt.Sprintf("principal %q is over its recording rate; retry in %s", principal, ref.wait.Round(time.Millisecond))
	if ref.run {
		run := "the unnamed run"
		if r.Run != "" {
			run = fmt.Sprintf("run %q", r.Run)
		}
		msg = fmt.Sprintf("%s of principal %q is over its budget of %d new items per minute; retry in %s", run, principal, ob.o.RunPerMinute, ref.wait.Round(time.Millisecond))
	}
	return Recorded{}, &api.Error{Code: api.CodeRateLimited, Message: msg, RetryAfter: ref.wait}
}

func onceConflict(r Record, source string) error {
	return &api.Error{Code: api.CodeOnceConflict, Message: fmt.Sprintf("item %q revision %q of source %s was recorded with another thread or text; an edit is a new revision", r.Item, r.Revision, source)}
}

// Wake makes the router route again, as a Record here does: on a cluster
// the router runs on one node, and hears of items recorded on the others
// through the store (internal/core's Join).
func (ob *Observer) Wake() { ob.signal() }

func (ob *Observer) signal() {
	select {
	case ob.wake <- struct{}{}:
	default:
	}
}

// Run routes recorded items until ctx ends, then returns nil: once at
// once (items recorded before a restart), then whenever Record signals.
// It first wakes the watches of every open Work with inputs its agent has
// not been given, so a wake lost to a crash is made good.
func (ob *Observer) Run(ctx context.Context) error {
	ob.recoverWakes(ctx)
	for {
		if _, err := ob.RouteAll(ctx); err != nil && ctx.Err() == nil {
			ob.log.Error("routing observed items", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ob.wake:
		}
	}
}

func (ob *Observer) recoverWakes(ctx context.Context) {
	v := ob.cfg.Load()
	for scope := range v.reporting {
		works, err := ob.o.Store.ListWork(ctx, scope, store.WorkOpen)
		if err != nil {
			ob.log.Error("listing open work", "scope", scope, "err", err)
			continue
		}
		// Every open Work: each recipient waits from its own consumed
		// input, so no one number says that every wait on it has been
		// given its last input. A poke of a Work nobody waits on costs
		// one read of the pending-by-subject index.
		for _, w := range works {
			ob.poke(ctx, w.ID)
		}
	}
}

// RouteAll routes every recorded item after the router's cursor, in
// order, and returns how many it routed. Steps and the cursor commit
// together, a batch of items per transaction, so a crash routes nothing
// twice and skips nothing. The configuration is read once per batch: a
// source removed before a batch is read routes none of it.
func (ob *Observer) RouteAll(ctx context.Context) (int, error) {
	ob.routeMu.Lock()
	defer ob.routeMu.Unlock()
	n := 0
	for {
		cur, err := ob.o.Store.RouterCursor(ctx, routerCursor)
		if err != nil {
			return n, err
		}
		events, err := ob.o.Store.ReadEvents(ctx, Stream, cur, 256)
		if err != nil {
			return n, err
		}
		if len(events) == 0 {
			return n, nil
		}
		v := ob.cfg.Load()
		steps := make([]store.RouteStep, 0, len(events))
		for _, e := range events {
			st, err := ob.step(v, e)
			if err != nil {
				return n, err
			}
			steps = append(steps, st)
		}
		routed, err := ob.o.Store.RouteBatch(ctx, steps)
		woken := map[store.ID]bool{}
		for i, r := range routed {
			ob.o.Metrics.Route(string(r.Action))
			if r.Action == store.RouteAppended && !woken[r.Work.ID] {
				woken[r.Work.ID] = true
				ob.poke(ctx, r.Work.ID)
			}
			ob.recordSkip(ctx, events[i], r)
		}
		n += len(routed)
		if err != nil {
			return n, err
		}
	}
}

// step is the routing step of one event under the configuration v.
func (ob *Observer) step(v *view, e store.Event) (store.RouteStep, error) {
	scope, source, _, ok := splitThreadKey(e.Address)
	var item ItemV1
	if ok {
		ok = json.Unmarshal(e.Payload, &item) == nil && item.Source == source
	}
	if !ok || !v.routes(scope, source) {
		// A source removed (or never routed) after the item was
		// accepted: it starts nothing.
		return store.RouteStep{Cursor: routerCursor, Seq: e.Seq, Drop: true}, nil
	}
	id, err := store.NewID(e.OccurredAt, ob.ids())
	if err != nil {
		return store.RouteStep{}, err
	}
	return store.RouteStep{
		Cursor: routerCursor, Seq: e.Seq, ThreadKey: e.Address, OwnerKind: WorkKind,
		New: store.Work{ID: id, Scope: scope, Kind: WorkKind, Title: Title(item.Text), CreatedAt: e.OccurredAt},
		Input: store.WorkInput{
			EventSeq: e.Seq, EventKey: e.Key, Source: item.Source, Item: item.Item, Revision: item.Revision,
			Thread: item.Thread, Text: item.Text, Reporter: e.Actor, RecordedAt: e.OccurredAt,
		},
	}, nil
}

// recordSkip records, once routing e is committed, that it was skipped:
// its thread's owner takes no input.
func (ob *Observer) recordSkip(ctx context.Context, e store.Event, r store.Routed) {
	if r.Action == store.RouteSkipped {
		b, _ := json.Marshal(struct {
			EventSeq  uint64 `json:"event_seq"`
			ThreadKey string `json:"thread_key"`
		}{e.Seq, e.Address})
		if _, _, err := ob.o.Store.AppendEvent(ctx, store.Event{
			Stream: SkippedStream, Key: e.Key, Type: "observe.item.skipped", OccurredAt: ob.o.Clock.Now().UTC(), Payload: b, Address: e.Address,
		}); err != nil && !errors.Is(err, store.ErrEventConflict) {
			ob.log.Error("recording a skipped item", "seq", e.Seq, "err", err)
		}
	}
}

func (ob *Observer) poke(ctx context.Context, id store.ID) {
	if ob.o.Waker == nil {
		return
	}
	if _, err := ob.o.Waker.Poke(ctx, Subject(id)); err != nil {
		ob.log.Error("waking the watches of a work item", "work", id, "err", err)
	}
}

// Subject is what an observe.thread watch on Work id waits on.
func Subject(id store.ID) string { return "work/" + id.String() }

func (ob *Observer) ids() io.Reader {
	if ob.o.IDs != nil {
		return ob.o.IDs
	}
	return rand.Reader
}
