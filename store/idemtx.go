package store

import (
	"context"
	"fmt"
)

// checkIdem is the first step of a write that honours an idempotency
// key: i (nil when the request carries none) checked against the record
// under its key (Idem.Check). The key is read, and written by keepIdem
// in the same transaction, so of two writes under one key at once one
// commits and the other runs again and finds the record.
func (t tx) checkIdem(i *Idem) error {
	if i == nil {
		return nil
	}
	v, ok, err := t.Get(kIdem(i.Principal, i.Key))
	if err != nil {
		return err
	}
	if !ok {
		return i.Check(nil)
	}
	return i.Check(v)
}

// keepIdem writes i's record of what the write wrote, and its time
// index entry; nothing when i is nil.
func (t tx) keepIdem(i *Idem, written any) error {
	if i == nil {
		return nil
	}
	b, err := i.Record(written)
	if err != nil {
		return err
	}
	t.Put(kIdem(i.Principal, i.Key), b)
	t.Put(kIdemAt(i), nil)
	return nil
}

// noteIdem tells the retention of a committed idempotency record.
func (s *Store) noteIdem(i *Idem) {
	if i != nil {
		s.noteRetained(RetainedIdem, i.At)
	}
}

// GetIdem reads principal's idempotency record under key: ErrNotFound
// when there is none.
func (s *Store) GetIdem(ctx context.Context, principal, key string) (IdemRecord, error) {
	var out IdemRecord
	err := s.view(ctx, func(t tx) error {
		v, ok, err := t.Get(kIdem(principal, key))
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: idempotency key %q of %s", ErrNotFound, key, principal)
		}
		out, err = DecodeIdem(v)
		return err
	})
	return out, err
}
