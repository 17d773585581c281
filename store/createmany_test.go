package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vigilhq/vigil/store"
)

// CreateMany writes what Create does, many rows a commit: each row, its
// recipient's count, its due index entry; a batch holding a taken id
// writes none of its rows.
func TestCreateManyWritesWhatCreateDoes(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	ids := newIDs()
	var ws []store.Watch
	for i := range 1200 { // more than one commit's worth
		w := pendingWatch(t, ids, []string{"agent-a", "agent-b", "agent-c"}[i%3], t0)
		w.NextCheck = t0.Add(time.Duration(i) * time.Second)
		ws = append(ws, w)
	}
	if err := s.CreateMany(ctx, ws); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"agent-a", "agent-b", "agent-c"} {
		if n, err := s.CountPending(ctx, r, 0); err != nil || n != 400 {
			t.Fatalf("%s: %d pending, %v; want 400", r, n, err)
		}
		if n := pendingOf(t, s, r); n != 400 {
			t.Fatalf("%s: %d pending rows listed; want 400", r, n)
		}
	}
	due := 0
	if _, err := s.ScanDue(ctx, store.DueQuery{Through: t0.Add(time.Hour)}, func(sc store.Schedule) error {
		if want := ws[due].NextCheck; !sc.Next.Equal(want) {
			t.Fatalf("due entry %d at %v; want %v", due, sc.Next, want)
		}
		due++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if due != len(ws) {
		t.Fatalf("%d due entries; want %d", due, len(ws))
	}

	fresh := pendingWatch(t, ids, "agent-a", t0)
	if err := s.CreateMany(ctx, []store.Watch{fresh, ws[0]}); !errors.Is(err, store.ErrExists) {
		t.Fatalf("a batch with a taken id: %v; want ErrExists", err)
	}
	if _, err := s.Get(ctx, fresh.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the batch's other row: %v; want none written", err)
	}
	if n, _ := s.CountPending(ctx, "agent-a", 0); n != 400 {
		t.Fatalf("agent-a: %d pending after a refused batch; want 400", n)
	}
}
