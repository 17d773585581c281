package badger

import (
	"sync"
	"testing"

	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/kvtest"
)

// The badger adapter keeps the seam's contract, reopening the same
// directory as a restart would.
func TestKVContract(t *testing.T) {
	var mu sync.Mutex
	dirs := map[store.KV]string{} // guarded by mu
	openAt := func(t *testing.T, dir string) store.KV {
		t.Helper()
		kv, err := Open(dir, Options{SyncWrites: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = kv.Close() })
		mu.Lock()
		dirs[kv] = dir
		mu.Unlock()
		return kv
	}
	kvtest.Run(t, func(t *testing.T) store.KV { return openAt(t, t.TempDir()) }, kvtest.Options{
		Reopen: func(t *testing.T, kv store.KV) store.KV {
			if err := kv.Close(); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			dir := dirs[kv]
			mu.Unlock()
			return openAt(t, dir)
		},
	})
}
