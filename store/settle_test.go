package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

func runningRecipientFor(t *testing.T, s *Badger, id, hook string) {
	t.Helper()
	r := RecipientRecord{ID: id, Status: StatusRunning, CreatedAt: t0, UpdatedAt: t0}
	if hook != "" {
		r.Webhook = &Webhook{URL: hook, Secret: "whsec_x"}
	}
	if _, _, err := s.PutRecipient(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

func firedMessage(t *testing.T, ids seqReader) Message {
	t.Helper()
	id, err := NewID(t0, ids)
	if err != nil {
		t.Fatal(err)
	}
	return Message{ID: id, Kind: "timer", Type: MessageFired, Outcome: Outcome{Result: "fired"}, At: t0}
}

func TestSettleAndMail(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	ids := newIDs()
	runningRecipientFor(t, s, "a", "https://example.org/hook")
	w := createdWatch(t, s, ids, "a", t0)
	m := firedMessage(t, ids)
	got, mailed, err := s.SettleAndMail(ctx, w.ID, Settlement{State: Fired, Outcome: &m.Outcome, SettledAt: t0, Attempts: 2}, m)
	if err != nil || got.State != Fired || got.Receipt != ReceiptDelivered || got.Attempts != 2 {
		t.Fatalf("settle: %+v %v", got, err)
	}
	if mailed.Recipient != "a" || mailed.Message == nil || mailed.Message.Seq != 1 || mailed.Message.WatchID != w.ID {
		t.Fatalf("mailed %+v", mailed)
	}
	if p := mailed.Push; p == nil || p.State != PushPending || p.Seq != 1 || p.MessageID != m.ID {
		t.Fatalf("push %+v", mailed.Push)
	}
	msgs, _ := s.ReadMailbox(ctx, "a", 0, 10)
	if len(msgs) != 1 || msgs[0].Push == nil || msgs[0].Push.State != PushPending {
		t.Fatalf("mailbox %+v", msgs)
	}
	// A second settle of the same row: nothing more is written.
	if _, _, err := s.SettleAndMail(ctx, w.ID, Settlement{State: Fired, SettledAt: t0}, m); !errors.Is(err, ErrNotPending) {
		t.Fatalf("second settle: %v", err)
	}
	if msgs, _ := s.ReadMailbox(ctx, "a", 0, 10); len(msgs) != 1 {
		t.Fatalf("mailbox after a second settle: %+v", msgs)
	}
}

// A failure between the settle and the append leaves neither: the row is
// still pending and the mailbox and the outbox are empty.
func TestSettleAndMailIsOneTransaction(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	ids := newIDs()
	runningRecipientFor(t, s, "a", "https://example.org/hook")
	w := createdWatch(t, s, ids, "a", t0)
	injected := errors.New("injected")
	s.failpoint = func(at string) error {
		if at == "settled" {
			return injected
		}
		return nil
	}
	m := firedMessage(t, ids)
	if _, _, err := s.SettleAndMail(ctx, w.ID, Settlement{State: Fired, Outcome: &m.Outcome, SettledAt: t0}, m); !errors.Is(err, injected) {
		t.Fatalf("settle: %v", err)
	}
	if got, _ := s.Get(ctx, w.ID); got.State != Pending || got.Receipt != ReceiptNone {
		t.Fatalf("row after the failure: %+v", got)
	}
	if msgs, _ := s.ReadMailbox(ctx, "a", 0, 10); len(msgs) != 0 {
		t.Fatalf("mailbox after the failure: %+v", msgs)
	}
	n := 0
	_ = s.LivePushes(ctx, func(Push) error { n++; return nil })
	if n != 0 {
		t.Fatalf("%d pushes after the failure", n)
	}
	// Without the failure it settles, and the mailbox numbers from 1.
	s.failpoint = nil
	if _, mailed, err := s.SettleAndMail(ctx, w.ID, Settlement{State: Fired, Outcome: &m.Outcome, SettledAt: t0}, m); err != nil || mailed.Message.Seq != 1 {
		t.Fatalf("settle: %+v %v", mailed, err)
	}
}

func TestSettleAndMailForARecipientNotRunning(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	ids := newIDs()
	if _, _, err := s.PutRecipient(ctx, RecipientRecord{ID: "p", Status: StatusPaused, CreatedAt: t0, UpdatedAt: t0,
		Webhook: &Webhook{URL: "https://example.org/hook", Secret: "whsec_x"}}); err != nil {
		t.Fatal(err)
	}
	for _, rid := range []string{"p", "nobody"} {
		w := createdWatch(t, s, ids, rid, t0)
		m := firedMessage(t, ids)
		got, mailed, err := s.SettleAndMail(ctx, w.ID, Settlement{State: Expired, Outcome: &m.Outcome, SettledAt: t0}, m)
		if err != nil || got.State != Undeliverable || got.Receipt != ReceiptRejected || mailed.Message != nil || mailed.Push != nil {
			t.Fatalf("%s: %+v %+v %v", rid, got, mailed, err)
		}
	}
	if msgs, _ := s.ReadMailbox(ctx, "p", 0, 10); len(msgs) != 0 {
		t.Fatalf("mailbox %+v", msgs)
	}
}

func TestCarryAndMail(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	ids := newIDs()
	runningRecipientFor(t, s, "a", "https://example.org/hook")
	w := createdWatch(t, s, ids, "a", t0)
	m := firedMessage(t, ids)
	m.Type = MessageChanged
	mailed, err := s.CarryAndMail(ctx, w.ID, []byte(`{"v":1}`), 3, "moved", &m)
	if err != nil || mailed.Message == nil || mailed.Push == nil || !mailed.Push.Notice {
		t.Fatalf("carry: %+v %v", mailed, err)
	}
	if got, _ := s.Get(ctx, w.ID); got.State != Pending || string(got.Baseline) != `{"v":1}` || got.Attempts != 3 {
		t.Fatalf("row %+v", got)
	}
	// Paused: the baseline moves, nothing is mailed.
	rec, _ := s.GetRecipient(ctx, "a")
	rec.Status = StatusPaused
	_, _, _ = s.PutRecipient(ctx, rec)
	if mailed, err := s.CarryAndMail(ctx, w.ID, []byte(`{"v":2}`), 4, "", &m); err != nil || mailed.Message != nil {
		t.Fatalf("carry while paused: %+v %v", mailed, err)
	}
	if got, _ := s.Get(ctx, w.ID); string(got.Baseline) != `{"v":2}` {
		t.Fatalf("row %+v", got)
	}
	if _, err := s.Settle(ctx, w.ID, Settlement{State: Cancelled, Receipt: ReceiptNone, SettledAt: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CarryAndMail(ctx, w.ID, []byte(`{"v":3}`), 5, "", &m); !errors.Is(err, ErrNotPending) {
		t.Fatalf("carry after cancel: %v", err)
	}
}

func TestCreateIfRunning(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	ids := newIDs()
	runningRecipientFor(t, s, "a", "")
	if err := s.CreateIfRunning(ctx, pendingWatch(t, ids, "a", t0)); err != nil {
		t.Fatal(err)
	}
	rec, _ := s.GetRecipient(ctx, "a")
	rec.Status = StatusStopped
	_, _, _ = s.PutRecipient(ctx, rec)
	err := s.CreateIfRunning(ctx, pendingWatch(t, ids, "a", t0))
	var nr *NotRunningError
	if !errors.As(err, &nr) || nr.Status != StatusStopped || nr.Recipient != "a" || !errors.Is(err, ErrNotRunning) {
		t.Fatalf("stopped: %v", err)
	}
	if err := s.CreateIfRunning(ctx, pendingWatch(t, ids, "nobody", t0)); !errors.As(err, &nr) || nr.Status != "" {
		t.Fatalf("absent: %v", err)
	}
	rows, _, _ := s.List(ctx, Filter{})
	if len(rows) != 1 {
		t.Fatalf("rows %+v", rows)
	}
}

func TestPushLifecycle(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTest(t, dir)
	ids := newIDs()
	runningRecipientFor(t, s, "a", "https://example.org/hook")
	var seqs []uint64
	for range 3 {
		w := createdWatch(t, s, ids, "a", t0)
		m := firedMessage(t, ids)
		_, mailed, err := s.SettleAndMail(ctx, w.ID, Settlement{State: Fired, Outcome: &m.Outcome, SettledAt: t0}, m)
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, mailed.Push.Seq)
	}
	// 1 is delivered, 2 is left sending, 3 stays pending.
	p, m, rec, err := s.BeginPush(ctx, "a", seqs[0], t0)
	if err != nil || p.State != PushSending || p.Attempts != 1 || m.Seq != seqs[0] || rec.Webhook.URL == "" {
		t.Fatalf("begin: %+v %+v %v", p, m, err)
	}
	if _, _, _, err := s.BeginPush(ctx, "a", seqs[0], t0); !errors.Is(err, ErrPushState) {
		t.Fatalf("begin twice: %v", err)
	}
	p.State = PushDelivered
	if err := s.FinishPush(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishPush(ctx, p); !errors.Is(err, ErrPushState) {
		t.Fatalf("finish twice: %v", err)
	}
	if _, _, _, err := s.BeginPush(ctx, "a", seqs[1], t0); err != nil {
		t.Fatal(err)
	}
	// A restart finds 2 sending and makes it unknown.
	_ = s.Close()
	s = openTest(t, dir)
	recovered, err := s.RecoverPushes(ctx, t0.Add(time.Minute))
	if err != nil || len(recovered) != 1 || recovered[0].Seq != seqs[1] || recovered[0].State != PushUnknown {
		t.Fatalf("recover: %+v %v", recovered, err)
	}
	var live []Push
	_ = s.LivePushes(ctx, func(p Push) error { live = append(live, p); return nil })
	if len(live) != 1 || live[0].Seq != seqs[2] || live[0].State != PushPending {
		t.Fatalf("live %+v", live)
	}
	msgs, _ := s.ReadMailbox(ctx, "a", 0, 10)
	want := []PushState{PushDelivered, PushUnknown, PushPending}
	for i, m := range msgs {
		if m.Push == nil || m.Push.State != want[i] {
			t.Fatalf("message %d push %+v", m.Seq, m.Push)
		}
	}
	// Pruning takes final pushes older than the cutoff, never a live one.
	n, err := s.PrunePushes(ctx, t0.Add(time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("prune: %d %v", n, err)
	}
	msgs, _ = s.ReadMailbox(ctx, "a", 0, 10)
	if msgs[0].Push != nil || msgs[1].Push != nil || msgs[2].Push == nil {
		t.Fatalf("after prune: %+v", msgs)
	}
}

func TestDisableWebhook(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	runningRecipientFor(t, s, "a", "https://example.org/hook")
	if done, err := s.DisableWebhook(ctx, "a", "https://example.org/other", "gone", t0); err != nil || done {
		t.Fatalf("another URL: %v %v", done, err)
	}
	if done, err := s.DisableWebhook(ctx, "a", "https://example.org/hook", "gone", t0); err != nil || !done {
		t.Fatalf("disable: %v %v", done, err)
	}
	rec, _ := s.GetRecipient(ctx, "a")
	if rec.Webhook.Active() || rec.Webhook.DisabledReason != "gone" || !rec.Webhook.DisabledAt.Equal(t0) {
		t.Fatalf("webhook %+v", rec.Webhook)
	}
	// A disabled webhook gets no push records.
	ids := newIDs()
	w := pendingWatch(t, ids, "a", t0)
	_ = s.Create(ctx, w)
	m := firedMessage(t, ids)
	if _, mailed, err := s.SettleAndMail(ctx, w.ID, Settlement{State: Fired, Outcome: &m.Outcome, SettledAt: t0}, m); err != nil || mailed.Message == nil || mailed.Push != nil {
		t.Fatalf("settle: %+v %v", mailed, err)
	}
}
