package delivery

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/vigilhq/vigil/api/webhooks"
	"github.com/vigilhq/vigil/host/netguard"
	"github.com/vigilhq/vigil/store"
)

// Store is what delivery needs of the store.
type Store interface {
	AppendIfRunning(ctx context.Context, rid string, m store.Message) (store.Message, store.RecipientRecord, error)
	ReadMailbox(ctx context.Context, rid string, after uint64, limit int) ([]store.Message, error)
	GetRecipient(ctx context.Context, id string) (store.RecipientRecord, error)
}

// Clock tells the time.
type Clock interface{ Now() time.Time }

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

// Metrics counts deliveries by receipt and channel (mailbox, webhook).
type Metrics interface {
	Delivery(receipt store.Receipt, channel string)
}

type nopMetrics struct{}

func (nopMetrics) Delivery(store.Receipt, string) {}

// Config configures a Delivery. Zero fields take the defaults.
type Config struct {
	Store   Store
	Metrics Metrics
	// Guard screens webhook destinations (default: refuse every
	// special-purpose address, allow none).
	Guard *netguard.Guard
	// Timeout bounds one webhook POST (default 10 s).
	Timeout time.Duration
	Clock   Clock
	Logger  *slog.Logger
	// IDs is the randomness of message ids (default crypto/rand).
	IDs io.Reader
}

// Delivery is the mailbox and webhook delivery.
type Delivery struct {
	cfg    Config
	log    *slog.Logger
	client *http.Client
	hub    *hub
}

// New builds a Delivery.
func New(cfg Config) (*Delivery, error) {
	if cfg.Store == nil {
		return nil, errors.New("delivery: Store is required")
	}
	if cfg.Guard == nil {
		cfg.Guard = netguard.New(nil)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = wallClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.IDs == nil {
		cfg.IDs = rand.Reader
	}
	if cfg.Metrics == nil {
		cfg.Metrics = nopMetrics{}
	}
	transport := &http.Transport{
		Proxy:               nil, // a proxy would dial for us, past the guard
		DialContext:         cfg.Guard.Dialer(cfg.Timeout).DialContext,
		TLSHandshakeTimeout: cfg.Timeout,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	return &Delivery{
		cfg: cfg,
		log: cfg.Logger.With("component", "delivery"),
		client: &http.Client{
			Transport: transport,
			Timeout:   cfg.Timeout,
			// A redirect is not an acceptance: the receiver did not take
			// the message at the address it registered.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		hub: newHub(),
	}, nil
}

// Send delivers the outcome of a registered watch.
func (d *Delivery) Send(ctx context.Context, to store.Recipient, m store.Message) store.Receipt {
	return d.deliver(ctx, to, m, false)
}

// Notify delivers a message on the host's own initiative. It re-reads the
// recipient's status just before a webhook POST and sends nothing to one
// that is no longer running.
func (d *Delivery) Notify(ctx context.Context, to store.Recipient, m store.Message) store.Receipt {
	return d.deliver(ctx, to, m, true)
}

func (d *Delivery) deliver(ctx context.Context, to store.Recipient, m store.Message, notify bool) store.Receipt {
	receipt, channel := d.route(ctx, to, m, notify)
	d.cfg.Metrics.Delivery(receipt, channel)
	return receipt
}

func (d *Delivery) route(ctx context.Context, to store.Recipient, m store.Message, notify bool) (store.Receipt, string) {
	id, err := store.NewID(d.cfg.Clock.Now(), d.cfg.IDs)
	if err != nil {
		d.log.Error("message id", "err", err)
		return store.ReceiptUnknown, "mailbox"
	}
	m.ID = id
	stored, rec, err := d.cfg.Store.AppendIfRunning(ctx, to.ID, m)
	switch {
	case errors.Is(err, store.ErrNotRunning):
		return store.ReceiptRejected, "mailbox"
	case err != nil:
		// The append may or may not have committed.
		d.log.Error("mailbox append", "recipient", to.ID, "watch", m.WatchID, "err", err)
		return store.ReceiptUnknown, "mailbox"
	}
	d.hub.wake(to.ID)
	if rec.Webhook == nil || rec.Webhook.URL == "" {
		return store.ReceiptDelivered, "mailbox"
	}
	if notify {
		cur, err := d.cfg.Store.GetRecipient(ctx, to.ID)
		if err != nil || cur.Status != store.StatusRunning || cur.Webhook == nil {
			return store.ReceiptRejected, "webhook"
		}
		rec = cur
	}
	return d.post(ctx, rec, stored), "webhook"
}

// post sends one signed webhook and classifies what became of it.
func (d *Delivery) post(ctx context.Context, rec store.RecipientRecord, m store.Message) store.Receipt {
	body, err := json.Marshal(m)
	if err != nil {
		return store.ReceiptRejected
	}
	hdr, err := webhooks.Headers(rec.Webhook.Secret, m.ID.String(), d.cfg.Clock.Now(), body)
	if err != nil {
		d.log.Error("webhook signing: the recipient's secret is unusable", "recipient", rec.ID, "err", err)
		return store.ReceiptRejected
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	var wrote atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteHeaders: func() { wrote.Store(true) },
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rec.Webhook.URL, bytes.NewReader(body))
	if err != nil {
		return store.ReceiptRejected
	}
	req.Header = hdr
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "vigil-webhook/1")
	resp, err := d.client.Do(req)
	if err != nil {
		if wrote.Load() {
			d.log.Warn("webhook outcome unknown: the request went out and no answer came", "recipient", rec.ID, "message", m.ID, "err", err)
			return store.ReceiptUnknown
		}
		d.log.Warn("webhook rejected before sending", "recipient", rec.ID, "message", m.ID, "err", err)
		return store.ReceiptRejected
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return store.ReceiptDelivered
	case resp.StatusCode >= 500:
		d.log.Warn("webhook outcome unknown: server error", "recipient", rec.ID, "message", m.ID, "status", resp.StatusCode)
		return store.ReceiptUnknown
	default:
		d.log.Warn("webhook rejected", "recipient", rec.ID, "message", m.ID, "status", resp.StatusCode)
		return store.ReceiptRejected
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
		select {
		case <-woken:
		case <-deadline:
			return nil, nil
		}
	}
}
