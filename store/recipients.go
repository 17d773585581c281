package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/vigilhq/vigil/sdk/abi"
)

// RecipientStatus is a recipient's lifecycle state. Only a running
// recipient receives messages and keeps pending watches.
type RecipientStatus string

// Recipient statuses.
const (
	StatusRunning RecipientStatus = "running"
	StatusPaused  RecipientStatus = "paused"
	StatusStopped RecipientStatus = "stopped"
)

// Valid reports whether s is a status this build knows.
func (s RecipientStatus) Valid() bool {
	return s == StatusRunning || s == StatusPaused || s == StatusStopped
}

// Webhook is where a recipient's messages are also POSTed. Secret is
// write-only: stored, used to sign, never returned or logged.
type Webhook struct {
	URL    string `json:"url"`
	Secret string `json:"secret"`
	// DisabledAt is set when the receiver answered 410 Gone: no push goes
	// to the URL after it, until the recipient sets its webhook again.
	DisabledAt *time.Time `json:"disabled_at,omitempty"`
	// DisabledReason says why, for the recipient's view.
	DisabledReason string `json:"disabled_reason,omitempty"`
}

// Active reports whether messages are pushed to w.
func (w *Webhook) Active() bool { return w != nil && w.URL != "" && w.DisabledAt == nil }

// Ref is one subject attached to a recipient: while the recipient runs,
// the reconciler keeps exactly one standing watch of Kind with Params.
type Ref struct {
	Kind   string          `json:"kind"`
	Params json.RawMessage `json:"params"`
}

// RecipientRecord is a recipient as stored.
type RecipientRecord struct {
	ID      string          `json:"id"`
	Status  RecipientStatus `json:"status"`
	Webhook *Webhook        `json:"webhook,omitempty"`
	Refs    []Ref           `json:"refs,omitempty"`
	// Workspace is the directory the recipient works in: where a command
	// the exec capability runs for one of its watches runs, and nowhere
	// else. Empty: none declared.
	Workspace string    `json:"workspace,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Phase is what the recipient last said it is working on, nil before
	// any report; Activity the counts that move while it works. Both are
	// written by ReportPhase and ReportActivity only, and kept by
	// PutRecipient.
	Phase    *Phase   `json:"phase,omitempty"`
	Activity Activity `json:"activity,omitzero"`
	// ReminderEvery is the recipient's opt-in to the phase reminder
	// (host/reminder): how often it is checked and how old a report must
	// be; zero is no reminder. Written by SetReminder only, kept by
	// PutRecipient.
	ReminderEvery Duration `json:"reminder_every,omitempty"`
}

// Phase is a recipient's reported phase: a short name (build, review,
// handoff, blocked, …) and optional text, with who reported it and when.
type Phase struct {
	Name string `json:"name"`
	Text string `json:"text,omitempty"`
	// ReportedBy is the principal that reported it. Seeded is true when
	// that principal was not acting as the recipient itself (an operator,
	// or the host, setting a phase on its behalf): such a phase is not the
	// recipient's own claim.
	ReportedBy string    `json:"reported_by"`
	Seeded     bool      `json:"seeded,omitempty"`
	ReportedAt time.Time `json:"reported_at"`
}

// Activity is the counts that move while a recipient works. They only
// grow (saturating at the largest uint64); At is the last report.
type Activity struct {
	Replies   uint64    `json:"replies"`
	ToolCalls uint64    `json:"tool_calls"`
	At        time.Time `json:"at,omitzero"`
}

// Add adds replies and toolCalls to the counts, saturating, and sets At
// to at in UTC.
func (a *Activity) Add(replies, toolCalls uint64, at time.Time) {
	a.Replies = addSaturating(a.Replies, replies)
	a.ToolCalls = addSaturating(a.ToolCalls, toolCalls)
	a.At = at.UTC()
}

type storedRecipient struct {
	V int `json:"v"`
	RecipientRecord
}

var recipientRecPfx = []byte("rc/")

func recipientRecKey(id string) []byte { return append(append([]byte{}, recipientRecPfx...), id...) }

func getRecipient(txn *badger.Txn, id string) (RecipientRecord, error) {
	item, err := txn.Get(recipientRecKey(id))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return RecipientRecord{}, ErrNotFound
	}
	if err != nil {
		return RecipientRecord{}, err
	}
	var r RecipientRecord
	err = item.Value(func(v []byte) error {
		r, err = DecodeRecipient(id, v)
		return err
	})
	return r, err
}

// EncodeRecipient is r as every backend stores it, and as an export
// carries it.
func EncodeRecipient(r RecipientRecord) ([]byte, error) {
	return json.Marshal(storedRecipient{V: rowVersion, RecipientRecord: r})
}

// DecodeRecipient decodes a stored recipient strictly: one this build
// cannot read (another version, an unknown field or status) is held aside,
// ErrNotFound naming why.
func DecodeRecipient(id string, v []byte) (RecipientRecord, error) {
	var sr storedRecipient
	err := abi.StrictUnmarshal(v, &sr)
	if err == nil && (sr.V != rowVersion || !sr.Status.Valid()) {
		err = fmt.Errorf("version %d status %q", sr.V, sr.Status)
	}
	if err != nil {
		return RecipientRecord{}, fmt.Errorf("%w (recipient %q held aside: %v)", ErrNotFound, id, err)
	}
	return sr.RecipientRecord, nil
}

func putRecipient(txn *badger.Txn, r RecipientRecord) error {
	b, err := EncodeRecipient(r)
	if err != nil {
		return err
	}
	return txn.Set(recipientRecKey(r.ID), b)
}

// GetRecipient reads a recipient. ErrNotFound if absent.
func (s *Badger) GetRecipient(ctx context.Context, id string) (RecipientRecord, error) {
	var r RecipientRecord
	err := s.db.View(func(txn *badger.Txn) error {
		var err error
		r, err = getRecipient(txn, id)
		return err
	})
	return r, err
}

// PutRecipient writes a recipient, keeping its creation time, its phase,
// activity and reminder opt-in (which only their own calls write, so a
// client replacing the record cannot erase a report or race one), and
// returns the record as it was before; existed is false for a new
// recipient.
func (s *Badger) PutRecipient(ctx context.Context, r RecipientRecord) (prev RecipientRecord, existed bool, err error) {
	if !r.Status.Valid() {
		return prev, false, fmt.Errorf("store: recipient status %q", r.Status)
	}
	err = s.update(ctx, func(txn *badger.Txn) error {
		// w afresh on each run: a run retried after a conflict must not
		// keep what an earlier run took from a record deleted since.
		w := r
		old, gerr := getRecipient(txn, r.ID)
		switch {
		case gerr == nil:
			prev, existed = old, true
			w.CreatedAt = old.CreatedAt
			w.Phase, w.Activity, w.ReminderEvery = old.Phase, old.Activity, old.ReminderEvery
		case errors.Is(gerr, ErrNotFound):
			prev, existed = RecipientRecord{}, false
		default:
			return gerr
		}
		return putRecipient(txn, w)
	})
	return prev, existed, err
}

// ReportPhase sets a recipient's phase and returns the record.
// ErrNotFound if the recipient does not exist: a report never creates one.
func (s *Badger) ReportPhase(ctx context.Context, id string, p Phase) (RecipientRecord, error) {
	p.ReportedAt = p.ReportedAt.UTC()
	return s.editRecipientKeyed(ctx, IdemOf(ctx), id, func(r *RecipientRecord) { r.Phase = &p })
}

// ReportActivity adds replies and toolCalls to a recipient's activity
// counts (saturating), sets its At, and returns the record. ErrNotFound if
// the recipient does not exist.
func (s *Badger) ReportActivity(ctx context.Context, id string, replies, toolCalls uint64, at time.Time) (RecipientRecord, error) {
	return s.editRecipientKeyed(ctx, IdemOf(ctx), id, func(r *RecipientRecord) {
		r.Activity.Add(replies, toolCalls, at)
	})
}

// SetReminder sets a recipient's reminder opt-in (zero: none) and returns
// the record. ErrNotFound if the recipient does not exist.
func (s *Badger) SetReminder(ctx context.Context, id string, every time.Duration) (RecipientRecord, error) {
	if every < 0 {
		return RecipientRecord{}, fmt.Errorf("store: reminder interval %s", every)
	}
	return s.editRecipient(ctx, id, func(r *RecipientRecord) { r.ReminderEvery = Duration(every) })
}

// editRecipient applies f to a stored recipient in one transaction.
func (s *Badger) editRecipient(ctx context.Context, id string, f func(*RecipientRecord)) (RecipientRecord, error) {
	return s.editRecipientKeyed(ctx, nil, id, f)
}

// editRecipientKeyed is editRecipient honouring idem, the idempotency key
// of the request it answers (nil: none).
func (s *Badger) editRecipientKeyed(ctx context.Context, idem *Idem, id string, f func(*RecipientRecord)) (RecipientRecord, error) {
	var out RecipientRecord
	err := s.update(ctx, func(txn *badger.Txn) error {
		if err := checkIdem(txn, idem); err != nil {
			return err
		}
		r, err := getRecipient(txn, id)
		if err != nil {
			return err
		}
		f(&r)
		out = r
		if err := putRecipient(txn, r); err != nil {
			return err
		}
		return keepIdem(txn, idem, r)
	})
	if err == nil {
		s.noteIdem(idem)
	}
	return out, err
}

func addSaturating(a, b uint64) uint64 {
	if a+b < a {
		return ^uint64(0)
	}
	return a + b
}

// EnsureRecipient returns the recipient, creating it running with a
// mailbox only if it does not exist.
func (s *Badger) EnsureRecipient(ctx context.Context, id string, now time.Time) (RecipientRecord, error) {
	// Almost always the recipient exists: a read transaction, no commit.
	if r, err := s.GetRecipient(ctx, id); err == nil {
		return r, nil
	}
	var out RecipientRecord
	err := s.update(ctx, func(txn *badger.Txn) error {
		r, err := getRecipient(txn, id)
		if err == nil {
			out = r
			return nil
		}
		if !errors.Is(err, ErrNotFound) {
			return err
		}
		if _, raw := txn.Get(recipientRecKey(id)); raw == nil {
			return err // present but held aside: never overwrite it
		}
		out = RecipientRecord{ID: id, Status: StatusRunning, CreatedAt: now.UTC(), UpdatedAt: now.UTC()}
		return putRecipient(txn, out)
	})
	return out, err
}

// ListRecipients returns every readable recipient, by id.
func (s *Badger) ListRecipients(ctx context.Context) ([]RecipientRecord, error) {
	var out []RecipientRecord
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: recipientRecPfx})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			id := string(it.Item().Key()[len(recipientRecPfx):])
			r, err := getRecipient(txn, id)
			if err != nil {
				continue
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// DeleteRecipient removes a recipient's record. Its mailbox stays until
// the retention prunes it. ErrNotFound if absent.
func (s *Badger) DeleteRecipient(ctx context.Context, id string) error {
	return s.update(ctx, func(txn *badger.Txn) error {
		if _, err := txn.Get(recipientRecKey(id)); errors.Is(err, badger.ErrKeyNotFound) {
			return ErrNotFound
		}
		return txn.Delete(recipientRecKey(id))
	})
}
