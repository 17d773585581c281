package lifecycle

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// One Run that returns ends the others' context, and Group returns once
// all have returned, with the first error.
func TestGroupStopsTogether(t *testing.T) {
	boom := errors.New("boom")
	var stopped atomic.Int32
	waiter := func(ctx context.Context) error {
		<-ctx.Done()
		time.Sleep(time.Millisecond) // returns after the failing one
		stopped.Add(1)
		return nil
	}
	err := Group(context.Background(), waiter, func(context.Context) error { return boom }, waiter)
	if !errors.Is(err, boom) || stopped.Load() != 2 {
		t.Fatalf("Group: %v with %d of 2 stopped, want boom once both stopped", err, stopped.Load())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Group(ctx, waiter); err != nil {
		t.Fatalf("Group after ctx ended: %v", err)
	}
}

// Stop ends the Run's context and returns its error once it returned,
// however many times it is called.
func TestGoStopsAndWaits(t *testing.T) {
	var returned atomic.Bool
	stop := Go(context.Background(), func(ctx context.Context) error {
		<-ctx.Done()
		returned.Store(true)
		return ctx.Err()
	})
	if err := stop(); !errors.Is(err, context.Canceled) || !returned.Load() {
		t.Fatalf("stop: %v, returned %v", err, returned.Load())
	}
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("a second stop: %v", err)
	}
}
