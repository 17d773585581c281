package host

import (
	"context"
	"testing"

	"github.com/vigilhq/vigil/host/core"
	"github.com/vigilhq/vigil/store"
)

// closeCounter is a backend that is badger underneath and counts its
// Close, standing for a second backend.
type closeCounter struct {
	core.Store
	closes int
}

func (c *closeCounter) Close() error { c.closes++; return c.Store.Close() }

// Config.OpenStore reaches the core: the host is built over the backend
// it opens, with no data directory, and closes it once; without either,
// New refuses.
func TestOpenStoreChoosesTheHostsBackend(t *testing.T) {
	ctx := context.Background()
	backend := &closeCounter{}
	h, err := New(ctx, Config{PluginCache: t.TempDir(), OpenStore: func(ctx context.Context) (core.Store, error) {
		st, err := store.Open(t.TempDir(), store.Options{})
		if err != nil {
			return nil, err
		}
		backend.Store = st
		return backend, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if h.Core.Store != core.Store(backend) {
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
