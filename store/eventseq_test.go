package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/vigilhq/vigil/store"
)

// A stream's last sequence counts every event appended, pruned ones
// included, and a repeat of a key counts nothing; another stream is its
// own.
func TestLastEventSeqCountsWhatWasAppended(t *testing.T) {
	s := openTest(t, t.TempDir())
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if n, err := s.LastEventSeq(ctx, "s"); err != nil || n != 0 {
		t.Fatalf("empty: %d %v", n, err)
	}
	for i := range 5 {
		if _, _, err := s.AppendEvent(ctx, store.Event{Stream: "s", Key: fmt.Sprint(i), Type: "t", OccurredAt: t0.Add(time.Duration(i) * time.Second), Payload: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, dup, err := s.AppendEvent(ctx, store.Event{Stream: "s", Key: "0", Type: "t", OccurredAt: t0, Payload: []byte(`{}`)}); err != nil || !dup {
		t.Fatalf("a repeat: %v %v", dup, err)
	}
	if _, err := s.PruneEvents(ctx, "s", t0.Add(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	if n, err := s.LastEventSeq(ctx, "s"); err != nil || n != 5 {
		t.Errorf("s: %d %v, want 5", n, err)
	}
	if n, _ := s.LastEventSeq(ctx, "other"); n != 0 {
		t.Errorf("other: %d", n)
	}
}
