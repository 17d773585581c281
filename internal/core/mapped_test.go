package core

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/lifecycle"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

// trimSpyKV is a real badger KV whose TrimMapped answers err and counts
// its calls and the budgets they gave.
type trimSpyKV struct {
	*badger.KV
	calls   atomic.Int32
	budgets chan int64
	trimmed atomic.Int64 // what each call says it trimmed
	err     error
}

func (s *trimSpyKV) TrimMapped(budget int64) (badger.MappedTrim, error) {
	s.calls.Add(1)
	s.budgets <- budget
	return badger.MappedTrim{Trimmed: s.trimmed.Load()}, s.err
}

func trimCore(t *testing.T, spy *trimSpyKV) (*Core, *fakeclock.Clock) {
	t.Helper()
	clk := fakeclock.At(time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC))
	c, err := New(context.Background(), Config{Clock: clk, OpenStore: func(ctx context.Context) (*store.Store, error) {
		kv, err := badger.Open(t.TempDir(), badger.Options{})
		if err != nil {
			return nil, err
		}
		spy.KV = kv
		return store.New(ctx, spy)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, clk
}

// The core's loop asks the store to trim its mapped pages TrimSoon after
// it starts, then every TrimEvery while nothing was over the budget,
// with MappedBudget, and not before.
func TestTheCoreTrimsTheMappedTablesEveryTrimEvery(t *testing.T) {
	spy := &trimSpyKV{budgets: make(chan int64, 10)}
	c, clk := trimCore(t, spy)
	armed := make(chan time.Duration, 100)
	clk.OnArm(func(d time.Duration) { armed <- d })
	stop := lifecycle.Go(context.Background(), c.trimLoop)
	defer func() { _ = stop() }()
	for round := range 4 {
		want := TrimEvery
		if round == 0 {
			want = TrimSoon
		}
		if d := <-armed; d != want {
			t.Fatalf("look %d armed in %v, want %v", round+1, d, want)
		}
		clk.Add(want - time.Nanosecond)
		if n := spy.calls.Load(); n != int32(round) {
			t.Fatalf("before %v had passed: %d calls, want %d", want, n, round)
		}
		clk.Add(time.Nanosecond)
		if b := <-spy.budgets; b != MappedBudget {
			t.Fatalf("trimmed with a budget of %d, want MappedBudget (%d)", b, MappedBudget)
		}
	}
}

// A store that cannot trim is asked once, and never again.
func TestTheCoreStopsAskingAStoreThatCannotTrim(t *testing.T) {
	spy := &trimSpyKV{budgets: make(chan int64, 10), err: badger.ErrTrimUnsupported}
	c, clk := trimCore(t, spy)
	armed := make(chan struct{}, 10)
	clk.OnArm(func(time.Duration) { armed <- struct{}{} })
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- c.trimLoop(ctx) }()
	<-armed
	clk.Add(TrimSoon)
	<-spy.budgets
	// A loop that goes on arms its timer again at once.
	select {
	case <-armed:
		t.Fatalf("the loop armed its timer again after the store said it cannot trim (%d calls)", spy.calls.Load())
	case <-time.After(300 * time.Millisecond):
	}
	select {
	case err := <-done:
		t.Fatalf("the loop returned before its context ended (%v): it would stop the core", err)
	default:
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// A look that trimmed is followed by another TrimSoon later, while a
// compaction may still be mapping pages; one that found the budget kept
// waits TrimEvery again.
func TestTheCoreLooksAgainSoonAfterATrim(t *testing.T) {
	spy := &trimSpyKV{budgets: make(chan int64, 10)}
	c, clk := trimCore(t, spy)
	armed := make(chan time.Duration, 100)
	clk.OnArm(func(d time.Duration) { armed <- d })
	stop := lifecycle.Go(context.Background(), c.trimLoop)
	defer func() { _ = stop() }()
	if d := <-armed; d != TrimSoon {
		t.Fatalf("first look in %v, want TrimSoon", d)
	}
	spy.trimmed.Store(1 << 20)
	clk.Add(TrimSoon)
	<-spy.budgets
	if d := <-armed; d != TrimSoon {
		t.Fatalf("after a look that trimmed, the next in %v, want TrimSoon (%v)", d, TrimSoon)
	}
	spy.trimmed.Store(0)
	clk.Add(TrimSoon)
	<-spy.budgets
	if d := <-armed; d != TrimEvery {
		t.Fatalf("after a look within the budget, the next in %v, want TrimEvery (%v)", d, TrimEvery)
	}
}
