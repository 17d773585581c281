package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// badger's layout of the idempotency records (idem.go): the record under
// its principal and key, and the class's time index.
var (
	idemPfx   = []byte("ik/") // ik/<principal>\x00<key> -> the record
	idemAtPfx = []byte("ia/") // ia/<at><principal>\x00<key>
)

func idemName(principal, key string) []byte {
	return append(append(append([]byte{}, principal...), 0), key...)
}

func idemKey(principal, key string) []byte {
	return append(append([]byte{}, idemPfx...), idemName(principal, key)...)
}

func idemAtKey(at time.Time, principal, key string) []byte {
	return timeKey(idemAtPfx, at, idemName(principal, key))
}

// splitIdemName undoes idemName.
func splitIdemName(b []byte) (principal, key string, ok bool) {
	i := bytes.IndexByte(b, 0)
	if i <= 0 || i == len(b)-1 {
		return "", "", false
	}
	return string(b[:i]), string(b[i+1:]), true
}

// GetIdem reads principal's idempotency record under key: ErrNotFound
// when there is none.
func (s *Badger) GetIdem(ctx context.Context, principal, key string) (IdemRecord, error) {
	var out IdemRecord
	err := s.db.View(func(txn *badger.Txn) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		v, err := getValue(txn, idemKey(principal, key))
		if err != nil {
			return err
		}
		if v == nil {
			return fmt.Errorf("%w: idempotency key %q of %s", ErrNotFound, key, principal)
		}
		out, err = DecodeIdem(v)
		return err
	})
	return out, err
}

// getValue is key's value inside txn, nil when it is absent.
func getValue(txn *badger.Txn, key []byte) ([]byte, error) {
	item, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return item.ValueCopy(nil)
}

// checkIdem is the first step of a write that honours an idempotency
// key: i (nil when the request carries none) checked against the record
// under its key inside txn (Idem.Check). Reading the key inside the
// transaction makes a concurrent write under the same key a conflict:
// one commits, and the other runs again and finds its record.
func checkIdem(txn *badger.Txn, i *Idem) error {
	if i == nil {
		return nil
	}
	v, err := getValue(txn, idemKey(i.Principal, i.Key))
	if err != nil {
		return err
	}
	return i.Check(v)
}

// keepIdem writes i's record of what the write wrote, and its time
// index entry, inside txn; nothing when i is nil.
func keepIdem(txn *badger.Txn, i *Idem, written any) error {
	if i == nil {
		return nil
	}
	b, err := i.Record(written)
	if err != nil {
		return err
	}
	if err := txn.Set(idemKey(i.Principal, i.Key), b); err != nil {
		return err
	}
	return txn.Set(idemAtKey(i.At, i.Principal, i.Key), nil)
}

// noteIdem tells the retention of a committed idempotency record.
func (s *Badger) noteIdem(i *Idem) {
	if i != nil {
		s.noteRetained(RetainedIdem, i.At)
	}
}

// dropIdem deletes an idempotency record if it is still the one the
// index entry names.
func dropIdem(txn *badger.Txn, at int64, rest []byte) error {
	principal, key, ok := splitIdemName(rest)
	if !ok {
		return fmt.Errorf("%w: idempotency index entry", ErrCorrupt)
	}
	v, err := getValue(txn, idemKey(principal, key))
	if err != nil || v == nil {
		return err
	}
	r, err := DecodeIdem(v)
	if err != nil || atNanos(r.At) != at {
		return nil // unreadable or rewritten since: not this entry's to delete
	}
	return txn.Delete(idemKey(principal, key))
}
