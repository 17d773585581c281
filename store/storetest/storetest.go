package storetest

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/vigilhq/vigil/store"
)

// Backend is what the suite runs against: the store's calls it drives
// (*store.Store is one, over any adapter). It is an interface so the
// suite's own tests can break one rule of a store and see it fail.
type Backend interface {
	AppendEvent(ctx context.Context, e store.Event) (out store.Event, duplicate bool, err error)
	AnswerAndMailThen(ctx context.Context, id store.ID, st store.Settlement, m store.Message, then func(store.Mailed)) (store.Watch, store.Mailed, error)
	AppendIfRunning(ctx context.Context, rid string, m store.Message) (store.Message, store.RecipientRecord, error)
	BeginPush(ctx context.Context, rid string, seq uint64, at time.Time) (store.Push, store.Message, store.RecipientRecord, error)
	CarryAndMail(ctx context.Context, id store.ID, baseline json.RawMessage, attempts int, note string, change *store.Message) (store.Mailed, error)
	CarryBaseline(ctx context.Context, id store.ID, baseline json.RawMessage, attempts int, note string) error
	ClaimWork(ctx context.Context, id store.ID, recipient string, now time.Time) (store.Work, error)
	Close() error
	CompleteWork(ctx context.Context, id store.ID, now time.Time) (store.Work, error)
	CompleteWorkAs(ctx context.Context, id store.ID, now time.Time, claimedBy string) (store.Work, error)
	ConsumeWork(ctx context.Context, id store.ID, recipient string, n int) (store.Work, error)
	CountByState(ctx context.Context) (map[store.State]int, error)
	CountPending(ctx context.Context, recipient string, upTo int) (int, error)
	CountPendingByKind(ctx context.Context) (map[string]int, error)
	Create(ctx context.Context, w store.Watch) error
	CreateIfRunning(ctx context.Context, w store.Watch, maxPending int) error
	DeleteRecipient(ctx context.Context, id string) error
	DisableWebhook(ctx context.Context, rid, url, reason string, at time.Time) (bool, error)
	EnsureRecipient(ctx context.Context, id string, now time.Time) (store.RecipientRecord, error)
	EventByKey(ctx context.Context, stream, key string) (store.Event, error)
	FinishPush(ctx context.Context, p store.Push) error
	ForEach(ctx context.Context, f store.Filter, fn func(store.Watch) error) (int, error)
	ForEachPending(ctx context.Context, fn func(store.Schedule) error) (int, error)
	Get(ctx context.Context, id store.ID) (store.Watch, error)
	GetIdem(ctx context.Context, principal, key string) (store.IdemRecord, error)
	GetRecipient(ctx context.Context, id string) (store.RecipientRecord, error)
	GetToken(ctx context.Context, hash string) (store.TokenRecord, error)
	GetWork(ctx context.Context, id store.ID) (store.Work, error)
	LastEventSeq(ctx context.Context, stream string) (uint64, error)
	List(ctx context.Context, f store.Filter) ([]store.Watch, int, error)
	ListPage(ctx context.Context, q store.Query) (store.Page, error)
	ListRecipients(ctx context.Context) ([]store.RecipientRecord, error)
	MaxValue() int
	ListWork(ctx context.Context, scope string, st store.WorkState) ([]store.Work, error)
	LivePushes(ctx context.Context, fn func(store.Push) error) error
	LivePushesOf(ctx context.Context, keep func(rid string) bool, fn func(store.Push) error) error
	Oldest(ctx context.Context, c store.Retained) (at time.Time, ok bool, err error)
	OnRetained(fn func(c store.Retained, at time.Time))
	PendingBySubject(ctx context.Context, subject string) ([]store.ID, error)
	PendingByKey(ctx context.Context, kind string, keys []string) ([]store.ID, error)
	PendingRecipients(ctx context.Context, fn func(id string) error) error
	ForEachPendingOfKind(ctx context.Context, kind string, fn func(store.Watch) error) error
	Prune(ctx context.Context, cutoff time.Time) (int, error)
	PruneEvents(ctx context.Context, stream string, cutoff time.Time) (int, error)
	PruneOldest(ctx context.Context, c store.Retained, cutoff time.Time, limit int) (int, error)
	PrunePushes(ctx context.Context, cutoff time.Time) (int, error)
	PutRecipient(ctx context.Context, r store.RecipientRecord) (prev store.RecipientRecord, existed bool, err error)
	Ping(ctx context.Context, id, name string, at time.Time, failed bool, note string) (store.RecipientRecord, error)
	ReadEvents(ctx context.Context, stream string, after uint64, limit int) ([]store.Event, error)
	ReadMailbox(ctx context.Context, rid string, after uint64, limit int) ([]store.Message, error)
	RecordProbe(ctx context.Context, id store.ID, p store.Probe) error
	RecoverPushes(ctx context.Context, at time.Time) ([]store.Push, error)
	RecoverPushesOf(ctx context.Context, at time.Time, keep func(rid string) bool) ([]store.Push, error)
	ReportActivity(ctx context.Context, id string, replies, toolCalls uint64, at time.Time) (store.RecipientRecord, error)
	ReportPhase(ctx context.Context, id string, p store.Phase) (store.RecipientRecord, error)
	RouteBatch(ctx context.Context, steps []store.RouteStep) ([]store.Routed, error)
	RouterCursor(ctx context.Context, name string) (uint64, error)
	ScanDue(ctx context.Context, q store.DueQuery, fn func(store.Schedule) error) (store.DueSlice, error)
	SetNextCheck(ctx context.Context, id store.ID, next time.Time) error
	SetReceipt(ctx context.Context, id store.ID, r store.Receipt) (store.Watch, error)
	SetReminder(ctx context.Context, id string, every time.Duration) (store.RecipientRecord, error)
	Settle(ctx context.Context, id store.ID, st store.Settlement) (store.Watch, error)
	SettleAndMail(ctx context.Context, id store.ID, st store.Settlement, m store.Message) (store.Watch, store.Mailed, error)
	WorkInputs(ctx context.Context, id store.ID, after int) ([]store.WorkInput, error)
}

// Options are a backend's hooks for what the interface cannot reach. A
// nil hook skips the subtests that need it, with the reason.
type Options struct {
	// HoldAside writes a row under w's id that this build cannot decode
	// (a newer release's state and fields), indexed under w's recipient
	// and w's state as the release that wrote it would have.
	HoldAside func(t *testing.T, b Backend, w store.Watch)
	// StillHeld reports whether the row HoldAside wrote for id is still
	// stored exactly as written. Needed with HoldAside.
	StillHeld func(t *testing.T, b Backend, id store.ID) bool
	// Failpoint sets fn to be called inside the transactions that write
	// several things at once, between their writes, at the named points
	// "settled" (SettleAndMail: the row settled, its mail not yet
	// written) and "carried" (CarryAndMail: the baseline written, its
	// change not yet mailed); an error from fn aborts the transaction.
	// Nil fn clears it.
	Failpoint func(b Backend, fn func(at string) error)
	// Reopen closes b and opens the same data again, as a restart would.
	Reopen func(t *testing.T, b Backend) Backend
}

// RunBackend runs the suite on backends open gives, with o's hooks:
// each subtest on a backend of its own from open,
// which must register the backend's Close with t.Cleanup. The suite may
// close a backend itself first (the Close subtest, Reopen), so that
// cleanup must accept a backend already closed.
func RunBackend(t *testing.T, open func(t *testing.T) Backend, o Options) {
	t.Helper()
	for _, g := range groups() {
		t.Run(g.name, func(t *testing.T) {
			for _, c := range g.cases {
				t.Run(c.name, func(t *testing.T) {
					c.run(&env{T: t, b: open(t), o: o, open: open, ids: newIDs(), ctx: context.Background()})
				})
			}
		})
	}
}

type testCase struct {
	name string
	run  func(e *env)
}

type group struct {
	name  string
	cases []testCase
}

func groups() []group {
	return []group{
		{"Rows", rowCases()},
		{"Due", dueCases()},
		{"Mail", mailCases()},
		{"Outbox", outboxCases()},
		{"Recipients", recipientCases()},
		{"Events", eventCases()},
		{"Work", workCases()},
		{"Retention", retentionCases()},
		{"Idempotency", idemCases()},
		{"Tokens", tokenCases()},
		{"HeldAside", heldAsideCases()},
		{"Lifetime", lifetimeCases()},
	}
}

// t0 is the suite's fixed time: the store keeps no clock of its own, so
// every time is an argument, and none is read from the wall.
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// env is one subtest's backend and helpers.
type env struct {
	*testing.T
	b    Backend
	o    Options
	open func(t *testing.T) Backend
	ids  seqReader
	ctx  context.Context
}

type seqReader struct{ r *rand.ChaCha8 }

func (s seqReader) Read(p []byte) (int, error) { return s.r.Read(p) }

func newIDs() seqReader { return seqReader{rand.NewChaCha8([32]byte{1})} }

// id is a fresh id created at at.
func (e *env) id(at time.Time) store.ID {
	e.Helper()
	id, err := store.NewID(at, e.ids)
	if err != nil {
		e.Fatal(err)
	}
	return id
}

// watch is a pending row for recipient, created at at, not yet written.
func (e *env) watch(recipient string, at time.Time) store.Watch {
	e.Helper()
	exp := at.Add(15 * time.Minute)
	return store.Watch{
		ID: e.id(at), Kind: "timer", Params: json.RawMessage(`{"at":"2026-11-30T13:00:00Z"}`),
		Recipient: store.Recipient{ID: recipient}, State: store.Pending, Receipt: store.ReceiptNone,
		Every: store.Duration(time.Minute), CreatedAt: at, ExpiresAt: &exp,
	}
}

// created writes a pending row for recipient at at and returns it.
func (e *env) created(recipient string, at time.Time) store.Watch {
	e.Helper()
	w := e.watch(recipient, at)
	if err := e.b.Create(e.ctx, w); err != nil {
		e.Fatal(err)
	}
	return w
}

// running writes a running recipient id, with a webhook when hook is set.
func (e *env) running(id, hook string) {
	e.Helper()
	r := store.RecipientRecord{ID: id, Status: store.StatusRunning, CreatedAt: t0, UpdatedAt: t0}
	if hook != "" {
		r.Webhook = &store.Webhook{URL: hook, Secret: "whsec_x"}
	}
	if _, _, err := e.b.PutRecipient(e.ctx, r); err != nil {
		e.Fatal(err)
	}
}

// setStatus moves recipient id to status.
func (e *env) setStatus(id string, status store.RecipientStatus) {
	e.Helper()
	rec, err := e.b.GetRecipient(e.ctx, id)
	if err != nil {
		e.Fatal(err)
	}
	rec.Status = status
	if _, _, err := e.b.PutRecipient(e.ctx, rec); err != nil {
		e.Fatal(err)
	}
}

// fired is a fired message, at t0.
func (e *env) fired() store.Message {
	e.Helper()
	return store.Message{ID: e.id(t0), Kind: "timer", Type: store.MessageFired, Outcome: store.Outcome{Result: "fired"}, At: t0}
}

// settleMailed creates a row for recipient and settles it fired at at
// through SettleAndMail, its message dated at.
func (e *env) settleMailed(recipient string, at time.Time) (store.Watch, store.Mailed) {
	e.Helper()
	w := e.created(recipient, at)
	m := e.fired()
	m.At = at
	got, mailed, err := e.b.SettleAndMail(e.ctx, w.ID, store.Settlement{State: store.Fired, Outcome: &m.Outcome, SettledAt: at}, m)
	if err != nil {
		e.Fatal(err)
	}
	return got, mailed
}

func (e *env) mailbox(rid string) []store.Message {
	e.Helper()
	msgs, err := e.b.ReadMailbox(e.ctx, rid, 0, 1000)
	if err != nil {
		e.Fatal(err)
	}
	return msgs
}

func (e *env) live() []store.Push {
	e.Helper()
	var out []store.Push
	if err := e.b.LivePushes(e.ctx, func(p store.Push) error { out = append(out, p); return nil }); err != nil {
		e.Fatal(err)
	}
	return out
}

func (e *env) schedules() map[store.ID]store.Schedule {
	e.Helper()
	got := map[store.ID]store.Schedule{}
	if _, err := e.b.ForEachPending(e.ctx, func(sc store.Schedule) error { got[sc.ID] = sc; return nil }); err != nil {
		e.Fatal(err)
	}
	return got
}

func (e *env) list(f store.Filter) []store.Watch {
	e.Helper()
	ws, _, err := e.b.List(e.ctx, f)
	if err != nil {
		e.Fatal(err)
	}
	return ws
}

// reopen restarts the backend through Options.Reopen, or skips.
func (e *env) reopen() {
	e.Helper()
	if e.o.Reopen == nil {
		e.Skip("the backend gives no Reopen hook")
	}
	e.b = e.o.Reopen(e.T, e.b)
}
