package natsstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/vigilhq/vigil/store"
)

// The idempotency records (store's idem.go): the record under its
// principal and key, and the class's time index, whose entry names the
// record by the same two tokens.
func idemKey(principal, key string) string { return "ik." + tok(principal) + "." + tok(key) }

func idemAtKey(i *store.Idem) string {
	return "ia." + timeTok(i.At) + "." + tok(i.Principal) + "." + tok(i.Key)
}

// idemKeyOf is the key i's record is under, as a list for a transition's
// prefetch (none when i is nil).
func idemKeyOf(i *store.Idem) []string {
	if i == nil {
		return nil
	}
	return []string{idemKey(i.Principal, i.Key)}
}

// GetIdem reads principal's idempotency record under key:
// store.ErrNotFound when there is none.
func (s *Store) GetIdem(ctx context.Context, principal, key string) (store.IdemRecord, error) {
	var out store.IdemRecord
	err := s.view(ctx, func(t *txn) error {
		e, err := t.get(idemKey(principal, key))
		if err != nil {
			return err
		}
		if !e.exists {
			return fmt.Errorf("%w: idempotency key %q of %s", store.ErrNotFound, key, principal)
		}
		out, err = store.DecodeIdem(e.val)
		return err
	})
	return out, err
}

// checkIdem is the first step of a transition that honours an
// idempotency key: i (nil when the request carries none) checked against
// the record under its key (store.Idem.Check). The key is read, so the
// commit that writes the record expects it at the revision read: of two
// transitions under one key, one commits and the other runs again and
// finds the record.
func checkIdem(t *txn, i *store.Idem) error {
	if i == nil {
		return nil
	}
	e, err := t.get(idemKey(i.Principal, i.Key))
	if err != nil {
		return err
	}
	if !e.exists {
		return i.Check(nil)
	}
	return i.Check(e.val)
}

// keepIdem writes i's record of what the transition wrote, and its time
// index entry, in the transition's batch; nothing when i is nil.
func keepIdem(t *txn, i *store.Idem, written any) error {
	if i == nil {
		return nil
	}
	b, err := i.Record(written)
	if err != nil {
		return err
	}
	t.put(idemKey(i.Principal, i.Key), b)
	t.put(idemAtKey(i), nil)
	return nil
}

// noteIdem tells the retention of a committed idempotency record.
func (s *Store) noteIdem(i *store.Idem) {
	if i != nil {
		s.noteRetained(store.RetainedIdem, i.At)
	}
}

// dropIdem deletes the idempotency record an index entry
// ia.<time>.<principal>.<key> names, if it still carries the entry's
// time.
func dropIdem(t *txn, key string, at int64) error {
	parts := strings.Split(key, ".")
	if len(parts) != 4 {
		return fmt.Errorf("%w: idempotency index entry %q", store.ErrCorrupt, key)
	}
	rec := "ik." + parts[2] + "." + parts[3]
	e, err := t.get(rec)
	if err != nil || !e.exists {
		return err
	}
	r, err := store.DecodeIdem(e.val)
	if err != nil || atNanos(r.At) != at {
		return nil // unreadable, or rewritten since: not this entry's
	}
	t.del(rec)
	return nil
}
