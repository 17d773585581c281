package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/hosttest"

	"github.com/vigilhq/vigil/internal/delivery"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// recordingDeliverer settles and carries on the store it is given (st,
// set by the harness) and records the messages it would mail, for the
// tests of the scheduler's own rules; before, when set, runs first. What
// the store does with a settlement's mail (one transaction, a recipient
// not running) is asserted through the real delivery (newStoreHarness).
type recordingDeliverer struct {
	st rowStore
	mu sync.Mutex
	// failSettles makes that many settlements fail first, unwritten.
	failSettles int
	// full refuses every settlement as a store on a full disk does
	// (store.ErrStorageFull), unwritten.
	full bool
	// notOwner makes every settlement refused as another node's now.
	notOwner bool
	got      []store.Message
	before   func(m store.Message)
}

func (d *recordingDeliverer) Settle(ctx context.Context, id store.ID, st store.Settlement, m store.Message) (store.Watch, error) {
	d.mu.Lock()
	fail := d.failSettles > 0
	if fail {
		d.failSettles--
	}
	notOwner, full := d.notOwner, d.full
	d.mu.Unlock()
	if fail {
		return store.Watch{}, errors.New("fake: the store did not answer")
	}
	if full {
		return store.Watch{}, &store.StorageFullError{Dir: "/var/lib/vigil/store", Free: 1 << 20, Need: 2 << 20}
	}
	if notOwner {
		return store.Watch{}, fmt.Errorf("fake: %w", store.ErrNotOwner)
	}
	m.WatchID = id
	if d.before != nil {
		d.before(m)
	}
	st.Receipt = store.ReceiptDelivered
	w, err := d.st.Settle(ctx, id, st)
	if err != nil {
		return w, err
	}
	d.record(m)
	return w, nil
}

func (d *recordingDeliverer) Carry(ctx context.Context, id store.ID, baseline json.RawMessage, attempts int, note string, change *store.Message) (bool, error) {
	if err := d.st.CarryBaseline(ctx, id, baseline, attempts, note); err != nil {
		return false, err
	}
	if change == nil {
		return false, nil
	}
	m := *change
	m.WatchID = id
	if d.before != nil {
		d.before(m)
	}
	d.record(m)
	return true, nil
}

func (d *recordingDeliverer) record(m store.Message) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, m)
}

func (d *recordingDeliverer) messages() []store.Message {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]store.Message(nil), d.got...)
}

// countingStore counts the writes that reach the store; failGets makes
// that many reads of a row fail first, as a store that does not answer.
type countingStore struct {
	rowStore
	mu       sync.Mutex
	writes   int
	failGets int
	// missing makes that many reads of a row answer store.ErrNotFound.
	missing int
	// notOwner refuses every probe record as another node's now.
	notOwner bool
	// pendingReads counts the reads of the pending schedule.
	pendingReads int
	// prunes counts the calls of PruneUnindexed.
	prunes int
}

func (c *countingStore) PruneUnindexed(ctx context.Context, cutoff time.Time) (int, error) {
	c.mu.Lock()
	c.prunes++
	c.mu.Unlock()
	return c.rowStore.PruneUnindexed(ctx, cutoff)
}

func (c *countingStore) ForEachPending(ctx context.Context, fn func(store.Schedule) error) (int, error) {
	c.mu.Lock()
	c.pendingReads++
	c.mu.Unlock()
	return c.rowStore.ForEachPending(ctx, fn)
}

func (c *countingStore) ScanDue(ctx context.Context, q store.DueQuery, fn func(store.Schedule) error) (store.DueSlice, error) {
	c.mu.Lock()
	c.pendingReads++
	c.mu.Unlock()
	return c.rowStore.ScanDue(ctx, q, fn)
}

func (c *countingStore) Get(ctx context.Context, id store.ID) (store.Watch, error) {
	c.mu.Lock()
	fail, missing := c.failGets > 0, c.missing > 0 && c.failGets == 0
	if fail {
		c.failGets--
	} else if missing {
		c.missing--
	}
	c.mu.Unlock()
	switch {
	case fail:
		return store.Watch{}, errors.New("fake: the store did not answer")
	case missing:
		return store.Watch{}, store.ErrNotFound
	}
	return c.rowStore.Get(ctx, id)
}

func (c *countingStore) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes
}

func (c *countingStore) add() {
	c.mu.Lock()
	c.writes++
	c.mu.Unlock()
}

func (c *countingStore) Create(ctx context.Context, w store.Watch) error {
	c.add()
	return c.rowStore.Create(ctx, w)
}

func (c *countingStore) Settle(ctx context.Context, id store.ID, s store.Settlement) (store.Watch, error) {
	c.add()
	return c.rowStore.Settle(ctx, id, s)
}

func (c *countingStore) CarryBaseline(ctx context.Context, id store.ID, b json.RawMessage, a int, n string) error {
	c.add()
	return c.rowStore.CarryBaseline(ctx, id, b, a, n)
}

func (c *countingStore) RecordProbe(ctx context.Context, id store.ID, p store.Probe) error {
	c.mu.Lock()
	notOwner := c.notOwner
	c.mu.Unlock()
	if notOwner {
		return fmt.Errorf("fake: %w", store.ErrNotOwner)
	}
	c.add()
	return c.rowStore.RecordProbe(ctx, id, p)
}

func (c *countingStore) SetNextCheck(ctx context.Context, id store.ID, next time.Time) error {
	c.add()
	return c.rowStore.SetNextCheck(ctx, id, next)
}

// harness is a scheduler over a real store in a temp dir, with fakes for
// the plugins, the delivery and the clock; newStoreHarness's delivers
// through the real delivery component instead.
type harness struct {
	t       *testing.T
	dir     string
	store   *store.Store
	counted *countingStore
	plugins *hosttest.FakeKinds
	deliver *recordingDeliverer
	// realDelivery, set before open (newStoreHarness), makes open build
	// delivery, the real delivery the scheduler settles through (deliver
	// is then unused), and the store the scheduler's Recipients:
	// registration creates the recipient running.
	realDelivery bool
	delivery     *delivery.Delivery
	clock        *fakeclock.Clock
	s            *Scheduler
	// ownership, when set before open, is the scheduler's.
	ownership Ownership
	// onChange, when set before open, is the scheduler's OnChange.
	onChange func(store.ID)
	// logger, when set before open, is the scheduler's.
	logger *slog.Logger
	// horizon, lead and windowMax, when set before open, are the
	// scheduler's window (the defaults otherwise).
	horizon, lead time.Duration
	windowMax     int
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := newHarnessUnopened(t)
	h.open()
	return h
}

// newStoreHarness is a harness whose scheduler settles and carries
// through the real delivery component over the real badger store, the
// store's recipients with it: what a test asserts of the mail is what the
// store holds (h.mailbox), so a store that broke an ordering rule fails
// it.
func newStoreHarness(t *testing.T) *harness {
	t.Helper()
	h := newHarnessUnopened(t)
	h.realDelivery = true
	h.open()
	return h
}

func newHarnessUnopened(t *testing.T) *harness {
	t.Helper()
	return &harness{
		t:   t,
		dir: t.TempDir(),
		plugins: hosttest.NewFakeKinds(
			kind.Info{Kind: "ci", DefaultEvery: 30 * time.Second},
			kind.Info{Kind: "ticket", Standing: true, DefaultEvery: time.Minute},
			kind.Info{Kind: "no-every"},
		).OnObserve(func(abi.ObserveRequest) (kind.Observation, error) { return hosttest.Pending("not yet") }),
		deliver: &recordingDeliverer{},
		clock:   fakeclock.At(t0),
	}
}

// open (re)opens the store and builds a fresh scheduler over it: a
// restart.
func (h *harness) open() {
	h.t.Helper()
	if h.store != nil {
		_ = h.store.Close()
	}
	st, err := badger.OpenStore(h.dir, badger.Options{})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = st.Close() })
	h.store = st
	h.counted = &countingStore{rowStore: st}
	h.deliver.st = h.counted
	cfg := Config{
		Store: h.counted, Plugins: h.plugins, Deliver: h.deliver, Clock: h.clock,
		Jitter: rand.New(rand.NewPCG(1, 2)), IDs: hosttest.IDs(7),
		Ownership: h.ownership, OnChange: h.onChange, Logger: h.logger,
		Horizon: h.horizon, Lead: h.lead, WindowMax: h.windowMax,
	}
	if h.realDelivery {
		d, err := delivery.New(delivery.Config{Store: st, Clock: h.clock, IDs: hosttest.IDs(9)})
		if err != nil {
			h.t.Fatal(err)
		}
		h.delivery, cfg.Deliver, cfg.Recipients = d, d, st
	}
	s, err := New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	h.s = s
}

func (h *harness) register(kind string) store.Watch {
	h.t.Helper()
	return h.registerFor(kind, "agent-1")
}

func (h *harness) registerFor(kind, recipient string) store.Watch {
	h.t.Helper()
	w, err := h.s.Register(context.Background(), Registration{Kind: kind, Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: recipient}})
	if err != nil {
		h.t.Fatal(err)
	}
	return w
}

func (h *harness) tick(at time.Time) int {
	h.clock.Set(at)
	return h.s.Tick(context.Background(), at)
}

// mailbox is what the store's mailbox of rid holds.
func (h *harness) mailbox(rid string) []store.Message {
	h.t.Helper()
	msgs, err := h.store.ReadMailbox(context.Background(), rid, 0, 1000)
	if err != nil {
		h.t.Fatal(err)
	}
	return msgs
}

// setStatus writes rid's status straight to the store, as a pause or a
// resume commits, without the recipients service cancelling its watches:
// a settlement meets the recipient as the store has it.
func (h *harness) setStatus(rid string, status store.RecipientStatus) {
	h.t.Helper()
	ctx := context.Background()
	rec, err := h.store.GetRecipient(ctx, rid)
	if err != nil {
		h.t.Fatal(err)
	}
	rec.Status = status
	if _, _, err := h.store.PutRecipient(ctx, rec); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) row(id store.ID) store.Watch {
	h.t.Helper()
	w, err := h.store.Get(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return w
}

// rowStore is the rows' part of the store the fakes here stand in for or
// wrap: the scheduler's Store, and the baseline the fake deliverer
// carries.
type rowStore interface {
	Store
	ForEachPending(ctx context.Context, fn func(store.Schedule) error) (int, error)
	CarryBaseline(ctx context.Context, id store.ID, baseline json.RawMessage, attempts int, note string) error
}
