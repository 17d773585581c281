package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
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

type storedPush struct {
	V int `json:"v"`
	Push
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

// getPush reads a push record: ErrNotFound when absent or held aside.
func (t tx) getPush(rid string, seq uint64) (Push, error) {
	v, ok, err := t.Get(kPush(rid, seq))
	if err != nil {
		return Push{}, err
	}
	if !ok {
		return Push{}, ErrNotFound
	}
	p, err := DecodePush(v)
	if err != nil {
		return Push{}, fmt.Errorf("%w (push %s/%d held aside: %v)", ErrNotFound, rid, seq, err)
	}
	return p, nil
}

// putPush writes p and keeps the live and time indexes in step with its
// state (the record before its index entries: a feed of the live index
// reads the record its entry was written with, or a later one).
func (t tx) putPush(p Push) error {
	b, err := EncodePush(p)
	if err != nil {
		return err
	}
	t.Put(kPush(p.Recipient, p.Seq), b)
	if p.State.Final() {
		t.Put(kPushAt(p.UpdatedAt, p.Recipient, p.Seq), nil)
		t.Delete(kLivePush(p.Recipient, p.Seq))
		return nil
	}
	t.Put(kLivePush(p.Recipient, p.Seq), nil)
	return nil
}

// LivePushes calls fn with every push that is not final, by recipient and
// then in mailbox order, reading only the live index and those records.
func (s *Store) LivePushes(ctx context.Context, fn func(Push) error) error {
	return s.LivePushesOf(ctx, nil, fn)
}

// LivePushesOf is LivePushes for the recipients keep accepts (nil: all):
// another recipient's push costs its index key, never its record. A
// cluster node loads the pushes of the recipients it owns this way.
func (s *Store) LivePushesOf(ctx context.Context, keep func(rid string) bool, fn func(Push) error) error {
	var live []Push
	err := s.view(ctx, func(t tx) error {
		live = live[:0]
		return t.Scan(Range{Prefix: Key{Fam: FamLivePush}, KeysOnly: true}, func(k Key, _ []byte) (bool, error) {
			if err := ctx.Err(); err != nil {
				return false, err
			}
			if keep != nil && !keep(k.Name) {
				return true, nil
			}
			p, err := t.getPush(k.Name, k.Seq)
			if errors.Is(err, ErrNotFound) {
				return true, nil // held aside: a newer build's record
			}
			if err != nil {
				return false, err
			}
			if !p.State.Final() {
				live = append(live, p)
			}
			return true, nil
		})
	})
	if err != nil {
		return err
	}
	for _, p := range live {
		if err := fn(p); err != nil {
			return err
		}
	}
	return nil
}

// RecoverPushes makes every push found sending unknown: a request may
// have gone out before the process stopped, and unknown is never sent
// again. Call it once at start, before any push is begun. It returns the
// pushes it changed.
func (s *Store) RecoverPushes(ctx context.Context, at time.Time) ([]Push, error) {
	return s.RecoverPushesOf(ctx, at, nil)
}

// RecoverPushesOf is RecoverPushes for the recipients keep accepts (nil:
// all), leaving every other push as it is: a cluster node recovers only
// the pushes it has just come to own, never those another live node may
// be sending. Each batch is one transaction, each push in it changed
// only if still sending.
func (s *Store) RecoverPushesOf(ctx context.Context, at time.Time, keep func(rid string) bool) ([]Push, error) {
	var sending []Push
	if err := s.LivePushesOf(ctx, keep, func(p Push) error {
		if p.State == PushSending {
			sending = append(sending, p)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	var out []Push
	for i := 0; i < len(sending); i += s.batch() {
		part := sending[i:min(i+s.batch(), len(sending))]
		var done []Push
		err := s.update(ctx, TxOptions{Name: "recover-pushes"}, func(t tx) error {
			done = done[:0]
			for _, old := range part {
				p, err := t.getPush(old.Recipient, old.Seq)
				if errors.Is(err, ErrNotFound) {
					continue
				}
				if err != nil {
					return err
				}
				if p.State != PushSending {
					continue // finished meanwhile
				}
				p.State, p.NextAttempt, p.UpdatedAt = PushUnknown, nil, at.UTC()
				p.LastError = "the host stopped while the request was in flight"
				if err := t.putPush(p); err != nil {
					return err
				}
				done = append(done, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		out = append(out, done...)
	}
	if len(out) > 0 {
		s.noteRetained(RetainedPushes, at)
	}
	return out, nil
}

// BeginPush marks a pending or retrying push sending, counting the
// attempt, and returns it with its message and the recipient as they are
// now, all in one transaction (fenced on the recipient): the mark is
// durable before the caller sends anything, and of two senders one
// begins it. ErrPushState if the push is in another state; ErrNotFound
// (with the push marked failed) if its message or recipient is gone.
func (s *Store) BeginPush(ctx context.Context, rid string, seq uint64, at time.Time) (Push, Message, RecipientRecord, error) {
	var p Push
	var m Message
	var rec RecipientRecord
	err := s.update(ctx, TxOptions{Name: "begin-push"}, func(t tx) error {
		if err := t.prefetch(kPush(rid, seq), kMessage(rid, seq), kRecipientRec(rid)); err != nil {
			return err
		}
		var err error
		p, err = t.getPush(rid, seq)
		if errors.Is(err, ErrNotFound) {
			return ErrPushState
		}
		if err != nil {
			return err
		}
		if p.State != PushPending && p.State != PushRetrying {
			return ErrPushState
		}
		m, err = t.getMessage(rid, seq)
		if err == nil {
			rec, _, err = t.getRecipient(rid)
			t.Fence(kRecipientRec(rid))
		}
		if errors.Is(err, ErrNotFound) {
			p.State, p.NextAttempt, p.UpdatedAt = PushFailed, nil, at.UTC()
			p.LastError = "the message or its recipient no longer exists"
			return t.putPush(p)
		}
		if err != nil {
			return err
		}
		p.State, p.NextAttempt, p.UpdatedAt = PushSending, nil, at.UTC()
		p.Attempts++
		return t.putPush(p)
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
func (s *Store) FinishPush(ctx context.Context, p Push) error {
	if p.State == PushSending || !p.State.Valid() {
		return fmt.Errorf("store: finish a push as %q", p.State)
	}
	err := s.update(ctx, TxOptions{Name: "finish-push"}, func(t tx) error {
		cur, err := t.getPush(p.Recipient, p.Seq)
		if errors.Is(err, ErrNotFound) {
			return ErrPushState
		}
		if err != nil {
			return err
		}
		if cur.State != PushSending {
			return ErrPushState
		}
		return t.putPush(p)
	})
	if err == nil && p.State.Final() {
		s.noteRetained(RetainedPushes, p.UpdatedAt)
	}
	return err
}

// PrunePushes deletes final pushes last changed before cutoff, with their
// time index entries, and returns how many. A push that is not final is
// never pruned. It decodes every record: Prune's backstop for records
// written before the index; PruneOldest keeps the class while running.
func (s *Store) PrunePushes(ctx context.Context, cutoff time.Time) (int, error) {
	old := func(p Push) bool { return p.State.Final() && p.UpdatedAt.Before(cutoff) }
	return s.pruneScan(ctx, "prune-pushes", Key{Fam: FamPush}, func(_ Key, v []byte) bool {
		p, err := DecodePush(v)
		return err == nil && old(p) // not held aside, live, or kept
	}, func(t tx, k Key) (bool, error) {
		p, err := t.getPush(k.Name, k.Seq)
		if errors.Is(err, ErrNotFound) || (err == nil && !old(p)) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		t.Delete(k)
		t.Delete(kPushAt(p.UpdatedAt, p.Recipient, p.Seq))
		return true, nil
	})
}

// pruneScan is a backstop prune of family's records, in batches: each
// read (a view from where the last batch ended) for the records victim
// says to delete, and then one transaction in which drop deletes each of
// them (with its index entries) if it still is a victim, and says so. It
// returns how many drop deleted.
func (s *Store) pruneScan(ctx context.Context, name string, family Key, victim func(k Key, v []byte) bool, drop func(t tx, k Key) (bool, error)) (int, error) {
	total := 0
	var from *Key
	for {
		var victims []Key
		var last Key
		end := true
		err := s.view(ctx, func(t tx) error {
			victims, end = victims[:0], true
			r := Range{Prefix: family}
			if from != nil {
				r = r.FromKey(*from)
			}
			return t.Scan(r, func(k Key, v []byte) (bool, error) {
				if err := ctx.Err(); err != nil {
					return false, err
				}
				if from != nil && Compare(k, *from) == 0 {
					return true, nil
				}
				last = k
				if victim(k, v) {
					victims = append(victims, k)
				}
				if len(victims) == s.batch() {
					end = false
					return false, nil
				}
				return true, nil
			})
		})
		if err != nil || len(victims) == 0 {
			return total, err
		}
		n := 0
		err = s.update(ctx, TxOptions{Name: name}, func(t tx) error {
			n = 0
			for _, k := range victims {
				ok, err := drop(t, k)
				if err != nil {
					return err
				}
				if ok {
					n++
				}
			}
			return nil
		})
		if err != nil {
			return total, err
		}
		total += n
		if end {
			return total, nil
		}
		from = &last
	}
}

// DisableWebhook marks the recipient's webhook disabled, with the reason,
// if its URL is still url (a webhook set since is left alone). It returns
// whether it disabled one.
func (s *Store) DisableWebhook(ctx context.Context, rid, url, reason string, at time.Time) (bool, error) {
	var done bool
	err := s.update(ctx, TxOptions{Name: "disable-webhook"}, func(t tx) error {
		done = false
		rec, _, err := t.getRecipient(rid)
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
		ts := at.UTC()
		wh.DisabledAt, wh.DisabledReason = &ts, reason
		rec.Webhook, rec.UpdatedAt = &wh, ts
		done = true
		return t.putRecipient(rec)
	})
	return done, err
}
