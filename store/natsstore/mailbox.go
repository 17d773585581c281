package natsstore

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vigilhq/vigil/store"
)

// Key layout of the mailboxes.
//
//	ms.<tok rid>               the last seq (8 bytes): the append's fence
//	mb.<tok rid>.<seq>         a message
//	ma.<time>.<tok rid>.<seq>  at index (retention)
func mailSeqKey(rid string) string          { return "ms." + tok(rid) }
func mailKey(rid string, seq uint64) string { return "mb." + tok(rid) + "." + hex16(seq) }

type storedMessage struct {
	V int `json:"v"`
	store.Message
}

// appendMessage writes m as rid's next message and returns it with its
// Seq. The sequence key is read and written with its revision, so two
// appends (from any process) never take one seq, and seqs stay dense.
func appendMessage(t *txn, rid string, m store.Message) (store.Message, error) {
	e, err := t.get(mailSeqKey(rid))
	if err != nil {
		return m, err
	}
	var last uint64
	if e.exists {
		if len(e.val) != 8 {
			return m, fmt.Errorf("%w: mailbox sequence of %q", store.ErrCorrupt, rid)
		}
		last = binary.BigEndian.Uint64(e.val)
	}
	m.Seq = last + 1
	m.Push = nil
	b, err := json.Marshal(storedMessage{V: rowVersion, Message: m})
	if err != nil {
		return m, err
	}
	t.put(mailKey(rid, m.Seq), b)
	t.put(messageAtKey(m.At, rid, m.Seq), []byte(rid))
	t.put(mailSeqKey(rid), binary.BigEndian.AppendUint64(nil, m.Seq))
	return m, nil
}

// mail appends m to rec's mailbox and, with an active webhook, writes
// its pending push beside it.
func mail(t *txn, rec store.RecipientRecord, m store.Message, notice bool) (store.Mailed, error) {
	m, err := appendMessage(t, rec.ID, m)
	if err != nil {
		return store.Mailed{}, err
	}
	out := store.Mailed{Recipient: rec.ID, Message: &m}
	if !rec.Webhook.Active() {
		return out, nil
	}
	p := store.Push{Recipient: rec.ID, Seq: m.Seq, MessageID: m.ID, State: store.PushPending, Notice: notice,
		CreatedAt: m.At.UTC(), UpdatedAt: m.At.UTC()}
	if err := putPush(t, p); err != nil {
		return store.Mailed{}, err
	}
	out.Push = &p
	return out, nil
}

// AppendIfRunning appends m to the recipient's mailbox in a commit fenced
// on the recipient's record: it lands only while the recipient runs.
func (s *Store) AppendIfRunning(ctx context.Context, rid string, m store.Message) (store.Message, store.RecipientRecord, error) {
	var out store.Message
	var rec store.RecipientRecord
	mu := s.mailLock(rid)
	mu.Lock()
	defer mu.Unlock()
	err := s.update(ctx, "append", func(t *txn) error {
		var err error
		if rec, err = runningRecipient(t, rid); err != nil {
			return err
		}
		out, err = appendMessage(t, rid, m)
		return err
	})
	if err == nil {
		s.noteRetained(store.RetainedMessages, out.At)
	}
	return out, rec, err
}

// SettleAndMail settles a pending watch and mails its outcome in one
// atomic commit, as package store's does.
func (s *Store) SettleAndMail(ctx context.Context, id store.ID, st store.Settlement, m store.Message) (store.Watch, store.Mailed, error) {
	return s.SettleAndMailThen(ctx, id, st, m, nil)
}

// SettleAndMailThen is SettleAndMail that calls then with what it mailed
// once the commit is acknowledged, after the then of every earlier
// mail-writing commit of this Store.
func (s *Store) SettleAndMailThen(ctx context.Context, id store.ID, st store.Settlement, m store.Message, then func(store.Mailed)) (store.Watch, store.Mailed, error) {
	switch st.State {
	case store.Fired, store.Expired, store.Unwatchable:
	default:
		return store.Watch{}, store.Mailed{}, fmt.Errorf("store: settle and mail as %q", st.State)
	}
	var out store.Watch
	var mailed store.Mailed
	defer s.lockMailOf(ctx, id)()
	err := s.update(ctx, "settle-and-mail", func(t *txn) error {
		mailed = store.Mailed{}
		if err := s.ownerOf(t, id); err != nil {
			return err
		}
		w, err := getRow(t, id)
		if err != nil {
			return err
		}
		if w.State != store.Pending {
			return store.ErrNotPending
		}
		st := st
		rec, rerr := runningRecipient(t, w.Recipient.ID)
		var nr *store.NotRunningError
		switch {
		case errors.As(rerr, &nr):
			st.State, st.Receipt = store.Undeliverable, store.ReceiptRejected
		case rerr != nil:
			return rerr
		default:
			st.Receipt = store.ReceiptDelivered
		}
		st.ApplyTo(&w)
		if err := rewriteRow(t, store.Pending, w); err != nil {
			return err
		}
		out = w
		if rerr != nil {
			return nil
		}
		m := m
		m.WatchID = id
		mailed, err = mail(t, rec, m, false)
		return err
	})
	if err != nil {
		return out, mailed, err
	}
	s.noteRetained(store.RetainedSettled, *out.SettledAt)
	if mailed.Message != nil {
		s.noteRetained(store.RetainedMessages, mailed.Message.At)
	}
	if then != nil {
		then(mailed)
	}
	return out, mailed, nil
}

// CarryAndMail records a standing watch's new baseline and, when change
// is not nil and the recipient runs, mails the change, in one commit.
func (s *Store) CarryAndMail(ctx context.Context, id store.ID, baseline json.RawMessage, attempts int, note string, change *store.Message) (store.Mailed, error) {
	return s.CarryAndMailThen(ctx, id, baseline, attempts, note, change, nil)
}

// CarryAndMailThen is CarryAndMail with then called as SettleAndMailThen
// calls it.
func (s *Store) CarryAndMailThen(ctx context.Context, id store.ID, baseline json.RawMessage, attempts int, note string, change *store.Message, then func(store.Mailed)) (store.Mailed, error) {
	var mailed store.Mailed
	defer s.lockMailOf(ctx, id)()
	err := s.update(ctx, "carry-and-mail", func(t *txn) error {
		mailed = store.Mailed{}
		if err := s.ownerOf(t, id); err != nil {
			return err
		}
		w, err := getRow(t, id)
		if err != nil {
			return err
		}
		if w.State != store.Pending {
			return store.ErrNotPending
		}
		carry(&w, baseline, attempts, note)
		if err := rewriteRow(t, store.Pending, w); err != nil {
			return err
		}
		if change == nil {
			return nil
		}
		rec, err := runningRecipient(t, w.Recipient.ID)
		var nr *store.NotRunningError
		if errors.As(err, &nr) {
			return nil
		}
		if err != nil {
			return err
		}
		m := *change
		m.WatchID = id
		mailed, err = mail(t, rec, m, true)
		return err
	})
	if err != nil {
		return mailed, err
	}
	if mailed.Message != nil {
		s.noteRetained(store.RetainedMessages, mailed.Message.At)
	}
	if then != nil {
		then(mailed)
	}
	return mailed, nil
}

// lockMailOf locks the mail stripe of the recipient of row id and
// returns its unlock. A row's recipient never changes, so it is read
// before the lock; a row that cannot be read locks nothing (the
// transition that follows fails on it).
func (s *Store) lockMailOf(ctx context.Context, id store.ID) func() {
	var rid string
	err := s.view(ctx, func(t *txn) error {
		w, _, err := readRow(t, id)
		rid = w.Recipient.ID
		return err
	})
	if err != nil {
		return func() {}
	}
	mu := s.mailLock(rid)
	mu.Lock()
	return mu.Unlock
}

// lastSeq reads a recipient's last mailbox seq (0: none).
func lastSeq(t *txn, key string) (uint64, error) {
	e, err := t.get(key)
	if err != nil || !e.exists {
		return 0, err
	}
	if len(e.val) != 8 {
		return 0, fmt.Errorf("%w: sequence at %q", store.ErrCorrupt, key)
	}
	return binary.BigEndian.Uint64(e.val), nil
}

// seqsAfter lists the seqs above after that a sequenced family of keys
// (prefix "mb.<tok rid>.", "ev.<tok stream>.") still holds, in order, up
// to limit of them: it reads them one key at a time while they are
// there, and when one is missing (pruned) lists the family's keys once
// to step over the gap.
func (s *Store) seqsAfter(ctx context.Context, t *txn, prefix string, after, last uint64, limit int) ([]uint64, error) {
	if after >= last {
		return nil, nil
	}
	if e, err := t.get(prefix + hex16(after+1)); err != nil {
		return nil, err
	} else if e.exists {
		var out []uint64
		for seq := after + 1; seq <= last && len(out) < limit; seq++ {
			out = append(out, seq)
		}
		return out, nil
	}
	keys, err := s.scan(ctx, prefix+">", true)
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, k := range keys {
		seq, ok := parseHex16(strings.TrimPrefix(k.key, prefix))
		if ok && seq > after && len(out) < limit {
			out = append(out, seq)
		}
	}
	return out, nil
}

// ReadMailbox returns up to limit messages of the recipient with Seq
// after after, in order, each with its push. A message this build cannot
// decode is skipped (held aside).
func (s *Store) ReadMailbox(ctx context.Context, rid string, after uint64, limit int) ([]store.Message, error) {
	var out []store.Message
	err := s.view(ctx, func(t *txn) error {
		last, err := lastSeq(t, mailSeqKey(rid))
		if err != nil {
			return err
		}
		for len(out) < limit && after < last {
			seqs, err := s.seqsAfter(ctx, t, "mb."+tok(rid)+".", after, last, limit-len(out))
			if err != nil || len(seqs) == 0 {
				return err
			}
			for _, seq := range seqs {
				after = seq
				m, err := getMessage(t, rid, seq)
				if errors.Is(err, store.ErrNotFound) {
					continue // pruned, or held aside
				}
				if err != nil {
					return err
				}
				if p, err := getPush(t, rid, seq); err == nil {
					m.Push = &p
				}
				out = append(out, m)
			}
		}
		return nil
	})
	return out, err
}

func getMessage(t *txn, rid string, seq uint64) (store.Message, error) {
	e, err := t.get(mailKey(rid, seq))
	if err != nil {
		return store.Message{}, err
	}
	if !e.exists {
		return store.Message{}, store.ErrNotFound
	}
	var sm storedMessage
	if err := json.Unmarshal(e.val, &sm); err != nil || sm.V != rowVersion {
		return store.Message{}, fmt.Errorf("%w (message %s/%d held aside)", store.ErrNotFound, rid, seq)
	}
	return sm.Message, nil
}

// WaitMailbox returns nil once the recipient's mailbox holds a message
// after after (at once if it already does), or ctx's error when ctx ends
// first. It watches the mailbox's sequence key, so it wakes on an append
// any process commits, the moment JetStream delivers it, and polls
// nothing; the caller then reads with ReadMailbox.
func (s *Store) WaitMailbox(ctx context.Context, rid string, after uint64) error {
	w, err := s.kv.Watch(ctx, mailSeqKey(rid))
	if err != nil {
		return fmt.Errorf("natsstore: watching the mailbox of %q: %w", rid, err)
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return fmt.Errorf("natsstore: the watch of the mailbox of %q ended", rid)
			}
			if e == nil || e.Operation() != jetstream.KeyValuePut || len(e.Value()) != 8 {
				continue
			}
			if binary.BigEndian.Uint64(e.Value()) > after {
				return nil
			}
		}
	}
}
