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
