package badger

import (
	"testing"

	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/kvtest"
)

// places are badger's: a directory each, synced writes.
func places() *kvtest.Places {
	return &kvtest.Places{
		Fresh: func(t *testing.T) string { return t.TempDir() },
		OpenAt: func(t *testing.T, dir string) store.KV {
			t.Helper()
			kv, err := Open(dir, Options{SyncWrites: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = kv.Close() })
			return kv
		},
	}
}

// The badger adapter keeps the seam's contract, reopening the same
// directory as a restart would.
func TestKVContract(t *testing.T) {
	p := places()
	kvtest.Run(t, p.Open, kvtest.Options{Reopen: p.Reopen})
}
