package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// Writers and readers share a Buffer without a race (go test -race) and
// without losing a write.
func TestConcurrentWritesAndReads(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("x"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("x", 800) {
		t.Fatalf("%d bytes, want 800", len(got))
	}
	b.Reset()
	if b.String() != "" {
		t.Fatal("Reset kept bytes")
	}
}
