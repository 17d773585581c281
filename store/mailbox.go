package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
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
	// (host/reminder): a recipient still working on an old phase report is
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

var (
	mailboxPfx = []byte("mb/") // mb/<recipient>\x00<seq>
	mailSeqPfx = []byte("ms/") // ms/<recipient> -> last seq
)

func mailboxPrefix(rid string) []byte {
	return append(append(append([]byte{}, mailboxPfx...), rid...), 0)
}

func mailKey(rid string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(mailboxPrefix(rid), seq)
}

func mailSeqKey(rid string) []byte { return append(append([]byte{}, mailSeqPfx...), rid...) }

type storedMessage struct {
	V int `json:"v"`
	Message
}

// AppendIfRunning appends m to the recipient's mailbox, in the same
// transaction as it reads the recipient's status: a message lands only in
// the mailbox of a recipient that is running at that instant. It returns
// the message with its Seq, and the recipient as read.
func (s *Badger) AppendIfRunning(ctx context.Context, rid string, m Message) (Message, RecipientRecord, error) {
	var out Message
	var rec RecipientRecord
	err := s.updateLocked(ctx, &s.appendMu, func(txn *badger.Txn) error {
		var err error
		rec, err = runningRecipient(txn, rid)
		if err != nil {
			return err
		}
		out, err = appendMessage(txn, rid, m)
		return err
	})
	if err == nil {
		s.noteRetained(RetainedMessages, out.At)
	}
	return out, rec, err
}

// runningRecipient reads a recipient that must be running: a
// *NotRunningError otherwise (absent included).
func runningRecipient(txn *badger.Txn, rid string) (RecipientRecord, error) {
	rec, err := getRecipient(txn, rid)
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

// appendMessage writes m as rid's next message, inside txn, and returns it
// with its Seq. The caller holds appendMu.
func appendMessage(txn *badger.Txn, rid string, m Message) (Message, error) {
	var last uint64
	item, err := txn.Get(mailSeqKey(rid))
	switch {
	case err == nil:
		if err := item.Value(func(v []byte) error {
			if len(v) != 8 {
				return fmt.Errorf("%w: mailbox sequence of %q", ErrCorrupt, rid)
			}
			last = binary.BigEndian.Uint64(v)
			return nil
		}); err != nil {
			return m, err
		}
	case !errors.Is(err, badger.ErrKeyNotFound):
		return m, err
	}
	m.Seq = last + 1
	m.Push = nil
	b, err := json.Marshal(storedMessage{V: rowVersion, Message: m})
	if err != nil {
		return m, err
	}
	if err := txn.Set(mailKey(rid, m.Seq), b); err != nil {
		return m, err
	}
	if err := txn.Set(messageAtKey(m.At, rid, m.Seq), nil); err != nil {
		return m, err
	}
	if err := txn.Set(mailSeqKey(rid), binary.BigEndian.AppendUint64(nil, m.Seq)); err != nil {
		return m, err
	}
	return m, nil
}

// ReadMailbox returns up to limit messages of the recipient with Seq after
// after, in order. A message this build cannot decode is skipped (held
// aside), never an error for the others. With SyncWrites it returns only
// durable messages: a reader never takes a cursor past a message that a
// power loss could undo.
func (s *Badger) ReadMailbox(ctx context.Context, rid string, after uint64, limit int) ([]Message, error) {
	var out []Message
	err := s.db.View(func(txn *badger.Txn) error {
		prefix := mailboxPrefix(rid)
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true, PrefetchSize: min(max(limit, 1), 100)})
		defer it.Close()
		for it.Seek(mailKey(rid, after+1)); it.Valid() && len(out) < limit; it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			var sm storedMessage
			err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &sm) })
			if err != nil || sm.V != rowVersion {
				continue
			}
			if p, err := getPush(txn, rid, sm.Seq); err == nil {
				sm.Push = &p
			}
			out = append(out, sm.Message)
		}
		return nil
	})
	if err == nil && len(out) > 0 {
		err = s.durableRead()
	}
	return out, err
}

// pruneMessages deletes messages older than cutoff, in batches, with
// their time index entries, decoding every message: Prune's backstop.
func (s *Badger) pruneMessages(ctx context.Context, cutoff time.Time) (int, error) {
	return s.pruneScan(ctx, mailboxPfx, func(key, v []byte) ([]byte, bool) {
		var sm storedMessage
		if err := json.Unmarshal(v, &sm); err != nil || sm.V != rowVersion || !sm.At.Before(cutoff) {
			return nil, false // held aside, or kept
		}
		rid, seq, _ := splitPushKey(key[len(mailboxPfx):])
		return messageAtKey(sm.At, rid, seq), true
	})
}
