package badger_test

import (
	"sync"
	"testing"

	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
	"github.com/vigilhq/vigil/store/storetest"
)

// The store on badger passes the domain suite, reopening the same
// directory as a restart would.
func TestStoreConformance(t *testing.T) {
	var mu sync.Mutex
	dirs := map[store.KV]string{} // guarded by mu
	openAt := func(t *testing.T, dir string) store.KV {
		t.Helper()
		kv, err := badger.Open(dir, badger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = kv.Close() })
		mu.Lock()
		dirs[kv] = dir
		mu.Unlock()
		return kv
	}
	storetest.RunKV(t, func(t *testing.T) store.KV { return openAt(t, t.TempDir()) }, func(t *testing.T, kv store.KV) store.KV {
		if err := kv.Close(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		dir := dirs[kv]
		mu.Unlock()
		return openAt(t, dir)
	})
}
