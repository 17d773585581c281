package natsstore

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/kvtest"
)

// places are buckets on one embedded server, a bucket each.
func places(t *testing.T, name string) *kvtest.Places {
	srv := runServer(t)
	var n atomic.Int64
	return &kvtest.Places{
		Fresh: func(*testing.T) string { return fmt.Sprintf("%s_%d", name, n.Add(1)) },
		OpenAt: func(t *testing.T, bucket string) store.KV {
			t.Helper()
			s, err := Open(context.Background(), Config{URLs: []string{srv.ClientURL()}, Bucket: bucket})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
	}
}

// The JetStream adapter keeps the seam's contract, each subtest in a
// bucket of its own; reopening closes the connection and opens the same
// bucket again.
func TestKVContract(t *testing.T) {
	p := places(t, "kv")
	kvtest.Run(t, p.Open, kvtest.Options{Reopen: p.Reopen})
}
