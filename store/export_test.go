package store

import (
	"bytes"

	"github.com/dgraph-io/badger/v4"
)

// What the backend conformance suite (store/storetest) reaches badger
// through, for this package's external tests: its Options hooks.

// HoldAsideForTest writes, under w's id, the row a newer release would
// have written (a state and a field this build does not know), indexed
// under w's recipient and w's state, and returns its bytes.
func HoldAsideForTest(s *Badger, w Watch) ([]byte, error) {
	row := []byte(`{"v":2,"id":"` + w.ID.String() + `","kind":"phase_nudge","state":"snoozed","recipient":{"id":"` +
		w.Recipient.ID + `"},"nudged_at":"2026-11-30T12:00:00Z"}`)
	err := s.db.Update(func(txn *badger.Txn) error {
		if err := txn.Set(rowKey(w.ID), row); err != nil {
			return err
		}
		if err := txn.Set(stateKey(w.State, w.ID), nil); err != nil {
			return err
		}
		return txn.Set(recipientKey(w.Recipient.ID, w.ID), nil)
	})
	return row, err
}

// RowIsForTest reports whether id's row is stored as want, byte for byte.
func RowIsForTest(s *Badger, id ID, want []byte) (bool, error) {
	var got []byte
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(rowKey(id))
		if err != nil {
			return err
		}
		got, err = item.ValueCopy(nil)
		return err
	})
	return err == nil && bytes.Equal(got, want), err
}

// SetFailpointForTest sets the failpoint the multi-write transactions
// call between their writes (nil clears it).
func SetFailpointForTest(s *Badger, fn func(at string) error) { s.failpoint = fn }
