package core

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

// A core that cannot be built closes what it built: the store is not left
// open (a second open of the same directory succeeds).
func TestNewClosesWhatItBuiltOnAnError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	held, err := badger.OpenStore(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(context.Background(), Config{StoreDir: dir}); !errors.Is(err, store.ErrInUse) {
		t.Fatalf("a store in use: %v", err)
	}
	if err := held.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := New(context.Background(), Config{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if c.Registry == nil || c.Kinds == nil || c.Scheduler == nil || c.Recipients == nil || c.Delivery == nil || c.Outbox == nil {
		t.Fatalf("a core missing parts: %+v", c)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	if _, err := New(context.Background(), Config{}); err == nil {
		t.Fatal("no store directory: no error")
	}
}

// spyKV is an adapter that is badger underneath and counts what the
// core's store asks of it, standing for a second adapter.
type spyKV struct {
	store.KV
	pendingReads, closes int
}

func (s *spyKV) View(ctx context.Context, fn func(store.Tx) error) error {
	return s.KV.View(ctx, func(tx store.Tx) error { return fn(spyTx{tx, s}) })
}

func (s *spyKV) Close() error { s.closes++; return s.KV.Close() }

type spyTx struct {
	store.Tx
	s *spyKV
}

func (t spyTx) Scan(r store.Range, fn func(store.Key, []byte) (bool, error)) error {
	// The pending schedule: the due index's first window, which Prime
	// reads.
	if r.Prefix.Fam == store.FamDue {
		t.s.pendingReads++
	}
	return t.Tx.Scan(r, fn)
}

// OpenStore chooses the backend: the core is composed over the one it
// returns (its schedule is read from it, it is closed with the core), the
// StoreDir unused, and an error opening it is New's, wrapped.
func TestOpenStoreChoosesTheBackend(t *testing.T) {
	ctx := context.Background()
	spy := &spyKV{}
	var opened *store.Store
	c, err := New(ctx, Config{OpenStore: func(ctx context.Context) (*store.Store, error) {
		kv, err := badger.Open(t.TempDir(), badger.Options{})
		if err != nil {
			return nil, err
		}
		spy.KV = kv
		opened, err = store.New(ctx, spy)
		return opened, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Store != opened {
		t.Fatalf("the core's store is %T, not the one opened", c.Store)
	}
	if _, err := c.Prime(ctx); err != nil {
		t.Fatal(err)
	}
	if spy.pendingReads != 1 {
		t.Fatalf("Prime read the schedule from the backend %d times, want 1", spy.pendingReads)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if spy.closes != 1 {
		t.Fatalf("the backend was closed %d times, want 1", spy.closes)
	}

	refused := errors.New("no cluster")
	if _, err := New(ctx, Config{OpenStore: func(context.Context) (*store.Store, error) { return nil, refused }}); !errors.Is(err, refused) {
		t.Fatalf("an OpenStore error: %v", err)
	}
	// No store and no error: the components refuse to be built on none.
	if _, err := New(ctx, Config{OpenStore: func(context.Context) (*store.Store, error) { return nil, nil }}); err == nil {
		t.Fatal("OpenStore returning no store: no error")
	}
}
