package store

import (
	"context"
	"errors"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

func runningRecipientFor(t *testing.T, s *Badger, id, hook string) {
	t.Helper()
	r := RecipientRecord{ID: id, Status: StatusRunning, CreatedAt: t0, UpdatedAt: t0}
	if hook != "" {
		r.Webhook = &Webhook{URL: hook, Secret: "whsec_x"}
	}
	if _, _, err := s.PutRecipient(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

func firedMessage(t *testing.T, ids seqReader) Message {
	t.Helper()
	id, err := NewID(t0, ids)
	if err != nil {
		t.Fatal(err)
	}
	return Message{ID: id, Kind: "timer", Type: MessageFired, Outcome: Outcome{Result: "fired"}, At: t0}
}

// TestACommitThatKeepsConflictingIsBusy: a transaction that loses its
// read to another writer on every run gives up after maxCommitAttempts
// runs with ErrBusy (wrapping badger's conflict), never badger's own
// error alone, so the API can answer it without knowing the backend.
func TestACommitThatKeepsConflictingIsBusy(t *testing.T) {
	s := openTest(t, t.TempDir())
	key := []byte("test-contended")
	runs := 0
	err := s.commit(context.Background(), nil, func(txn *badger.Txn) error {
		runs++
		if _, err := txn.Get(key); err != nil && !errors.Is(err, badger.ErrKeyNotFound) {
			return err
		}
		// Another writer changes the key between this read and the commit.
		if err := s.db.Update(func(other *badger.Txn) error { return other.Set(key, []byte{byte(runs)}) }); err != nil {
			return err
		}
		return txn.Set(key, []byte("mine"))
	}, nil)
	if !errors.Is(err, ErrBusy) || !errors.Is(err, badger.ErrConflict) {
		t.Fatalf("a commit that lost every race: %v, want ErrBusy wrapping badger's conflict", err)
	}
	if runs != maxCommitAttempts {
		t.Errorf("it ran %d times, want %d", runs, maxCommitAttempts)
	}
}
