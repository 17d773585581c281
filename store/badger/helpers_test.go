package badger

import (
	"io"
	"testing"
	"time"

	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/storetest"
)

// The suite's epoch, and its ids from one seed.
var t0, newIDs = storetest.Epoch(), func() io.Reader { return storetest.IDs(1) }

// openStore opens the store over the badger adapter in dir, closed when
// the test ends.
func openStore(t testing.TB, dir string, opt Options) (*store.Store, *KV) {
	t.Helper()
	st, err := OpenStore(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st, st.KV().(*KV)
}

func openTest(t *testing.T, dir string) *store.Store {
	t.Helper()
	st, _ := openStore(t, dir, Options{})
	return st
}

// rawKey is k's key in badger.
func rawKey(k store.Key) []byte {
	b, err := keyOf(k)
	if err != nil {
		panic(err)
	}
	return b
}

func pendingWatch(t *testing.T, ids io.Reader, recipient string, at time.Time) store.Watch {
	t.Helper()
	return storetest.Pending(t, ids, recipient, at)
}

func makeRows(t *testing.T, n int) []store.Watch {
	t.Helper()
	ids := newIDs()
	rows := make([]store.Watch, n)
	for i := range rows {
		rows[i] = pendingWatch(t, ids, "agent-1", t0)
	}
	return rows
}

func runningRecipientFor(t *testing.T, s *store.Store, id, hook string) {
	t.Helper()
	storetest.Running(t, s, id, hook)
}
