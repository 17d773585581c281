package fakeclock

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func fired(tm interface{ C() <-chan time.Time }) bool {
	select {
	case <-tm.C():
		return true
	default:
		return false
	}
}

// A timer fires when the clock reaches it, not before, and not once
// stopped; a reset one fires at its new instant only, with what its
// channel held dropped.
func TestTimersFireWhenTheClockReachesThem(t *testing.T) {
	c := At(t0)
	a := c.NewTimer(time.Second)
	b := c.NewTimer(2 * time.Second)
	c.Add(999 * time.Millisecond)
	if fired(a) || fired(b) {
		t.Fatal("a timer fired before the clock reached it")
	}
	c.Add(time.Millisecond)
	if !fired(a) || fired(b) {
		t.Fatal("at 1 s: want the 1 s timer alone fired")
	}
	if !b.Stop() || b.Stop() {
		t.Fatal("Stop of a live timer reports true, then false")
	}
	c.Add(time.Hour)
	if fired(b) {
		t.Fatal("a stopped timer fired")
	}
	r := c.NewTimer(0)
	if !fired(r) {
		t.Fatal("a timer of no duration fires at once")
	}
	r = c.NewTimer(time.Second)
	c.Add(time.Second) // r fires, and its value waits in the channel
	r.Reset(time.Minute)
	if fired(r) {
		t.Fatal("Reset kept the value of the firing before it")
	}
	c.Add(59 * time.Second)
	if fired(r) {
		t.Fatal("a reset timer fired before its new instant")
	}
	c.Set(c.Now().Add(time.Second))
	if !fired(r) {
		t.Fatal("a reset timer did not fire at its new instant")
	}
	if got := c.Timers(); len(got) != 0 {
		t.Fatalf("live timers %v, want none", got)
	}
}

// An AfterFunc runs once the clock reaches it, and Add returns after it
// has; a stopped one never runs.
func TestAfterFuncRunsBeforeAddReturns(t *testing.T) {
	c := At(t0)
	var n atomic.Int32
	c.AfterFunc(time.Second, func() { n.Add(1) })
	stopped := c.AfterFunc(time.Second, func() { n.Add(10) })
	stopped.Stop()
	c.Add(time.Second)
	if got := n.Load(); got != 1 {
		t.Fatalf("calls %d, want the live one's alone", got)
	}
}

// A Sleep waits until the test moves the clock past it, or ctx ends.
func TestSleepWaitsForTheClock(t *testing.T) {
	c := At(t0)
	done := make(chan error, 1)
	go func() { done <- c.Sleep(context.Background(), time.Minute) }()
	c.AwaitTimer(t, time.Minute)
	select {
	case <-done:
		t.Fatal("Sleep returned before the clock moved")
	default:
	}
	c.Add(time.Minute)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- c.Sleep(ctx, time.Minute) }()
	c.AwaitTimer(t, time.Minute)
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Sleep after its ctx ended: %v", err)
	}
}

// On a clock made to AdvanceOnSleep, a Sleep moves the clock itself, in
// order, after OnSleep's hook, and records each duration.
func TestAdvanceOnSleepMovesTheClock(t *testing.T) {
	c := At(t0).AdvanceOnSleep()
	var hooks []int
	c.OnSleep(func(n int) { hooks = append(hooks, n) })
	for _, d := range []time.Duration{time.Second, 2 * time.Second} {
		if err := c.Sleep(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
	if !c.Now().Equal(t0.Add(3*time.Second)) || !slices.Equal(c.Sleeps(), []time.Duration{time.Second, 2 * time.Second}) || !slices.Equal(hooks, []int{1, 2}) {
		t.Fatalf("now %s, sleeps %v, hooks %v", c.Now(), c.Sleeps(), hooks)
	}
}

// OnArm's hook runs before the timer is armed: moving the clock there
// leaves the timer armed from the moved instant.
func TestOnArmRunsBeforeTheTimerIsArmed(t *testing.T) {
	c := At(t0)
	c.OnArm(func(time.Duration) { c.Add(time.Hour) })
	tm := c.NewTimer(time.Second)
	if got := c.Timers(); len(got) != 1 || !got[0].Equal(t0.Add(time.Hour+time.Second)) || fired(tm) {
		t.Fatalf("timers %v", got)
	}
}
