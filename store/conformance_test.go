package store_test

import (
	"sync"
	"testing"

	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/storetest"
)

// badger passes the backend conformance suite, with every hook given:
// held-aside rows, failpoints and reopening the same directory. The
// semantics every backend shares are pinned there, not here; this
// package's own tests keep what is badger's alone (its files, versions
// and row encoding, group commit, the time indexes and their floors, the
// older layouts of the pending index, the listing's budget).
func TestBackendConformance(t *testing.T) {
	var mu sync.Mutex
	dirs := map[*store.Badger]string{} // guarded by mu
	held := map[store.ID][]byte{}      // guarded by mu
	openAt := func(t *testing.T, dir string) *store.Badger {
		t.Helper()
		s, err := store.Open(dir, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		mu.Lock()
		dirs[s] = dir
		mu.Unlock()
		return s
	}
	badgerOf := func(t *testing.T, b storetest.Backend) *store.Badger {
		t.Helper()
		s, ok := b.(*store.Badger)
		if !ok {
			t.Fatalf("the backend is a %T", b)
		}
		return s
	}
	storetest.Run(t, func(t *testing.T) storetest.Backend { return openAt(t, t.TempDir()) }, storetest.Options{
		HoldAside: func(t *testing.T, b storetest.Backend, w store.Watch) {
			row, err := store.HoldAsideForTest(badgerOf(t, b), w)
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			held[w.ID] = row
			mu.Unlock()
		},
		StillHeld: func(t *testing.T, b storetest.Backend, id store.ID) bool {
			mu.Lock()
			want := held[id]
			mu.Unlock()
			ok, err := store.RowIsForTest(badgerOf(t, b), id, want)
			if err != nil {
				t.Log(err)
			}
			return ok
		},
		Failpoint: func(b storetest.Backend, fn func(at string) error) {
			store.SetFailpointForTest(b.(*store.Badger), fn)
		},
		Reopen: func(t *testing.T, b storetest.Backend) storetest.Backend {
			s := badgerOf(t, b)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			dir := dirs[s]
			mu.Unlock()
			return openAt(t, dir)
		},
	})
}
