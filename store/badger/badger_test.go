package badger

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/vigilhq/vigil/store"
)

// A store written by a newer release (a higher version in "v") is
// refused at Open.
func TestStoreVersion(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.db.Update(func(txn *badgerdb.Txn) error { return txn.Set(versionKey, []byte("2")) })
	_ = s.Close()
	if _, err := Open(dir, Options{}); !errors.Is(err, store.ErrStoreTooNew) || !strings.Contains(err.Error(), "version 2") {
		t.Fatalf("newer store: %v", err)
	}
}

// A directory another process holds is refused at once.
func TestSecondOpenIsInUse(t *testing.T) {
	dir := t.TempDir()
	_ = openTest(t, dir)
	if _, err := Open(dir, Options{}); !errors.Is(err, store.ErrInUse) {
		t.Fatalf("second open: %v", err)
	}
}

// A store whose files badger cannot read is refused as corrupt.
func TestCorruptFilesAreRefused(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenStore(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Create(context.Background(), pendingWatch(t, newIDs(), "a", t0))
	_ = s.Close()
	if err := os.WriteFile(filepath.Join(dir, "MANIFEST"), []byte("this is not a manifest"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("corrupt store: %v", err)
	}
}

// A transaction that loses its read to another writer on every run gives
// up after maxCommitAttempts runs with store.ErrBusy (wrapping badger's
// conflict), never badger's own error alone, so the API can answer it
// without knowing the adapter.
func TestACommitThatKeepsConflictingIsBusy(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := store.Key{Fam: store.FamMailSeq, Name: "contended"}
	runs := 0
	err = s.Update(context.Background(), store.TxOptions{Name: "loser"}, func(tx store.Tx) error {
		runs++
		if _, _, err := tx.Get(k); err != nil {
			return err
		}
		// Another writer changes the key between this read and the commit.
		if err := s.db.Update(func(other *badgerdb.Txn) error { return other.Set(rawKey(k), []byte{byte(runs)}) }); err != nil {
			return err
		}
		tx.Put(k, []byte("mine"))
		return nil
	})
	if !errors.Is(err, store.ErrBusy) || !errors.Is(err, badgerdb.ErrConflict) {
		t.Fatalf("a commit that lost every race: %v, want ErrBusy wrapping badger's conflict", err)
	}
	if runs != maxCommitAttempts {
		t.Errorf("it ran %d times, want %d", runs, maxCommitAttempts)
	}
}

// An import too large for one transaction is written in parts.
func TestImportSplitsATooLargeBatch(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	big := make([]byte, 64<<10)
	kvs := make([]store.KeyValue, 100) // 6.4 MB, past badger's transaction limit at a 16 MB memtable
	for i := range kvs {
		kvs[i] = store.KeyValue{Key: store.Key{Fam: store.FamRecipient, Name: string(rune('a'+i%26)) + string(rune('a'+i/26))}, Value: big}
	}
	if err := s.ImportKeys(context.Background(), kvs); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := s.ExportKeys(context.Background(), func(store.Key, []byte) error { n++; return nil }); err != nil || n != len(kvs) {
		t.Fatalf("exported %d of %d: %v", n, len(kvs), err)
	}
}

// A key of no family is refused, by the encoder and by an export that
// meets one.
func TestAKeyOfNoFamilyIsRefused(t *testing.T) {
	if _, err := keyOf(store.Key{Fam: "bogus"}); !errors.Is(err, store.ErrUnknownRecord) {
		t.Fatalf("a key of no family: %v", err)
	}
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_ = s.db.Update(func(txn *badgerdb.Txn) error { return txn.Set([]byte("zz/stray"), nil) })
	if err := s.ExportKeys(context.Background(), func(store.Key, []byte) error { return nil }); !errors.Is(err, store.ErrUnknownRecord) {
		t.Fatalf("an export meeting a stray key: %v", err)
	}
}
