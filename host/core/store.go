package core

import (
	"context"
	"time"

	"github.com/vigilhq/vigil/host/delivery"
	"github.com/vigilhq/vigil/host/recipients"
	"github.com/vigilhq/vigil/host/reminder"
	"github.com/vigilhq/vigil/host/scheduler"
	"github.com/vigilhq/vigil/store"
)

// Store is the storage backend the host is composed over: the union of
// what its components use of the store, each through the interface it
// declares where it uses it, and nothing more. *store.Badger (store.Open)
// is one; a second backend is another value of this type, chosen by
// Config.OpenStore, with no change to the components. A backend proves
// it keeps the semantics the components rely on by passing the backend
// conformance suite (store/storetest).
//
// The components that host builds beside the core (observe, fetch, the
// upkeep, the metrics, the API) take their part of it too; package host
// checks at compile time that Store satisfies each of theirs.
type Store interface {
	// The rows: registration, reads, the transitions, the pending
	// schedule and the start-time prune (the scheduler's).
	scheduler.Store
	// Registration only while the recipient runs (the scheduler's).
	scheduler.Recipients
	// A settlement or a baseline with its mail in one transaction, and
	// the mailbox (delivery's), the outbox's push records (the outbox's).
	delivery.Store
	delivery.OutboxStore
	// The recipients' records, their phase and activity reports and
	// their removal (the recipients service's), read by the reminder.
	recipients.Store
	recipients.PhaseStore
	recipients.Deleter
	reminder.Store

	// The event log, observe's and fetch's: an append idempotent by key
	// within its stream, a lookup by key, a read from a cursor.
	AppendEvent(ctx context.Context, e store.Event) (store.Event, bool, error)
	EventByKey(ctx context.Context, stream, key string) (store.Event, error)
	ReadEvents(ctx context.Context, stream string, after uint64, limit int) ([]store.Event, error)
	// LastEventSeq is a stream's last sequence, one key's read: how many
	// events were ever appended to it (the overview's dead letters).
	LastEventSeq(ctx context.Context, stream string) (uint64, error)
	// Work routing, observe's.
	RouterCursor(ctx context.Context, name string) (uint64, error)
	RouteBatch(ctx context.Context, steps []store.RouteStep) ([]store.Routed, error)
	GetWork(ctx context.Context, id store.ID) (store.Work, error)
	WorkInputs(ctx context.Context, id store.ID, after int) ([]store.WorkInput, error)
	ListWork(ctx context.Context, scope string, st store.WorkState) ([]store.Work, error)
	ClaimWork(ctx context.Context, id store.ID, recipient string, now time.Time) (store.Work, error)
	CompleteWorkAs(ctx context.Context, id store.ID, now time.Time, claimedBy string) (store.Work, error)
	ConsumeWork(ctx context.Context, id store.ID, recipient string, n int) (store.Work, error)
	// A listing page from a cursor, the API's.
	ListPage(ctx context.Context, q store.Query) (store.Page, error)
	// The watches by state, the metrics' collector's.
	CountByState(ctx context.Context) (map[store.State]int, error)
	// The pending watches by kind, the overview's: from an index of keys,
	// decoding no row, a held-aside row not counted.
	CountPendingByKind(ctx context.Context) (map[string]int, error)
	// Retention, the upkeep's: by class, oldest first, a bounded batch at
	// a time, never a pending row, a live push or a held-aside record;
	// OnRetained tells of each retained record committed, so the upkeep
	// sleeps while nothing is due.
	Oldest(ctx context.Context, c store.Retained) (time.Time, bool, error)
	PruneOldest(ctx context.Context, c store.Retained, cutoff time.Time, limit int) (int, error)
	OnRetained(fn func(c store.Retained, at time.Time))
	// The idempotency records, the API's: a creating request's key read
	// before its write (the write itself keeps and checks its record in
	// its own transaction, through the key its context carries).
	GetIdem(ctx context.Context, principal, key string) (store.IdemRecord, error)

	// Close flushes and releases the backend; the core calls it last.
	Close() error
}

// A backend may also be a delivery.OrderedMailer (badger is): delivery
// then lets concurrent settlements share the backend's syncs instead of
// holding one lock across each mail commit. It is optional: without it
// delivery keeps the mailbox order itself.

var (
	_ Store = (*store.Badger)(nil)
	// badger also keeps delivery's optional side: mail commits called
	// back in mailbox order, sharing their syncs.
	_ delivery.OrderedMailer = (*store.Badger)(nil)
)

// OpenBadger is the default backend: the badger store in dir.
func OpenBadger(dir string, opt store.Options) func(context.Context) (Store, error) {
	return func(context.Context) (Store, error) {
		st, err := store.Open(dir, opt)
		if err != nil {
			return nil, err
		}
		return st, nil
	}
}
