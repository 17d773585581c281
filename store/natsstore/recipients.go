package natsstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vigilhq/vigil/store"
)

// rc.<tok id> is a recipient's record.
func recipientRecKey(id string) string { return "rc." + tok(id) }

// getRecipient reads a recipient: store.ErrNotFound if absent or held
// aside; present tells the two apart.
func getRecipient(t *txn, id string) (r store.RecipientRecord, present bool, err error) {
	e, err := t.get(recipientRecKey(id))
	if err != nil {
		return r, false, err
	}
	if !e.exists {
		return r, false, store.ErrNotFound
	}
	r, err = store.DecodeRecipient(id, e.val)
	return r, true, err
}

func putRecipient(t *txn, r store.RecipientRecord) error {
	b, err := store.EncodeRecipient(r)
	if err != nil {
		return err
	}
	t.put(recipientRecKey(r.ID), b)
	return nil
}

// runningRecipient reads a recipient that must be running, and fences
// the commit on it: a pause or a stop committed meanwhile refuses the
// commit, which runs again and sees it. A *store.NotRunningError
// otherwise (absent included).
func runningRecipient(t *txn, rid string) (store.RecipientRecord, error) {
	rec, _, err := getRecipient(t, rid)
	t.fence(recipientRecKey(rid))
	if errors.Is(err, store.ErrNotFound) {
		return rec, &store.NotRunningError{Recipient: rid}
	}
	if err != nil {
		return rec, err
	}
	if rec.Status != store.StatusRunning {
		return rec, &store.NotRunningError{Recipient: rid, Status: rec.Status}
	}
	return rec, nil
}

// GetRecipient reads a recipient. store.ErrNotFound if absent.
func (s *Store) GetRecipient(ctx context.Context, id string) (store.RecipientRecord, error) {
	var r store.RecipientRecord
	err := s.view(ctx, func(t *txn) error {
		var err error
		r, _, err = getRecipient(t, id)
		return err
	})
	return r, err
}

// PutRecipient writes a recipient, keeping its creation time, phase,
// activity and reminder opt-in, and returns the record as it was before.
func (s *Store) PutRecipient(ctx context.Context, r store.RecipientRecord) (prev store.RecipientRecord, existed bool, err error) {
	if !r.Status.Valid() {
		return prev, false, fmt.Errorf("store: recipient status %q", r.Status)
	}
	err = s.update(ctx, "recipient", func(t *txn) error {
		w := r
		old, _, gerr := getRecipient(t, w.ID)
		switch {
		case gerr == nil:
			prev, existed = old, true
			w.CreatedAt = old.CreatedAt
			w.Phase, w.Activity, w.ReminderEvery = old.Phase, old.Activity, old.ReminderEvery
		case errors.Is(gerr, store.ErrNotFound):
			prev, existed = store.RecipientRecord{}, false
		default:
			return gerr
		}
		return putRecipient(t, w)
	})
	return prev, existed, err
}

// ReportPhase sets a recipient's phase. store.ErrNotFound if absent.
func (s *Store) ReportPhase(ctx context.Context, id string, p store.Phase) (store.RecipientRecord, error) {
	p.ReportedAt = p.ReportedAt.UTC()
	return s.editRecipientKeyed(ctx, store.IdemOf(ctx), id, func(r *store.RecipientRecord) { r.Phase = &p })
}

// ReportActivity adds to a recipient's activity counts (saturating) and
// sets its At. store.ErrNotFound if absent.
func (s *Store) ReportActivity(ctx context.Context, id string, replies, toolCalls uint64, at time.Time) (store.RecipientRecord, error) {
	return s.editRecipientKeyed(ctx, store.IdemOf(ctx), id, func(r *store.RecipientRecord) {
		r.Activity.Add(replies, toolCalls, at)
	})
}

// SetReminder sets a recipient's reminder opt-in (zero: none).
// store.ErrNotFound if absent.
func (s *Store) SetReminder(ctx context.Context, id string, every time.Duration) (store.RecipientRecord, error) {
	if every < 0 {
		return store.RecipientRecord{}, fmt.Errorf("store: reminder interval %s", every)
	}
	return s.editRecipient(ctx, id, func(r *store.RecipientRecord) { r.ReminderEvery = store.Duration(every) })
}

func (s *Store) editRecipient(ctx context.Context, id string, f func(*store.RecipientRecord)) (store.RecipientRecord, error) {
	return s.editRecipientKeyed(ctx, nil, id, f)
}

// editRecipientKeyed is editRecipient honouring idem, the idempotency key
// of the request it answers (nil: none).
func (s *Store) editRecipientKeyed(ctx context.Context, idem *store.Idem, id string, f func(*store.RecipientRecord)) (store.RecipientRecord, error) {
	var out store.RecipientRecord
	err := s.update(ctx, "recipient", func(t *txn) error {
		if idem != nil {
			if err := t.prefetch(append(idemKeyOf(idem), recipientRecKey(id))...); err != nil {
				return err
			}
		}
		if err := checkIdem(t, idem); err != nil {
			return err
		}
		r, _, err := getRecipient(t, id)
		if err != nil {
			return err
		}
		f(&r)
		out = r
		if err := putRecipient(t, r); err != nil {
			return err
		}
		return keepIdem(t, idem, r)
	})
	if err == nil {
		s.noteIdem(idem)
	}
	return out, err
}

// EnsureRecipient returns the recipient, creating it running only if it
// does not exist; a held-aside record is never overwritten.
func (s *Store) EnsureRecipient(ctx context.Context, id string, now time.Time) (store.RecipientRecord, error) {
	var out store.RecipientRecord
	err := s.update(ctx, "recipient", func(t *txn) error {
		r, present, err := getRecipient(t, id)
		if err == nil {
			out = r
			return nil
		}
		if present || !errors.Is(err, store.ErrNotFound) {
			return err
		}
		out = store.RecipientRecord{ID: id, Status: store.StatusRunning, CreatedAt: now.UTC(), UpdatedAt: now.UTC()}
		return putRecipient(t, out)
	})
	return out, err
}

// ListRecipients returns every readable recipient, by id.
func (s *Store) ListRecipients(ctx context.Context) ([]store.RecipientRecord, error) {
	keys, err := s.scan(ctx, "rc.>", false)
	if err != nil {
		return nil, err
	}
	var out []store.RecipientRecord
	for _, k := range keys {
		r, err := store.DecodeRecipient(k.key, k.val)
		if err != nil {
			continue
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b store.RecipientRecord) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// DeleteRecipient removes a recipient's record; its mailbox stays until
// the retention prunes it. store.ErrNotFound if absent.
func (s *Store) DeleteRecipient(ctx context.Context, id string) error {
	return s.update(ctx, "recipient", func(t *txn) error {
		e, err := t.get(recipientRecKey(id))
		if err != nil {
			return err
		}
		if !e.exists {
			return store.ErrNotFound
		}
		t.del(recipientRecKey(id))
		// A count of none goes with the record; a count of rows still
		// pending stays with them.
		c, err := t.get(pendingCountKey(id))
		if err != nil {
			return err
		}
		if c.exists && string(c.val) == "0" {
			t.del(pendingCountKey(id))
		}
		return nil
	})
}

// DisableWebhook marks the recipient's webhook disabled, with the
// reason, if its URL is still url. It returns whether it disabled one.
func (s *Store) DisableWebhook(ctx context.Context, rid, url, reason string, at time.Time) (bool, error) {
	var done bool
	err := s.update(ctx, "recipient", func(t *txn) error {
		done = false
		rec, _, err := getRecipient(t, rid)
		if errors.Is(err, store.ErrNotFound) {
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
		return putRecipient(t, rec)
	})
	return done, err
}

// CreateIfRunning writes a new row only if its recipient is running: the
// row's commit is fenced on the recipient's record, so a pause that
// commits first leaves no row, and one that commits after finds the row.
// A *store.NotRunningError if the recipient is not running or does not
// exist; store.ErrExists if the id is taken.
func (s *Store) CreateIfRunning(ctx context.Context, w store.Watch) error {
	if !w.State.Valid() || !w.Receipt.Valid() {
		return fmt.Errorf("store: create: state %q receipt %q", w.State, w.Receipt)
	}
	idem := store.IdemOf(ctx)
	err := s.update(ctx, "create-if-running", func(t *txn) error {
		if err := startCreate(t, w, append(idemKeyOf(idem), recipientRecKey(w.Recipient.ID))...); err != nil {
			return err
		}
		if err := checkIdem(t, idem); err != nil {
			return err
		}
		if _, err := runningRecipient(t, w.Recipient.ID); err != nil {
			return err
		}
		if err := createRow(t, w); err != nil {
			return err
		}
		return keepIdem(t, idem, w)
	})
	if err == nil {
		s.noteIdem(idem)
	}
	return err
}
