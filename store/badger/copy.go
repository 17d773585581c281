package badger

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/vigilhq/vigil/store"
)

// ExportKeys implements store.Copier: every key but the store version,
// in key order, from one read transaction (one instant of the store).
// A key of no family this build knows is store.ErrUnknownRecord: a copy
// stops on it rather than leave it behind.
func (s *KV) ExportKeys(ctx context.Context, fn func(store.Key, []byte) error) error {
	return s.open(func() error { return s.exportKeys(ctx, fn) })
}

func (s *KV) exportKeys(ctx context.Context, fn func(store.Key, []byte) error) error {
	return s.db.View(func(txn *badgerdb.Txn) error {
		it := txn.NewIterator(badgerdb.DefaultIteratorOptions)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			k := it.Item().Key()
			if bytes.Equal(k, versionKey) {
				continue
			}
			p, ok := parseKey(k)
			if !ok {
				return fmt.Errorf("%w: key %q", store.ErrUnknownRecord, k)
			}
			var v []byte
			if it.Item().ValueSize() > 0 {
				var err error
				if v, err = it.Item().ValueCopy(nil); err != nil {
					return err
				}
			}
			if err := fn(p.key(), v); err != nil {
				return err
			}
		}
		return nil
	})
}

// ImportKeys implements store.Copier: kvs in one transaction, or in
// halves when they are too large for one.
func (s *KV) ImportKeys(ctx context.Context, kvs []store.KeyValue) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.update(ctx, false, nil, func(txn *badgerdb.Txn) error {
		for _, kv := range kvs {
			k, err := keyOf(kv.Key)
			if err != nil {
				return err
			}
			if kv.Deleted {
				err = txn.Delete(k)
			} else {
				err = txn.Set(k, kv.Value)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}, nil, nil)
	if errors.Is(err, badgerdb.ErrTxnTooBig) && len(kvs) > 1 {
		if err := s.ImportKeys(ctx, kvs[:len(kvs)/2]); err != nil {
			return err
		}
		return s.ImportKeys(ctx, kvs[len(kvs)/2:])
	}
	return err
}

// OneWay implements store.Copier: badger keeps every name as it is.
func (s *KV) OneWay(string) (string, bool) { return "", false }
