package natsstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/vigilhq/vigil/internal/natstest"
	"github.com/vigilhq/vigil/store/natsstore"
	"github.com/vigilhq/vigil/store/storetest"
)

// The JetStream backend passes the backend conformance suite that badger
// passes, on one embedded server, each subtest in a bucket of its own;
// reopening closes the store and opens the same bucket again, as a
// restart of the node would.
func TestBackendConformance(t *testing.T) {
	srv := natstest.Start(t)
	var mu sync.Mutex
	buckets := map[*natsstore.Store]string{} // guarded by mu
	n := 0                                   // guarded by mu
	openBucket := func(t *testing.T, bucket string) *natsstore.Store {
		t.Helper()
		s, err := natsstore.Open(context.Background(), natsstore.Config{URLs: []string{srv.ClientURL()}, Bucket: bucket})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		mu.Lock()
		buckets[s] = bucket
		mu.Unlock()
		return s
	}
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		mu.Lock()
		n++
		bucket := fmt.Sprintf("conformance_%d", n)
		mu.Unlock()
		return openBucket(t, bucket)
	}, storetest.Options{
		Reopen: func(t *testing.T, b storetest.Backend) storetest.Backend {
			s := b.(*natsstore.Store)
			mu.Lock()
			bucket := buckets[s]
			mu.Unlock()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return openBucket(t, bucket)
		},
	})
}
