package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// getRecipient reads a recipient: ErrNotFound if absent or held aside;
// present tells the two apart.
func (t tx) getRecipient(id string) (r RecipientRecord, present bool, err error) {
	v, ok, err := t.Get(kRecipientRec(id))
	if err != nil {
		return r, false, err
	}
	if !ok {
		return r, false, ErrNotFound
	}
	r, err = DecodeRecipient(id, v)
	return r, true, err
}

func (t tx) putRecipient(r RecipientRecord) error {
	b, err := EncodeRecipient(r)
	if err != nil {
		return err
	}
	t.Put(kRecipientRec(r.ID), b)
	return nil
}

// GetRecipient reads a recipient. ErrNotFound if absent.
func (s *Store) GetRecipient(ctx context.Context, id string) (RecipientRecord, error) {
	var r RecipientRecord
	err := s.view(ctx, func(t tx) error {
		var err error
		r, _, err = t.getRecipient(id)
		return err
	})
	return r, err
}

// PutRecipient writes a recipient, keeping its creation time, its phase,
// activity and reminder opt-in (which only their own calls write, so a
// client replacing the record cannot erase a report or race one), and
// returns the record as it was before; existed is false for a new
// recipient.
func (s *Store) PutRecipient(ctx context.Context, r RecipientRecord) (prev RecipientRecord, existed bool, err error) {
	if !r.Status.Valid() {
		return prev, false, fmt.Errorf("store: recipient status %q", r.Status)
	}
	err = s.update(ctx, TxOptions{Name: "put-recipient"}, func(t tx) error {
		// w afresh on each run: a run after a lost race must not keep
		// what an earlier run took from a record deleted since.
		w := r
		old, _, gerr := t.getRecipient(r.ID)
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
		return t.putRecipient(w)
	})
	return prev, existed, err
}

// ReportPhase sets a recipient's phase and returns the record.
// ErrNotFound if the recipient does not exist: a report never creates one.
func (s *Store) ReportPhase(ctx context.Context, id string, p Phase) (RecipientRecord, error) {
	p.ReportedAt = p.ReportedAt.UTC()
	return s.editRecipient(ctx, IdemOf(ctx), id, func(r *RecipientRecord) { r.Phase = &p })
}

// ReportActivity adds replies and toolCalls to a recipient's activity
// counts (saturating), sets its At, and returns the record. ErrNotFound if
// the recipient does not exist.
func (s *Store) ReportActivity(ctx context.Context, id string, replies, toolCalls uint64, at time.Time) (RecipientRecord, error) {
	return s.editRecipient(ctx, IdemOf(ctx), id, func(r *RecipientRecord) {
		r.Activity.Add(replies, toolCalls, at)
	})
}

// SetReminder sets a recipient's reminder opt-in (zero: none) and returns
// the record. ErrNotFound if the recipient does not exist.
func (s *Store) SetReminder(ctx context.Context, id string, every time.Duration) (RecipientRecord, error) {
	if every < 0 {
		return RecipientRecord{}, fmt.Errorf("store: reminder interval %s", every)
	}
	return s.editRecipient(ctx, nil, id, func(r *RecipientRecord) { r.ReminderEvery = Duration(every) })
}

// editRecipient applies f to a stored recipient in one transaction,
// honouring idem, the idempotency key of the request it answers (nil:
// none).
func (s *Store) editRecipient(ctx context.Context, idem *Idem, id string, f func(*RecipientRecord)) (RecipientRecord, error) {
	var out RecipientRecord
	err := s.update(ctx, TxOptions{Name: "edit-recipient"}, func(t tx) error {
		if idem != nil {
			if err := t.Prefetch(kIdem(idem.Principal, idem.Key), kRecipientRec(id)); err != nil {
				return err
			}
		}
		if err := t.checkIdem(idem); err != nil {
			return err
		}
		r, _, err := t.getRecipient(id)
		if err != nil {
			return err
		}
		f(&r)
		out = r
		if err := t.putRecipient(r); err != nil {
			return err
		}
		return t.keepIdem(idem, r)
	})
	if err == nil {
		s.noteIdem(idem)
	}
	return out, err
}

// EnsureRecipient returns the recipient, creating it running with a
// mailbox only if it does not exist; a held-aside record is never
// overwritten.
func (s *Store) EnsureRecipient(ctx context.Context, id string, now time.Time) (RecipientRecord, error) {
	if !s.plan.Remote {
		// Almost always the recipient exists: a read, no commit.
		if r, err := s.GetRecipient(ctx, id); err == nil {
			return r, nil
		}
	}
	var out RecipientRecord
	err := s.update(ctx, TxOptions{Name: "ensure-recipient"}, func(t tx) error {
		r, present, err := t.getRecipient(id)
		if err == nil {
			out = r
			return nil
		}
		if present || !errors.Is(err, ErrNotFound) {
			return err // held aside: never overwrite it
		}
		out = RecipientRecord{ID: id, Status: StatusRunning, CreatedAt: now.UTC(), UpdatedAt: now.UTC()}
		return t.putRecipient(out)
	})
	return out, err
}

// ListRecipients returns every readable recipient, by id.
func (s *Store) ListRecipients(ctx context.Context) ([]RecipientRecord, error) {
	var out []RecipientRecord
	err := s.view(ctx, func(t tx) error {
		out = out[:0]
		return t.Scan(Range{Prefix: Key{Fam: FamRecipient}}, func(k Key, v []byte) (bool, error) {
			if err := ctx.Err(); err != nil {
				return false, err
			}
			if r, err := DecodeRecipient(k.Name, v); err == nil {
				out = append(out, r)
			}
			return true, nil
		})
	})
	// A name an adapter keeps one way sorts by its form there: by id.
	slices.SortFunc(out, func(a, b RecipientRecord) int { return strings.Compare(a.ID, b.ID) })
	return out, err
}

// DeleteRecipient removes a recipient's record; a count of no pending
// rows goes with it (one of rows still pending stays with them). Its
// mailbox stays until the retention prunes it. ErrNotFound if absent.
func (s *Store) DeleteRecipient(ctx context.Context, id string) error {
	return s.update(ctx, TxOptions{Name: "delete-recipient"}, func(t tx) error {
		if _, ok, err := t.Get(kRecipientRec(id)); err != nil {
			return err
		} else if !ok {
			return ErrNotFound
		}
		t.Delete(kRecipientRec(id))
		c, ok, err := t.Get(kPendingCount(id))
		if err != nil {
			return err
		}
		if ok && string(c) == "0" {
			t.Delete(kPendingCount(id))
		}
		return nil
	})
}
