package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// Mailed is what a settle or a carry wrote to the recipient's mailbox: the
// message with its Seq, and its outbox record when the recipient has an
// active webhook. Message is nil when nothing was mailed.
type Mailed struct {
	Recipient string
	Message   *Message
	Push      *Push
}

func (s *Badger) fail(at string) error {
	if s.failpoint == nil {
		return nil
	}
	return s.failpoint(at)
}

// SettleAndMail settles a pending watch and mails its outcome, in one
// transaction. For a running recipient the row takes st (receipt
// delivered: the mailbox is the durable channel), m is appended to the
// mailbox, and, when the recipient has an active webhook, an outbox record
// for the push is written beside it. For a recipient that is not running
// (or does not exist) the row settles undeliverable (receipt rejected) and
// nothing is mailed. ErrNotPending, with nothing written, if the row is no
// longer pending: a cancel that committed first wins.
//
// st.State is fired, expired or unwatchable; st.Receipt is ignored. m's
// WatchID is the row's id; its ID and At are the caller's.
func (s *Badger) SettleAndMail(ctx context.Context, id ID, st Settlement, m Message) (Watch, Mailed, error) {
	return s.SettleAndMailThen(ctx, id, st, m, nil)
}

// SettleAndMailThen is SettleAndMail that, when it succeeds and then is
// not nil, calls then with what it mailed before returning: once the
// commit is durable, and after the then of every earlier SettleAndMailThen
// and CarryAndMailThen commit. Concurrent callers so learn of their mail in
// mailbox order, holding no lock across the sync they share.
func (s *Badger) SettleAndMailThen(ctx context.Context, id ID, st Settlement, m Message, then func(Mailed)) (Watch, Mailed, error) {
	switch st.State {
	case Fired, Expired, Unwatchable:
	default:
		return Watch{}, Mailed{}, fmt.Errorf("store: settle and mail as %q", st.State)
	}
	var out Watch
	var mailed Mailed
	err := s.updateInOrder(ctx, &s.appendMu, func(txn *badger.Txn) error {
		mailed = Mailed{}
		w, err := getRow(txn, id)
		if err != nil {
			return err
		}
		if w.State != Pending {
			return ErrNotPending
		}
		rec, rerr := runningRecipient(txn, w.Recipient.ID)
		var nr *NotRunningError
		switch {
		case errors.As(rerr, &nr):
			// The recipient had stopped being live: neither success nor
			// failure of the watch.
			st.State, st.Receipt = Undeliverable, ReceiptRejected
		case rerr != nil:
			return rerr
		default:
			st.Receipt = ReceiptDelivered
		}
		st.ApplyTo(&w)
		if err := rewriteRow(txn, Pending, w); err != nil {
			return err
		}
		out = w
		if rerr != nil {
			return nil
		}
		if err := s.fail("settled"); err != nil {
			return err
		}
		m.WatchID = id
		mailed, err = mail(txn, rec, m, false)
		return err
	}, thenMailed(then, &mailed))
	if err == nil {
		s.noteRetained(RetainedSettled, *out.SettledAt)
		s.noteMailed(mailed)
		s.pending.add(out.Recipient.ID, -1)
	}
	return out, mailed, err
}

// thenMailed is then(*mailed), or nil when then is.
func thenMailed(then func(Mailed), mailed *Mailed) func() {
	if then == nil {
		return nil
	}
	return func() { then(*mailed) }
}

// CarryAndMail records a standing (or remembering) watch's new baseline
// and, when change is not nil, mails the change, in one transaction. The
// change is mailed only to a running recipient, and its push is a notice
// (re-checked for liveness before it is sent). ErrNotPending, with nothing
// written or mailed, if the row is no longer pending.
func (s *Badger) CarryAndMail(ctx context.Context, id ID, baseline json.RawMessage, attempts int, note string, change *Message) (Mailed, error) {
	return s.CarryAndMailThen(ctx, id, baseline, attempts, note, change, nil)
}

// CarryAndMailThen is CarryAndMail with then called as SettleAndMailThen
// calls it.
func (s *Badger) CarryAndMailThen(ctx context.Context, id ID, baseline json.RawMessage, attempts int, note string, change *Message, then func(Mailed)) (Mailed, error) {
	var mailed Mailed
	err := s.updateInOrder(ctx, &s.appendMu, func(txn *badger.Txn) error {
		mailed = Mailed{}
		w, err := getRow(txn, id)
		if err != nil {
			return err
		}
		if w.State != Pending {
			return ErrNotPending
		}
		carry(&w, baseline, attempts, note)
		if err := rewriteRow(txn, Pending, w); err != nil {
			return err
		}
		if change == nil {
			return nil
		}
		rec, err := runningRecipient(txn, w.Recipient.ID)
		var nr *NotRunningError
		if errors.As(err, &nr) {
			return nil // nothing to mail to; the baseline still moves
		}
		if err != nil {
			return err
		}
		if err := s.fail("carried"); err != nil {
			return err
		}
		m := *change
		m.WatchID = id
		mailed, err = mail(txn, rec, m, true)
		return err
	}, thenMailed(then, &mailed))
	if err == nil {
		s.noteMailed(mailed)
	}
	return mailed, err
}

// noteMailed tells OnRetained's fn of a committed message.
func (s *Badger) noteMailed(m Mailed) {
	if m.Message != nil {
		s.noteRetained(RetainedMessages, m.Message.At)
	}
}

// mail appends m to rec's mailbox and, when rec has an active webhook,
// writes its pending push, inside txn. The caller holds appendMu.
func mail(txn *badger.Txn, rec RecipientRecord, m Message, notice bool) (Mailed, error) {
	m, err := appendMessage(txn, rec.ID, m)
	if err != nil {
		return Mailed{}, err
	}
	out := Mailed{Recipient: rec.ID, Message: &m}
	if !rec.Webhook.Active() {
		return out, nil
	}
	p := Push{Recipient: rec.ID, Seq: m.Seq, MessageID: m.ID, State: PushPending, Notice: notice,
		CreatedAt: m.At.UTC(), UpdatedAt: m.At.UTC()}
	if err := putPush(txn, p); err != nil {
		return Mailed{}, err
	}
	out.Push = &p
	return out, nil
}

// CreateIfRunning writes a new row only if its recipient is running, read
// in the same transaction: a pause that commits first leaves no row, and
// one that commits after finds the row and cancels it. A
// *NotRunningError (errors.Is ErrNotRunning) if the recipient is not
// running or does not exist; ErrExists if the id is taken.
func (s *Badger) CreateIfRunning(ctx context.Context, w Watch) error {
	if !w.State.Valid() || !w.Receipt.Valid() {
		return fmt.Errorf("store: create: state %q receipt %q", w.State, w.Receipt)
	}
	idem := IdemOf(ctx)
	err := s.update(ctx, func(txn *badger.Txn) error {
		if err := checkIdem(txn, idem); err != nil {
			return err
		}
		if _, err := runningRecipient(txn, w.Recipient.ID); err != nil {
			return err
		}
		if err := s.fail("checked"); err != nil {
			return err
		}
		if err := createRow(txn, w); err != nil {
			return err
		}
		return keepIdem(txn, idem, w)
	})
	if err == nil {
		s.noteIdem(idem)
	}
	if err == nil && w.State == Pending {
		s.pending.add(w.Recipient.ID, 1)
	}
	return err
}
