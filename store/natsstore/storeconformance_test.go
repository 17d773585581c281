package natsstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/vigilhq/vigil/internal/natstest"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/natsstore"
	"github.com/vigilhq/vigil/store/storetest"
)

// The store on JetStream passes the domain suite badger's passes, on one
// embedded server, each subtest in a bucket of its own; reopening closes
// the adapter and opens the same bucket again, as a restart of the node
// would.
func TestStoreConformance(t *testing.T) {
	srv := natstest.Start(t)
	var mu sync.Mutex
	buckets := map[store.KV]string{} // guarded by mu
	n := 0                           // guarded by mu
	openBucket := func(t *testing.T, bucket string) store.KV {
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
	storetest.RunKV(t, func(t *testing.T) store.KV {
		mu.Lock()
		n++
		bucket := fmt.Sprintf("domain_%d", n)
		mu.Unlock()
		return openBucket(t, bucket)
	}, func(t *testing.T, kv store.KV) store.KV {
		mu.Lock()
		bucket := buckets[kv]
		mu.Unlock()
		if err := kv.Close(); err != nil {
			t.Fatal(err)
		}
		return openBucket(t, bucket)
	})
}
