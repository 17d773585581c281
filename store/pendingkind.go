package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// The pending-by-kind index: pk/<kind>/<id>, a key with no value for each
// pending row, written in the transaction that makes the row pending
// (createRow) and deleted in the one that moves it out (rewriteRow), so
// CountPendingByKind reads keys alone. The id is the key's last 16 bytes,
// so a kind is read back whole whatever bytes it holds.

// pendingKindsMarker says the index covers every pending row: written by
// the backfill at Open once it has indexed the rows an older build wrote
// without an entry (and by a new store's first Open, which has none).
var pendingKindsMarker = []byte("pkv")

// pendingKindsBatch bounds how many pending rows one backfill transaction
// reads and indexes, so a large store's backfill never exceeds badger's
// transaction size.
const pendingKindsBatch = 1000

func pendingKindKey(kind string, id ID) []byte {
	k := make([]byte, 0, len(pendingKindPfx)+len(kind)+1+len(id))
	k = append(append(append(k, pendingKindPfx...), kind...), '/')
	return append(k, id[:]...)
}

// indexPendingKind writes (pending) or deletes w's entry inside txn.
func indexPendingKind(txn *badger.Txn, w Watch, pending bool) error {
	if !pending {
		return txn.Delete(pendingKindKey(w.Kind, w.ID))
	}
	if w.State != Pending {
		return nil
	}
	return txn.Set(pendingKindKey(w.Kind, w.ID), nil)
}

// CountPendingByKind counts the pending rows by kind from the
// pending-by-kind index's keys: no value is read and no row decoded. A
// held-aside row has no entry and is not counted.
func (s *Badger) CountPendingByKind(ctx context.Context) (map[string]int, error) {
	out := map[string]int{}
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: pendingKindPfx})
		defer it.Close()
		// The keys come sorted, so a kind's entries are one run: count
		// the run and make its kind a string once.
		var kind []byte
		run, n := 0, 0
		for it.Rewind(); it.Valid(); it.Next() {
			if n++; n%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			key := it.Item().Key()
			if len(key) < len(pendingKindPfx)+1+len(ID{}) {
				return fmt.Errorf("%w: pending-by-kind entry %x", ErrCorrupt, key)
			}
			k := key[len(pendingKindPfx) : len(key)-len(ID{})-1]
			if run > 0 && bytes.Equal(k, kind) {
				run++
				continue
			}
			if run > 0 {
				out[string(kind)] += run
			}
			kind, run = append(kind[:0], k...), 1
		}
		if run > 0 {
			out[string(kind)] += run
		}
		return ctx.Err()
	})
	return out, err
}

// backfillPendingKinds indexes, once, the pending rows an older build
// wrote with no pending-by-kind entry: when the marker is absent it walks
// the pending state index in batches of pendingKindsBatch, each its own
// transaction, reading each row's kind (a held-aside row, or an entry
// whose row is not pending, gets none), and writes the marker with the
// last batch. An interrupted backfill is run again whole at the next Open;
// writing an entry twice is harmless.
func (s *Badger) backfillPendingKinds(ctx context.Context) error {
	prefix := append(append(append([]byte{}, statePrefix...), Pending...), '/')
	seek := prefix
	for {
		done, next := false, []byte(nil)
		err := s.update(ctx, func(txn *badger.Txn) error {
			done, next = false, nil
			if _, err := txn.Get(pendingKindsMarker); err == nil {
				done = true
				return nil
			} else if !errors.Is(err, badger.ErrKeyNotFound) {
				return err
			}
			var ids []ID
			var last []byte
			it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
			for it.Seek(seek); it.Valid() && len(ids) < pendingKindsBatch; it.Next() {
				key := it.Item().Key()
				if len(key) != len(prefix)+len(ID{}) {
					continue
				}
				ids = append(ids, ID(key[len(prefix):]))
				last = it.Item().KeyCopy(nil)
			}
			it.Close()
			for _, id := range ids {
				w, err := readRow(txn, id)
				var ue *UnreadableError
				switch {
				case errors.Is(err, badger.ErrKeyNotFound), errors.As(err, &ue):
					continue // a dangling entry, or held aside: no entry
				case err != nil:
					return err
				}
				if err := indexPendingKind(txn, w, true); err != nil {
					return err
				}
			}
			if len(ids) < pendingKindsBatch {
				done = true
				return txn.Set(pendingKindsMarker, nil)
			}
			next = append(last, 0)
			return nil
		})
		if err != nil {
			return fmt.Errorf("store: indexing pending rows by kind: %w", err)
		}
		if done {
			return nil
		}
		seek = next
	}
}
