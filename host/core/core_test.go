package core

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/vigilhq/vigil/store"
)

// A core that cannot be built closes what it built: the store is not left
// open (a second open of the same directory succeeds).
func TestNewClosesWhatItBuiltOnAnError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	held, err := store.Open(dir, store.Options{})
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

// spyStore is a backend that is badger underneath and counts what the
// core asks of it, standing for a second backend.
type spyStore struct {
	Store
	pendingReads, closes int
}

func (s *spyStore) ForEachPending(ctx context.Context, fn func(store.Schedule) error) (int, error) {
	s.pendingReads++
	return s.Store.ForEachPending(ctx, fn)
}

func (s *spyStore) Close() error { s.closes++; return s.Store.Close() }

// OpenStore chooses the backend: the core is composed over the one it
// returns (its schedule is read from it, it is closed with the core), the
// StoreDir unused, and an error opening it is New's, wrapped.
func TestOpenStoreChoosesTheBackend(t *testing.T) {
	ctx := context.Background()
	spy := &spyStore{}
	c, err := New(ctx, Config{OpenStore: func(ctx context.Context) (Store, error) {
		st, err := OpenBadger(t.TempDir(), store.Options{})(ctx)
		spy.Store = st
		return spy, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Store != Store(spy) {
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
	if _, err := New(ctx, Config{OpenStore: func(context.Context) (Store, error) { return nil, refused }}); !errors.Is(err, refused) {
		t.Fatalf("an OpenStore error: %v", err)
	}
	if _, err := New(ctx, Config{OpenStore: func(context.Context) (Store, error) { return nil, nil }}); err == nil {
		t.Fatal("OpenStore returning no store: no error")
	}
}
