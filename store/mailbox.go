package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// MessageType is what a message says happened to a watch.
type MessageType string

// Message types.
const (
	MessageFired       MessageType = "fired"
	MessageExpired     MessageType = "expired"
	MessageChanged     MessageType = "changed"
	MessageUnwatchable MessageType = "unwatchable"
	// MessageReminder is a notice the host sends on its own initiative
	// (internal/reminder): a recipient still working on an old phase report is
	// asked to report again. It is never peer mail and never a watch's
	// outcome.
	MessageReminder MessageType = "reminder"
)

// Message is one entry of a recipient's mailbox. Seq and ID are assigned
// when it is appended: Seq orders a recipient's messages from 1 with no
// gaps, and ID is the message's stable id (its webhook-id).
type Message struct {
	Seq     uint64      `json:"seq"`
	ID      ID          `json:"id"`
	WatchID ID          `json:"watch_id"`
	Kind    string      `json:"kind"`
	Type    MessageType `json:"type"`
	Outcome Outcome     `json:"outcome"`
	At      time.Time   `json:"at"`
	// Push is the state of the message's webhook push, filled in by
	// ReadMailbox; nil when it has none. Never stored with the message and
	// never part of the webhook body.
	Push *Push `json:"-"`
}

// ErrNotRunning: the recipient is not running (or does not exist), so a
// message for it is rejected and a watch for it is not registered. The
// error returned is a *NotRunningError.
var ErrNotRunning = errors.New("store: recipient is not running")

// NotRunningError is a recipient that was not running when a transaction
// that needs it running read it. Status is empty when it does not exist.
type NotRunningError struct {
	Recipient string
	Status    RecipientStatus
}

func (e *NotRunningError) Error() string {
	if e.Status == "" {
		return fmt.Sprintf("store: recipient %q does not exist", e.Recipient)
	}
	return fmt.Sprintf("store: recipient %q is %s", e.Recipient, e.Status)
}

// Is makes errors.Is(err, ErrNotRunning) true.
func (e *NotRunningError) Is(target error) bool { return target == ErrNotRunning }

type storedMessage struct {
	V int `json:"v"`
	Message
}

// Mailed is what a settle or a carry wrote to the recipient's mailbox: the
// message with its Seq, and its outbox record when the recipient has an
// active webhook. Message is nil when nothing was mailed.
type Mailed struct {
	Recipient string
	Message   *Message
	Push      *Push
}

// thenMailed is then(*mailed), or nil when then is.
func thenMailed(then func(Mailed), mailed *Mailed) func() {
	if then == nil {
		return nil
	}
	return func() { then(*mailed) }
}

// runningRecipient reads a recipient that must be running, and fences
// the commit on it: a pause or a stop committed meanwhile refuses the
// commit, which runs again and sees it. A *NotRunningError otherwise
// (absent included).
func (t tx) runningRecipient(rid string) (RecipientRecord, error) {
	rec, _, err := t.getRecipient(rid)
	t.Fence(kRecipientRec(rid))
	if errors.Is(err, ErrNotFound) {
		return rec, &NotRunningError{Recipient: rid}
	}
	if err != nil {
		return rec, err
	}
	if rec.Status != StatusRunning {
		return rec, &NotRunningError{Recipient: rid, Status: rec.Status}
	}
	return rec, nil
}

// appendMessage writes m as rid's next message and returns it with its
// Seq. The sequence key is read and written, so two appends never take
// one seq and the seqs stay dense; the caller serialises on the
// recipient, so appends of one process queue instead of refusing each
// other.
func (t tx) appendMessage(rid string, m Message) (Message, error) {
	last, _, err := t.seqOf(kMailSeq(rid))
	if err != nil {
		return m, err
	}
	m.Seq = last + 1
	m.Push = nil
	m.Outcome = m.Outcome.Bounded()
	b, err := json.Marshal(storedMessage{V: rowVersion, Message: m})
	if err != nil {
		return m, err
	}
	t.Put(kMessage(rid, m.Seq), b)
	t.Put(kMessageAt(m.At, rid, m.Seq), nil)
	t.Put(kMailSeq(rid), seqBytes(m.Seq))
	return m, nil
}

// mail appends m to rec's mailbox and, when rec has an active webhook,
// writes its pending push beside it.
func (t tx) mail(rec RecipientRecord, m Message, notice bool) (Mailed, error) {
	m, err := t.appendMessage(rec.ID, m)
	if err != nil {
		return Mailed{}, err
	}
	out := Mailed{Recipient: rec.ID, Message: &m}
	if !rec.Webhook.Active() {
		return out, nil
	}
	p := Push{Recipient: rec.ID, Seq: m.Seq, MessageID: m.ID, State: PushPending, Notice: notice,
		CreatedAt: m.At.UTC(), UpdatedAt: m.At.UTC()}
	if err := t.putPush(p); err != nil {
		return Mailed{}, err
	}
	out.Push = &p
	return out, nil
}

// getMessage reads a message: ErrNotFound when absent or held aside.
func (t tx) getMessage(rid string, seq uint64) (Message, error) {
	return t.messageOf(kMessage(rid, seq), nil)
}

// messageOf is the message under k: from v when given, else read.
func (t tx) messageOf(k Key, v []byte) (Message, error) {
	if v == nil {
		var ok bool
		var err error
		if v, ok, err = t.Get(k); err != nil {
			return Message{}, err
		} else if !ok {
			return Message{}, ErrNotFound
		}
	}
	var sm storedMessage
	if err := json.Unmarshal(v, &sm); err != nil || sm.V != rowVersion {
		return Message{}, fmt.Errorf("%w (message %s/%d held aside)", ErrNotFound, k.Name, k.Seq)
	}
	return sm.Message, nil
}

// AppendIfRunning appends m to the recipient's mailbox, in the same
// transaction as it reads the recipient's status: a message lands only in
// the mailbox of a recipient that is running at that instant. It returns
// the message with its Seq, and the recipient as read.
func (s *Store) AppendIfRunning(ctx context.Context, rid string, m Message) (Message, RecipientRecord, error) {
	var out Message
	var rec RecipientRecord
	err := s.update(ctx, TxOptions{Name: "append", Serial: recipientHint(rid)}, func(t tx) error {
		var err error
		if rec, err = t.runningRecipient(rid); err != nil {
			return err
		}
		out, err = t.appendMessage(rid, m)
		return err
	})
	if err == nil {
		s.noteRetained(RetainedMessages, out.At)
	}
	return out, rec, err
}

// SettleAndMail settles a pending watch and mails its outcome, in one
// transaction. For a running recipient the row takes st (receipt
// delivered: the mailbox is the durable channel), m is appended to the
// mailbox, and, when the recipient has an active webhook, an outbox record
// for the push is written beside it. For a recipient that is not running
// (or does not exist) the row settles undeliverable (receipt rejected) and
// nothing is mailed. ErrNotPending, with nothing written, if the row is no
// longer pending: a cancel that committed first wins. It is an owner's
// transition.
//
// st.State is fired, expired or unwatchable; st.Receipt is ignored. m's
// WatchID is the row's id; its ID and At are the caller's.
func (s *Store) SettleAndMail(ctx context.Context, id ID, st Settlement, m Message) (Watch, Mailed, error) {
	return s.SettleAndMailThen(ctx, id, st, m, nil)
}

// SettleAndMailThen is SettleAndMail that, when it succeeds and then is
// not nil, calls then with what it mailed before returning: once the
// commit is durable, and after the then of every earlier
// SettleAndMailThen and CarryAndMailThen commit of the recipient.
// Concurrent callers so learn of their mail in mailbox order, holding no
// lock across the sync they share.
func (s *Store) SettleAndMailThen(ctx context.Context, id ID, st Settlement, m Message, then func(Mailed)) (Watch, Mailed, error) {
	return s.settleAndMail(ctx, TxOptions{Name: "settle-and-mail", Owner: id}, id, st, m, then)
}

// AnswerAndMailThen is SettleAndMailThen for an outcome given from
// outside (a signal's answer), on whichever node it arrives: the same
// transaction, not fenced on the row's owner, as a cancel is not. The
// conditional read of the row still decides between it and the owner's
// settlement (ErrNotPending for the later, nothing written); only the
// owner's probes need the fence, since they act on what they read
// before. st.State must be Fired.
func (s *Store) AnswerAndMailThen(ctx context.Context, id ID, st Settlement, m Message, then func(Mailed)) (Watch, Mailed, error) {
	if st.State != Fired {
		return Watch{}, Mailed{}, fmt.Errorf("store: answer and mail as %q", st.State)
	}
	return s.settleAndMail(ctx, TxOptions{Name: "answer-and-mail"}, id, st, m, then)
}

func (s *Store) settleAndMail(ctx context.Context, o TxOptions, id ID, st Settlement, m Message, then func(Mailed)) (Watch, Mailed, error) {
	switch st.State {
	case Fired, Expired, Unwatchable:
	default:
		return Watch{}, Mailed{}, fmt.Errorf("store: settle and mail as %q", st.State)
	}
	var out Watch
	var mailed Mailed
	o.Then = thenMailed(then, &mailed)
	err := s.update(ctx, o, func(t tx) error {
		mailed = Mailed{}
		w, err := t.getRow(id)
		if err != nil {
			return err
		}
		if w.State != Pending {
			return ErrNotPending
		}
		t.Serialise(recipientHint(w.Recipient.ID))
		st := st
		rec, rerr := t.runningRecipient(w.Recipient.ID)
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
		if err := t.rewriteRow(Pending, w); err != nil {
			return err
		}
		out = w
		if rerr != nil {
			return nil
		}
		m := m
		m.WatchID = id
		mailed, err = t.mail(rec, m, false)
		return err
	})
	if err != nil {
		return out, mailed, err
	}
	s.noteRetained(RetainedSettled, *out.SettledAt)
	s.noteMailed(mailed)
	return out, mailed, nil
}

// CarryAndMail records a standing (or remembering) watch's new baseline
// and, when change is not nil, mails the change, in one transaction. The
// change is mailed only to a running recipient, and its push is a notice
// (re-checked for liveness before it is sent). ErrNotPending, with nothing
// written or mailed, if the row is no longer pending. It is an owner's
// transition.
func (s *Store) CarryAndMail(ctx context.Context, id ID, baseline json.RawMessage, attempts int, note string, change *Message) (Mailed, error) {
	return s.CarryAndMailThen(ctx, id, baseline, attempts, note, change, nil)
}

// CarryAndMailThen is CarryAndMail with then called as SettleAndMailThen
// calls it.
func (s *Store) CarryAndMailThen(ctx context.Context, id ID, baseline json.RawMessage, attempts int, note string, change *Message, then func(Mailed)) (Mailed, error) {
	var mailed Mailed
	err := s.update(ctx, TxOptions{Name: "carry-and-mail", Owner: id, Then: thenMailed(then, &mailed)}, func(t tx) error {
		mailed = Mailed{}
		w, err := t.getRow(id)
		if err != nil {
			return err
		}
		if w.State != Pending {
			return ErrNotPending
		}
		t.Serialise(recipientHint(w.Recipient.ID))
		carry(&w, baseline, attempts, note)
		if err := t.rewriteRow(Pending, w); err != nil {
			return err
		}
		if change == nil {
			return nil
		}
		rec, err := t.runningRecipient(w.Recipient.ID)
		var nr *NotRunningError
		if errors.As(err, &nr) {
			return nil // nothing to mail to; the baseline still moves
		}
		if err != nil {
			return err
		}
		m := *change
		m.WatchID = id
		mailed, err = t.mail(rec, m, true)
		return err
	})
	if err == nil {
		s.noteMailed(mailed)
	}
	return mailed, err
}

// noteMailed tells OnRetained's fn of a committed message.
func (s *Store) noteMailed(m Mailed) {
	if m.Message != nil {
		s.noteRetained(RetainedMessages, m.Message.At)
	}
}

// ReadMailbox returns up to limit messages of the recipient with Seq
// after after, in order, each with its push's state. A message this
// build cannot decode is skipped (held aside), never an error for the
// others. Where the adapter's reads may see a commit not yet durable
// (Barrier), it returns once what it read is: a reader never takes a
// cursor past a message that a power loss could undo.
func (s *Store) ReadMailbox(ctx context.Context, rid string, after uint64, limit int) ([]Message, error) {
	var out []Message
	err := s.view(ctx, func(t tx) error {
		out = out[:0]
		add := func(k Key, v []byte) error {
			m, err := t.messageOf(k, v)
			if errors.Is(err, ErrNotFound) {
				return nil // pruned, or held aside
			}
			if err != nil {
				return err
			}
			if p, err := t.getPush(rid, m.Seq); err == nil {
				m.Push = &p
			}
			out = append(out, m)
			return nil
		}
		r := Range{Prefix: kMessage(rid, 0), Fixed: 1}
		if !s.plan.Remote {
			r.Want = min(max(limit, 1), 100)
			return t.Scan(r.FromKey(kMessage(rid, after+1)), func(k Key, v []byte) (bool, error) {
				if err := ctx.Err(); err != nil {
					return false, err
				}
				if err := add(k, v); err != nil {
					return false, err
				}
				return len(out) < limit, nil
			})
		}
		last, _, err := t.seqOf(kMailSeq(rid))
		if err != nil {
			return err
		}
		for len(out) < limit && after < last {
			seqs, err := t.seqsAfter(r, func(seq uint64) Key { return kMessage(rid, seq) }, after, last, limit-len(out))
			if err != nil || len(seqs) == 0 {
				return err
			}
			for _, seq := range seqs {
				after = seq
				if err := add(kMessage(rid, seq), nil); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err == nil && len(out) > 0 {
		if b, ok := s.kv.(Barrier); ok {
			err = b.Barrier()
		}
	}
	return out, err
}
