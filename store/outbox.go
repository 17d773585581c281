package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// PushState is what became of a message's webhook push so far.
type PushState string

// Push states. pending, sending and retrying change; the others are final.
const (
	// PushPending: written with its message, waiting for its first attempt.
	PushPending PushState = "pending"
	// PushSending: an attempt is in flight. Written durably before the
	// request goes out, so a restart that finds it knows a request may have
	// arrived and records it unknown instead of sending it again.
	PushSending PushState = "sending"
	// PushRetrying: an attempt did not reach the receiver, or the receiver
	// answered that it did not take the message (5xx, 429); the next
	// attempt is at NextAttempt.
	PushRetrying PushState = "retrying"
	// PushDelivered: the receiver answered 2xx.
	PushDelivered PushState = "delivered"
	// PushFailed: the receiver refused it (a 4xx other than 429, a 3xx),
	// the retries ran out, or there was no webhook to push to any more.
	PushFailed PushState = "failed"
	// PushUnknown: a request went out and no answer came (or a restart
	// found it sending). Never sent again.
	PushUnknown PushState = "unknown"
)

// PushStates lists every push state this build knows.
func PushStates() []PushState {
	return []PushState{PushPending, PushSending, PushRetrying, PushDelivered, PushFailed, PushUnknown}
}

// Final reports whether the state never changes again.
func (s PushState) Final() bool {
	return s == PushDelivered || s == PushFailed || s == PushUnknown
}

// Valid reports whether the state is one this build knows.
func (s PushState) Valid() bool {
	return slices.Contains(PushStates(), s)
}

// Push is the outbox record of one message's webhook push, keyed by its
// recipient and the message's Seq.
type Push struct {
	Recipient string    `json:"recipient"`
	Seq       uint64    `json:"seq"`
	MessageID ID        `json:"message_id"`
	State     PushState `json:"state"`
	// Notice: the message is a change the host sends on its own initiative;
	// it is pushed only while the recipient is running.
	Notice bool `json:"notice,omitempty"`
	// Attempts counts the requests started (or refused before starting).
	Attempts int `json:"attempts"`
	// NextAttempt is when a retrying push is tried again.
	NextAttempt *time.Time `json:"next_attempt,omitempty"`
	// LastError names what the last attempt met ("status 503",
	// "connection refused", "no answer"); empty after a delivery.
	LastError string    `json:"last_error,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ErrPushState: the push is not in the state the transition needs (it
// was finished, or recovered, meanwhile), or does not exist.
var ErrPushState = errors.New("store: push is not in the expected state")

var (
	pushPfx     = []byte("ob/") // ob/<recipient>\x00<seq> -> Push
	livePushPfx = []byte("ol/") // ol/<recipient>\x00<seq> while the push is not final
)

func pushKeyOf(pfx []byte, rid string, seq uint64) []byte {
	k := append(append([]byte{}, pfx...), rid...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, seq)
}

type storedPush struct {
	V int `json:"v"`
	Push
}

func getPush(txn *badger.Txn, rid string, seq uint64) (Push, error) {
	item, err := txn.Get(pushKeyOf(pushPfx, rid, seq))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return Push{}, ErrNotFound
	}
	if err != nil {
		return Push{}, err
	}
	var p Push
	err = item.Value(func(v []byte) error {
		p, err = DecodePush(v)
		return err
	})
	if err != nil {
		return Push{}, fmt.Errorf("%w (push %s/%d held aside: %v)", ErrNotFound, rid, seq, err)
	}
	return p, nil
}

// EncodePush is p as every backend stores it, and as an export carries it.
func EncodePush(p Push) ([]byte, error) {
	return json.Marshal(storedPush{V: rowVersion, Push: p})
}

// DecodePush decodes a stored push; an error (another version, an
// unknown state) means it is held aside.
func DecodePush(v []byte) (Push, error) {
	var sp storedPush
	if err := json.Unmarshal(v, &sp); err != nil {
		return Push{}, err
	}
	if sp.V != rowVersion || !sp.State.Valid() {
		return Push{}, fmt.Errorf("version %d state %q", sp.V, sp.State)
	}
	return sp.Push, nil
}

// putPush writes p and keeps the live index in step with its state.
func putPush(txn *badger.Txn, p Push) error {
	b, err := EncodePush(p)
	if err != nil {
		return err
	}
	if err := txn.Set(pushKeyOf(pushPfx, p.Recipient, p.Seq), b); err != nil {
		return err
	}
	if p.State.Final() {
		if err := txn.Set(pushAtKey(p.UpdatedAt, p.Recipient, p.Seq), nil); err != nil {
			return err
		}
		return txn.Delete(pushKeyOf(livePushPfx, p.Recipient, p.Seq))
	}
	return txn.Set(pushKeyOf(livePushPfx, p.Recipient, p.Seq), nil)
}

// LivePushes calls fn with every push that is not final, by recipient and
// then in mailbox order, reading only the live index and those records.
func (s *Badger) LivePushes(ctx context.Context, fn func(Push) error) error {
	return s.LivePushesOf(ctx, nil, fn)
}

// LivePushesOf is LivePushes for the recipients keep accepts (nil: all):
// another recipient's push costs its index key, never its record. A
// cluster node loads the pushes of the recipients it owns this way.
func (s *Badger) LivePushesOf(ctx context.Context, keep func(rid string) bool, fn func(Push) error) error {
	return s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: livePushPfx})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			rid, seq, ok := splitPushKey(it.Item().Key()[len(livePushPfx):])
			if !ok || (keep != nil && !keep(rid)) {
				continue
			}
			p, err := getPush(txn, rid, seq)
			if err != nil {
				continue // held aside: a newer build's record
			}
			if err := fn(p); err != nil {
				return err
			}
		}
		return nil
	})
}

// PushPartition is the partition of recipient rid's pushes among n (1 to
// MaxPartitions): its slot (SlotOf) modulo n, the mapping a watch's id
// uses (ID.Partition), so a cluster node that holds the partition owns the
// recipient's pushes, whatever partitions its watches are in.
func PushPartition(rid string, n int) int {
	if n <= 1 {
		return 0
	}
	return int(SlotOf(rid)) % n
}

func splitPushKey(k []byte) (string, uint64, bool) {
	if len(k) < 9 || k[len(k)-9] != 0 {
		return "", 0, false
	}
	return string(k[:len(k)-9]), binary.BigEndian.Uint64(k[len(k)-8:]), true
}

// RecoverPushes makes every push found sending unknown: a request may
// have gone out before the process stopped, and unknown is never sent
// again. Call it once at start, before any push is begun. It returns the
// pushes it changed.
func (s *Badger) RecoverPushes(ctx context.Context, at time.Time) ([]Push, error) {
	return s.RecoverPushesOf(ctx, at, nil)
}

// RecoverPushesOf is RecoverPushes for the recipients keep accepts (nil:
// all), leaving every other push as it is: a cluster node recovers only
// the pushes it has just come to own, never those another live node may
// be sending.
func (s *Badger) RecoverPushesOf(ctx context.Context, at time.Time, keep func(rid string) bool) ([]Push, error) {
	var sending []Push
	err := s.LivePushesOf(ctx, keep, func(p Push) error {
		if p.State == PushSending {
			sending = append(sending, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := 0; i < len(sending); i += pruneBatch {
		batch := sending[i:min(i+pruneBatch, len(sending))]
		err := s.update(ctx, func(txn *badger.Txn) error {
			for j := range batch {
				p := &batch[j]
				p.State, p.NextAttempt, p.UpdatedAt = PushUnknown, nil, at.UTC()
				p.LastError = "the host stopped while the request was in flight"
				if err := putPush(txn, *p); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(sending) > 0 {
		s.noteRetained(RetainedPushes, at)
	}
	return sending, nil
}

// BeginPush marks a pending or retrying push sending, counting the
// attempt, and returns it with its message and the recipient as they are
// now, all in one transaction: the mark is durable before the caller sends
// anything. ErrPushState if the push is in another state; ErrNotFound
// (with the push marked failed) if its message or recipient is gone.
func (s *Badger) BeginPush(ctx context.Context, rid string, seq uint64, at time.Time) (Push, Message, RecipientRecord, error) {
	var p Push
	var m Message
	var rec RecipientRecord
	err := s.update(ctx, func(txn *badger.Txn) error {
		var err error
		p, err = getPush(txn, rid, seq)
		if errors.Is(err, ErrNotFound) {
			return ErrPushState
		}
		if err != nil {
			return err
		}
		if p.State != PushPending && p.State != PushRetrying {
			return ErrPushState
		}
		m, err = getMessage(txn, rid, seq)
		if err == nil {
			rec, err = getRecipient(txn, rid)
		}
		if errors.Is(err, ErrNotFound) {
			p.State, p.NextAttempt, p.UpdatedAt = PushFailed, nil, at.UTC()
			p.LastError = "the message or its recipient no longer exists"
			return putPush(txn, p)
		}
		if err != nil {
			return err
		}
		p.State, p.NextAttempt, p.UpdatedAt = PushSending, nil, at.UTC()
		p.Attempts++
		return putPush(txn, p)
	})
	if err == nil && p.State == PushFailed {
		s.noteRetained(RetainedPushes, p.UpdatedAt)
		err = fmt.Errorf("%w: push %s/%d: %s", ErrNotFound, rid, seq, p.LastError)
	}
	return p, m, rec, err
}

// FinishPush records what became of an attempt that BeginPush started:
// p.State is anything but sending. ErrPushState if the push is not sending
// any more.
func (s *Badger) FinishPush(ctx context.Context, p Push) error {
	if p.State == PushSending || !p.State.Valid() {
		return fmt.Errorf("store: finish a push as %q", p.State)
	}
	err := s.update(ctx, func(txn *badger.Txn) error {
		cur, err := getPush(txn, p.Recipient, p.Seq)
		if errors.Is(err, ErrNotFound) {
			return ErrPushState
		}
		if err != nil {
			return err
		}
		if cur.State != PushSending {
			return ErrPushState
		}
		return putPush(txn, p)
	})
	if err == nil && p.State.Final() {
		s.noteRetained(RetainedPushes, p.UpdatedAt)
	}
	return err
}

// DisableWebhook marks the recipient's webhook disabled, with the reason,
// if its URL is still url (a webhook set since is left alone). It returns
// whether it disabled one.
func (s *Badger) DisableWebhook(ctx context.Context, rid, url, reason string, at time.Time) (bool, error) {
	var done bool
	err := s.update(ctx, func(txn *badger.Txn) error {
		done = false
		rec, err := getRecipient(txn, rid)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if !rec.Webhook.Active() || rec.Webhook.URL != url {
			return nil
		}
		wh := *rec.Webhook
		t := at.UTC()
		wh.DisabledAt, wh.DisabledReason = &t, reason
		rec.Webhook, rec.UpdatedAt = &wh, t
		done = true
		return putRecipient(txn, rec)
	})
	return done, err
}

// PrunePushes deletes final pushes last changed before cutoff, with their
// time index entries, and returns how many. A push that is not final is
// never pruned. It decodes every record: Prune's backstop for records
// written before the index; PruneOldest keeps the class while running.
func (s *Badger) PrunePushes(ctx context.Context, cutoff time.Time) (int, error) {
	return s.pruneScan(ctx, pushPfx, func(_, v []byte) ([]byte, bool) {
		var sp storedPush
		if err := json.Unmarshal(v, &sp); err != nil || sp.V != rowVersion || !sp.State.Final() || !sp.UpdatedAt.Before(cutoff) {
			return nil, false // held aside, live, or kept
		}
		return pushAtKey(sp.UpdatedAt, sp.Recipient, sp.Seq), true
	})
}

// pruneScan is the backstop prune of the records under prefix: in
// batches, each read in one view (deciding every record) and deleted in
// one transaction, it deletes each record victim says to, with the index
// key victim names beside it, and returns how many records it deleted.
// victim gets the record's key and value; it must not keep them.
func (s *Badger) pruneScan(ctx context.Context, prefix []byte, victim func(key, value []byte) (index []byte, ok bool)) (int, error) {
	total := 0
	for {
		var dels [][]byte
		err := s.db.View(func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true})
			defer it.Close()
			for it.Rewind(); it.Valid() && len(dels) < 2*pruneBatch; it.Next() {
				if err := ctx.Err(); err != nil {
					return err
				}
				var index []byte
				var ok bool
				if err := it.Item().Value(func(v []byte) error { index, ok = victim(it.Item().Key(), v); return nil }); err != nil {
					return err
				}
				if ok {
					dels = append(dels, it.Item().KeyCopy(nil), index)
				}
			}
			return nil
		})
		if err != nil || len(dels) == 0 {
			return total, err
		}
		err = s.update(ctx, func(txn *badger.Txn) error {
			for _, k := range dels {
				if err := txn.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return total, err
		}
		total += len(dels) / 2
		if len(dels) < 2*pruneBatch {
			return total, nil
		}
	}
}

func getMessage(txn *badger.Txn, rid string, seq uint64) (Message, error) {
	item, err := txn.Get(mailKey(rid, seq))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return Message{}, ErrNotFound
	}
	if err != nil {
		return Message{}, err
	}
	var sm storedMessage
	if err := item.Value(func(v []byte) error { return json.Unmarshal(v, &sm) }); err != nil || sm.V != rowVersion {
		return Message{}, fmt.Errorf("%w (message %s/%d held aside)", ErrNotFound, rid, seq)
	}
	return sm.Message, nil
}
