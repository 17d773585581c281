package host

import (
	"context"
	"testing"

	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

// closeCounter is an adapter that is badger underneath and counts its
// Close, standing for a second one.
type closeCounter struct {
	store.KV
	closes int
}

func (c *closeCounter) Close() error { c.closes++; return c.KV.Close() }

// Config.OpenStore reaches the core: the host is built over the backend
// it opens, with no data directory, and closes it once; without either,
// New refuses.
func TestOpenStoreChoosesTheHostsBackend(t *testing.T) {
	ctx := context.Background()
	backend := &closeCounter{}
	var opened *store.Store
	h, err := New(ctx, Config{PluginCache: t.TempDir(), OpenStore: func(ctx context.Context) (*store.Store, error) {
		kv, err := badger.Open(t.TempDir(), badger.Options{})
		if err != nil {
			return nil, err
		}
		backend.KV = kv
		opened, err = store.New(ctx, backend)
		return opened, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	if h.Core.Store != opened || opened.KV() != store.KV(backend) {
		t.Fatalf("the host's store is %T, not the one opened", h.Core.Store)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if backend.closes != 1 {
		t.Fatalf("the backend was closed %d times, want 1", backend.closes)
	}
	if _, err := New(ctx, Config{PluginCache: t.TempDir()}); err == nil {
		t.Fatal("neither a data directory nor OpenStore: no error")
	}
}
