package delivery

import (
	"context"
	cryptorand "crypto/rand"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/hosttest"
	"github.com/vigilhq/vigil/internal/netguard"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func loopbackGuard() *netguard.Guard {
	return netguard.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
}

func newDelivery(t *testing.T, st Store, outbox Enqueuer) *Delivery {
	t.Helper()
	d, err := New(Config{Store: st, Outbox: outbox, Clock: fakeclock.At(t0), IDs: hosttest.IDs(3)})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := badger.OpenStore(t.TempDir(), badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func recipient(t *testing.T, st *store.Store, id string, status store.RecipientStatus, hook string) {
	t.Helper()
	r := store.RecipientRecord{ID: id, Status: status, CreatedAt: t0, UpdatedAt: t0}
	if hook != "" {
		r.Webhook = &store.Webhook{URL: hook, Secret: secret}
	}
	if _, _, err := st.PutRecipient(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

func fired() store.Message {
	return store.Message{Kind: "timer", Type: store.MessageFired, Outcome: store.Outcome{Result: "fired"}}
}

// pending writes a pending watch for rid and returns its id.
func pending(t *testing.T, st *store.Store, rid string) store.ID {
	t.Helper()
	return pendingKind(t, st, rid, "timer")
}

func pendingKind(t *testing.T, st *store.Store, rid, kind string) store.ID {
	t.Helper()
	id, err := store.NewID(t0, cryptorand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	exp := t0.Add(time.Hour)
	w := store.Watch{ID: id, Kind: kind, Params: []byte(`{}`), Recipient: store.Recipient{ID: rid}, State: store.Pending,
		Receipt: store.ReceiptNone, Every: store.Duration(time.Minute), CreatedAt: t0, ExpiresAt: &exp}
	if err := st.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	return id
}

// mail settles a new pending watch of rid through d: one message, if rid
// is running.
func mail(t *testing.T, d *Delivery, st *store.Store, rid string) store.Watch {
	t.Helper()
	id := pending(t, st, rid)
	m := fired()
	w, err := d.Settle(context.Background(), id, store.Settlement{State: store.Fired, Outcome: &m.Outcome, SettledAt: t0}, m)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestSettleMailsARunningRecipientOnly(t *testing.T) {
	st := openStore(t)
	d := newDelivery(t, st, nil)
	ctx := context.Background()
	recipient(t, st, "a", store.StatusRunning, "")
	recipient(t, st, "p", store.StatusPaused, "")
	if w := mail(t, d, st, "a"); w.State != store.Fired || w.Receipt != store.ReceiptDelivered {
		t.Fatalf("running: %+v", w)
	}
	if w := mail(t, d, st, "p"); w.State != store.Undeliverable || w.Receipt != store.ReceiptRejected {
		t.Fatalf("paused: %+v", w)
	}
	if w := mail(t, d, st, "nobody"); w.State != store.Undeliverable || w.Receipt != store.ReceiptRejected {
		t.Fatalf("unknown: %+v", w)
	}
	msgs, err := d.Read(ctx, "a", 0, 10, 0)
	if err != nil || len(msgs) != 1 || msgs[0].Seq != 1 || msgs[0].Type != store.MessageFired || msgs[0].ID == (store.ID{}) || !msgs[0].At.Equal(t0) {
		t.Fatalf("read: %+v %v", msgs, err)
	}
	if msgs[0].Push != nil {
		t.Fatalf("a recipient without a webhook has a push: %+v", msgs[0].Push)
	}
	if msgs, _ := d.Read(ctx, "p", 0, 10, 0); len(msgs) != 0 {
		t.Fatalf("a rejected message landed: %+v", msgs)
	}
	if _, err := d.Read(ctx, "nobody", 0, 10, 0); err == nil {
		t.Fatal("read of an unknown recipient")
	}
}

// A cancel that commits first wins: the settle writes and mails nothing.
func TestSettleLosesToACancel(t *testing.T) {
	st := openStore(t)
	box := &enqueued{}
	d := newDelivery(t, st, box)
	ctx := context.Background()
	recipient(t, st, "a", store.StatusRunning, "https://example.org/hook")
	id := pending(t, st, "a")
	if _, err := st.Settle(ctx, id, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0}); err != nil {
		t.Fatal(err)
	}
	m := fired()
	if _, err := d.Settle(ctx, id, store.Settlement{State: store.Fired, Outcome: &m.Outcome, SettledAt: t0}, m); !errors.Is(err, store.ErrNotPending) {
		t.Fatalf("settle after cancel: %v", err)
	}
	if w, _ := st.Get(ctx, id); w.State != store.Cancelled || w.Receipt != store.ReceiptNone {
		t.Fatalf("row: %+v", w)
	}
	if msgs, _ := d.Read(ctx, "a", 0, 10, 0); len(msgs) != 0 {
		t.Fatalf("a cancelled watch mailed: %+v", msgs)
	}
	if len(box.got) != 0 {
		t.Fatalf("a cancelled watch was pushed: %+v", box.got)
	}
}

// A webhook's push is written with the message and handed to the outbox.
func TestSettleHandsThePushToTheOutbox(t *testing.T) {
	st := openStore(t)
	box := &enqueued{}
	d := newDelivery(t, st, box)
	recipient(t, st, "a", store.StatusRunning, "https://example.org/hook")
	mail(t, d, st, "a")
	msgs, _ := d.Read(context.Background(), "a", 0, 10, 0)
	if len(msgs) != 1 || msgs[0].Push == nil || msgs[0].Push.State != store.PushPending {
		t.Fatalf("read: %+v", msgs)
	}
	if len(box.got) != 1 || box.got[0].Seq != 1 || box.got[0].MessageID != msgs[0].ID || box.got[0].Notice {
		t.Fatalf("enqueued %+v", box.got)
	}
}

// A standing watch's change is mailed with its baseline, as a notice.
func TestCarryMailsTheChangeAsANotice(t *testing.T) {
	st := openStore(t)
	box := &enqueued{}
	d := newDelivery(t, st, box)
	ctx := context.Background()
	recipient(t, st, "a", store.StatusRunning, "https://example.org/hook")
	id := pendingKind(t, st, "a", "ticket")
	change := &store.Message{Kind: "ticket", Type: store.MessageChanged, Outcome: store.Outcome{Result: "changed"}}
	if mailed, err := d.Carry(ctx, id, []byte(`{"t":"b"}`), 2, "moved", change); err != nil || !mailed {
		t.Fatalf("carry: %v %v", mailed, err)
	}
	if w, _ := st.Get(ctx, id); string(w.Baseline) != `{"t":"b"}` || w.State != store.Pending {
		t.Fatalf("row %+v", w)
	}
	if len(box.got) != 1 || !box.got[0].Notice {
		t.Fatalf("enqueued %+v", box.got)
	}
	// Cancelled: the change is neither recorded nor mailed.
	if _, err := st.Settle(ctx, id, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Carry(ctx, id, []byte(`{"t":"c"}`), 3, "", change); !errors.Is(err, store.ErrNotPending) {
		t.Fatalf("carry after cancel: %v", err)
	}
	if msgs, _ := d.Read(ctx, "a", 0, 10, 0); len(msgs) != 1 {
		t.Fatalf("mailbox: %+v", msgs)
	}
}

// enqueued records what the delivery hands the outbox.
type enqueued struct{ got []store.Push }

func (e *enqueued) Enqueue(p store.Push) { e.got = append(e.got, p) }

// A long-poll reader on an empty mailbox returns as soon as a message
// lands, with no polling loop: it waits on the hub.
func TestLongPollWakesOnAppend(t *testing.T) {
	st := openStore(t)
	recipient(t, st, "a", store.StatusRunning, "")
	d := newDelivery(t, st, nil)
	got := make(chan []store.Message, 1)
	go func() {
		msgs, _ := d.Read(context.Background(), "a", 0, 10, time.Minute)
		got <- msgs
	}()
	// Wait until the reader is parked on the hub.
	for {
		d.hub.mu.Lock()
		_, parked := d.hub.ch["a"]
		d.hub.mu.Unlock()
		if parked {
			break
		}
		select {
		case msgs := <-got:
			t.Fatalf("returned before any message: %+v", msgs)
		default:
		}
	}
	mail(t, d, st, "a")
	if msgs := <-got; len(msgs) != 1 || msgs[0].Seq != 1 {
		t.Fatalf("woke with %+v", msgs)
	}
}

func TestLongPollReturnsEmptyAtItsBound(t *testing.T) {
	st := openStore(t)
	recipient(t, st, "a", store.StatusRunning, "")
	d := newDelivery(t, st, nil)
	start := time.Now()
	msgs, err := d.Read(context.Background(), "a", 0, 10, 50*time.Millisecond)
	if err != nil || len(msgs) != 0 {
		t.Fatalf("%+v %v", msgs, err)
	}
	if time.Since(start) < 50*time.Millisecond {
		t.Fatal("returned before its wait")
	}
}

// Across reconnects, a reader passing its cursor sees every message once.
func TestCursorNeverMissesOrRepeats(t *testing.T) {
	st := openStore(t)
	recipient(t, st, "a", store.StatusRunning, "")
	d := newDelivery(t, st, nil)
	ctx := context.Background()
	var seen []uint64
	cursor := uint64(0)
	for i := range 10 {
		mail(t, d, st, "a")
		if i%3 == 0 {
			continue // the reader is away for a while
		}
		msgs, _ := d.Read(ctx, "a", cursor, 2, 0) // small pages
		for _, m := range msgs {
			seen = append(seen, m.Seq)
			cursor = m.Seq
		}
	}
	for {
		msgs, _ := d.Read(ctx, "a", cursor, 2, 0)
		if len(msgs) == 0 {
			break
		}
		for _, m := range msgs {
			seen = append(seen, m.Seq)
			cursor = m.Seq
		}
	}
	for i, s := range seen {
		if s != uint64(i+1) {
			t.Fatalf("seen %v", seen)
		}
	}
	if len(seen) != 10 {
		t.Fatalf("seen %v", seen)
	}
}
