package natsstore

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/kvtest"
)

// The JetStream adapter keeps the seam's contract, each subtest in a
// bucket of its own on one embedded server; reopening closes the
// connection and opens the same bucket again.
func TestKVContract(t *testing.T) {
	srv := runServer(t)
	var mu sync.Mutex
	buckets := map[store.KV]string{} // guarded by mu
	n := 0                           // guarded by mu
	openBucket := func(t *testing.T, bucket string) store.KV {
		t.Helper()
		s, err := Open(context.Background(), Config{URLs: []string{srv.ClientURL()}, Bucket: bucket})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		mu.Lock()
		buckets[s] = bucket
		mu.Unlock()
		return s
	}
	kvtest.Run(t, func(t *testing.T) store.KV {
		mu.Lock()
		n++
		bucket := fmt.Sprintf("kv_%d", n)
		mu.Unlock()
		return openBucket(t, bucket)
	}, kvtest.Options{
		Reopen: func(t *testing.T, kv store.KV) store.KV {
			mu.Lock()
			bucket := buckets[kv]
			mu.Unlock()
			if err := kv.Close(); err != nil {
				t.Fatal(err)
			}
			return openBucket(t, bucket)
		},
	})
}
