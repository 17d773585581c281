package delivery

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/store"
)

// Store is what delivery needs of the store.
type Store interface {
	SettleAndMail(ctx context.Context, id store.ID, st store.Settlement, m store.Message) (store.Watch, store.Mailed, error)
	CarryAndMail(ctx context.Context, id store.ID, baseline json.RawMessage, attempts int, note string, change *store.Message) (store.Mailed, error)
	ReadMailbox(ctx context.Context, rid string, after uint64, limit int) ([]store.Message, error)
	GetRecipient(ctx context.Context, id string) (store.RecipientRecord, error)
}

// Metrics counts deliveries by receipt and channel (mailbox), and each
// push as it enters a state.
type Metrics interface {
	Delivery(receipt store.Receipt, channel string)
	Push(state store.PushState)
}

type nopMetrics struct{}

func (nopMetrics) Delivery(store.Receipt, string) {}
func (nopMetrics) Push(store.PushState)           {}

// Enqueuer takes a push its message's transaction wrote (the Outbox).
type Enqueuer interface {
	Enqueue(p store.Push)
}

// Config configures a Delivery. Zero fields take the defaults.
type Config struct {
	Store   Store
	Metrics Metrics
	// Outbox is told of each push written, to send it. Nil: the pushes
	// wait in the store for an outbox that starts later.
	Outbox Enqueuer
	Clock  clock.Clock
	Logger *slog.Logger
	// IDs is the randomness of message ids (default crypto/rand).
	IDs io.Reader
}

// Delivery writes a watch's outcome to its recipient's mailbox (and its
// push to the outbox) in the transaction that settles the watch, and
// serves mailbox reads.
type Delivery struct {
	cfg Config
	log *slog.Logger
	hub *hub
	// mailMu is held across each mail-writing store call and the enqueue
	// of the push it wrote, so the outbox learns of a recipient's pushes in
	// mailbox order, when the store is not an OrderedMailer (which keeps
	// that order itself without holding a lock across its syncs).
	mailMu sync.Mutex
}

// OrderedMailer is the optional side of a Store that calls back, in
// mailbox order, once a mail-writing commit is durable (badger's
// SettleAndMailThen): concurrent settlements then share the store's syncs
// instead of queueing on mailMu for one each. A Store without it is
// served in the same order, one mail-writing commit at a time.
type OrderedMailer interface {
	SettleAndMailThen(ctx context.Context, id store.ID, st store.Settlement, m store.Message, then func(store.Mailed)) (store.Watch, store.Mailed, error)
	CarryAndMailThen(ctx context.Context, id store.ID, baseline json.RawMessage, attempts int, note string, change *store.Message, then func(store.Mailed)) (store.Mailed, error)
}

// New builds a Delivery.
func New(cfg Config) (*Delivery, error) {
	if cfg.Store == nil {
		return nil, errors.New("delivery: Store is required")
	}
	cfg.Clock = clock.Or(cfg.Clock)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.IDs == nil {
		cfg.IDs = rand.Reader
	}
	if cfg.Metrics == nil {
		cfg.Metrics = nopMetrics{}
	}
	return &Delivery{cfg: cfg, log: cfg.Logger.With("component", "delivery"), hub: newHub()}, nil
}

// Settle settles a pending watch and mails its outcome in one store
// transaction (store.SettleAndMail): for a running recipient the message
// lands in its mailbox, the receipt is delivered and the push, if it has a
// webhook, is handed to the outbox; a recipient that is not running
// settles the watch undeliverable. m's ID and At are set here: At is when
// the message is written. store.ErrNotPending if the watch is no longer
// pending; then nothing was written.
func (d *Delivery) Settle(ctx context.Context, id store.ID, st store.Settlement, m store.Message) (store.Watch, error) {
	now := d.cfg.Clock.Now().UTC()
	mid, err := store.NewID(now, d.cfg.IDs)
	if err != nil {
		return store.Watch{}, fmt.Errorf("delivery: message id: %w", err)
	}
	m.ID, m.At = mid, now
	if om, ok := d.cfg.Store.(OrderedMailer); ok {
		w, _, err := om.SettleAndMailThen(ctx, id, st, m, d.mailed)
		return w, err
	}
	d.mailMu.Lock()
	defer d.mailMu.Unlock()
	w, mailed, err := d.cfg.Store.SettleAndMail(ctx, id, st, m)
	if err != nil {
		return w, err
	}
	d.mailed(mailed)
	return w, nil
}

// Answerer is a store that settles and mails an outcome given from
// outside on any node (store.Store.AnswerAndMailThen).
type Answerer interface {
	AnswerAndMailThen(ctx context.Context, id store.ID, st store.Settlement, m store.Message, then func(store.Mailed)) (store.Watch, store.Mailed, error)
}

// Answer is Settle for an outcome given from outside (a signal's
// answer), on whichever node it arrives (store.AnswerAndMailThen: not
// fenced on the watch's owner). A store that cannot answer so settles
// as Settle does.
func (d *Delivery) Answer(ctx context.Context, id store.ID, st store.Settlement, m store.Message) (store.Watch, error) {
	an, ok := d.cfg.Store.(Answerer)
	if !ok {
		return d.Settle(ctx, id, st, m)
	}
	now := d.cfg.Clock.Now().UTC()
	mid, err := store.NewID(now, d.cfg.IDs)
	if err != nil {
		return store.Watch{}, fmt.Errorf("delivery: message id: %w", err)
	}
	m.ID, m.At = mid, now
	w, _, err := an.AnswerAndMailThen(ctx, id, st, m, d.mailed)
	return w, err
}

// Carry records a watch's new baseline and, when change is not nil, mails
// the change, in one store transaction (store.CarryAndMail). The change is
// mailed only to a running recipient, and its push is a notice: the outbox
// re-reads the recipient's status just before sending it and never sends
// it to (or revives) one that stopped. It reports whether the change was
// mailed. store.ErrNotPending if the watch is no longer pending; then
// nothing was written or mailed.
func (d *Delivery) Carry(ctx context.Context, id store.ID, baseline json.RawMessage, attempts int, note string, change *store.Message) (bool, error) {
	if change != nil {
		now := d.cfg.Clock.Now().UTC()
		mid, err := store.NewID(now, d.cfg.IDs)
		if err != nil {
			return false, fmt.Errorf("delivery: message id: %w", err)
		}
		m := *change
		m.ID, m.At = mid, now
		change = &m
	}
	if om, ok := d.cfg.Store.(OrderedMailer); ok {
		mailed, err := om.CarryAndMailThen(ctx, id, baseline, attempts, note, change, func(m store.Mailed) {
			if change != nil {
				d.mailed(m)
			}
		})
		return err == nil && change != nil && mailed.Message != nil, err
	}
	d.mailMu.Lock()
	defer d.mailMu.Unlock()
	mailed, err := d.cfg.Store.CarryAndMail(ctx, id, baseline, attempts, note, change)
	if err != nil {
		return false, err
	}
	if change == nil {
		return false, nil
	}
	d.mailed(mailed)
	return mailed.Message != nil, nil
}

// mailed wakes the recipient's readers and hands the push to the outbox;
// the caller holds mailMu, or it is an OrderedMailer's then.
func (d *Delivery) mailed(m store.Mailed) {
	if m.Message == nil {
		d.cfg.Metrics.Delivery(store.ReceiptRejected, "mailbox")
		return
	}
	d.cfg.Metrics.Delivery(store.ReceiptDelivered, "mailbox")
	d.hub.wake(m.Recipient)
	if m.Push == nil {
		return
	}
	d.cfg.Metrics.Push(store.PushPending)
	if d.cfg.Outbox != nil {
		d.cfg.Outbox.Enqueue(*m.Push)
	}
}

// MaxWait bounds a long poll.
const MaxWait = 60 * time.Second

// ErrUnknownRecipient: reading the mailbox of a recipient that does not
// exist.
var ErrUnknownRecipient = errors.New("delivery: no such recipient")

// Read returns up to limit messages after the cursor. With wait > 0 and
// nothing to read it blocks until a message lands or wait (at most
// MaxWait) passes, whichever is first, and then returns what there is.
func (d *Delivery) Read(ctx context.Context, rid string, after uint64, limit int, wait time.Duration) ([]store.Message, error) {
	if _, err := d.cfg.Store.GetRecipient(ctx, rid); errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrUnknownRecipient, rid)
	} else if err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 100
	}
	wait = min(wait, MaxWait)
	var deadline <-chan struct{}
	if wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
		deadline = ctx.Done()
	}
	for {
		woken := d.hub.wait(rid)
		msgs, err := d.cfg.Store.ReadMailbox(ctx, rid, after, limit)
		if err != nil && ctx.Err() == nil {
			return nil, err
		}
		if len(msgs) > 0 || deadline == nil {
			return msgs, nil
		}
		if !d.await(ctx, rid, after, woken, deadline) {
			return nil, nil
		}
	}
}

// MailboxWaiter is a backend whose mailbox appends by other processes can
// be waited on (store/natsstore: a cluster's other nodes settle watches
// too, and this process's hub hears only of its own appends). Optional:
// without it a long poll wakes on this process's appends alone.
type MailboxWaiter interface {
	// WaitMailbox returns nil once rid's mailbox holds a message after
	// after, or ctx's error when ctx ends first.
	WaitMailbox(ctx context.Context, rid string, after uint64) error
}

// await waits for an append to rid's mailbox after after: woken (this
// process's), the backend's MailboxWaiter (any process's), or the
// deadline (false). The waiter's goroutine is stopped before it returns;
// a waiter that fails leaves the wait to the hub.
func (d *Delivery) await(ctx context.Context, rid string, after uint64, woken, deadline <-chan struct{}) bool {
	mw, ok := d.cfg.Store.(MailboxWaiter)
	if !ok {
		select {
		case <-woken:
			return true
		case <-deadline:
			return false
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	elsewhere := make(chan error, 1)
	go func() { elsewhere <- mw.WaitMailbox(wctx, rid, after) }()
	stop := func() { cancel(); <-elsewhere }
	select {
	case <-woken:
		stop()
		return true
	case <-deadline:
		stop()
		return false
	case err := <-elsewhere:
		if err == nil {
			return true
		}
		if ctx.Err() == nil {
			d.log.Warn("waiting on the mailbox through the store failed; waiting on this process's appends only", "recipient", rid, "err", err)
		}
		select {
		case <-woken:
			return true
		case <-deadline:
			return false
		}
	}
}
