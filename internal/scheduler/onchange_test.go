package scheduler

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/store"
)

// Each change the scheduler makes to a watch is told to OnChange as its
// own waiters are woken: a registration, each probe's end (one that wrote
// nothing too) and a cancel. Notify, for a change another node made,
// wakes the waiters and tells OnChange nothing.
func TestEveryChangeIsToldOnChange(t *testing.T) {
	h := newHarness(t)
	var mu sync.Mutex
	var told []store.ID
	h.onChange = func(id store.ID) {
		mu.Lock()
		told = append(told, id)
		mu.Unlock()
	}
	h.open()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(told)
	}
	w := h.register("ci")
	if count() != 1 {
		t.Fatalf("a registration told %d changes", count())
	}
	h.tick(t0)
	h.tick(t0.Add(30 * time.Second)) // the same answer: nothing written
	if count() != 3 {
		t.Fatalf("two probes told %d changes in all, want 3", count())
	}
	ch, release, err := h.s.WaitChange(w.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	h.s.Notify(w.ID)
	select {
	case <-ch:
	default:
		t.Fatal("Notify did not wake a waiter")
	}
	if count() != 3 {
		t.Fatal("Notify told OnChange")
	}
	if _, err := h.s.Cancel(context.Background(), w.ID, "test"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(told) != 4 || slices.IndexFunc(told, func(id store.ID) bool { return id != w.ID }) >= 0 {
		t.Fatalf("told %v, want %s four times", told, w.ID)
	}
}
