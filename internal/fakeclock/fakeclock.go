package fakeclock

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/clock"
)

// Clock is a clock.Clock at an instant the test sets. Its timers fire
// when the test moves it (Set, Add) or a Sleep does.
type Clock struct {
	// mu guards every field below.
	mu     sync.Mutex
	now    time.Time
	timers []*timer
	sleeps []time.Duration
	// armed is closed and replaced whenever a timer is armed.
	armed chan struct{}
	// onArm, when set, is called with each timer's duration before the
	// timer is armed, outside the lock: a test moves the clock there, as
	// another goroutine could between the component's reads of it.
	onArm func(d time.Duration)
	// onSleep, when set, is called with each Sleep's number (from 1)
	// before the sleep waits.
	onSleep func(n int)
	// moves makes a Sleep move the clock itself (AdvanceOnSleep).
	moves bool
}

var _ clock.Clock = (*Clock)(nil)

type timer struct {
	c   *Clock
	at  time.Time
	ch  chan time.Time // NewTimer's
	f   func()         // AfterFunc's
	off bool           // stopped or fired; guarded by c.mu
}

func (t *timer) C() <-chan time.Time { return t.ch }

func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.off
	t.off = true
	return was
}

// Reset arms t again for d from the clock's instant (at once when d is
// not positive), dropping a value its channel holds.
func (t *timer) Reset(d time.Duration) bool {
	c := t.c
	c.mu.Lock()
	was := !t.off
	t.off = true
	if t.ch != nil {
		select {
		case <-t.ch:
		default:
		}
	}
	c.mu.Unlock()
	c.arm(d, t)
	return was
}

// At is a clock standing at t.
func At(t time.Time) *Clock { return &Clock{now: t, armed: make(chan struct{})} }

// Now is the clock's instant.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t and fires the timers it reaches: an
// AfterFunc's call runs on its own goroutine, as the wall clock's does,
// and Set returns once the calls have returned.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.fire().Wait()
}

// Add moves the clock on by d and fires the timers it reaches, as Set.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.fire().Wait()
}

// NewTimer arms a timer that fires when the clock reaches now+d; at once
// when d is not positive.
func (c *Clock) NewTimer(d time.Duration) clock.Timer {
	return c.arm(d, &timer{ch: make(chan time.Time, 1)})
}

// AfterFunc arms f to run on its own goroutine when the clock reaches
// now+d; at once when d is not positive.
func (c *Clock) AfterFunc(d time.Duration, f func()) clock.Timer {
	return c.arm(d, &timer{f: f})
}

// Sleep waits until the clock reaches now+d (the test moves it) or ctx
// ends, as the wall clock's does. On a clock made to AdvanceOnSleep it
// moves the clock on by d itself and returns once the AfterFunc calls it
// reached have returned: with ctx's error if one of them ended it, as a
// real sleep that a timer interrupts does. It records d (Sleeps).
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	n, hook, moves := len(c.sleeps), c.onSleep, c.moves
	c.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	if !moves {
		t := c.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C():
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.fire().Wait()
	return ctx.Err()
}

// AdvanceOnSleep makes each Sleep move the clock on by its duration at
// once, for a test of code that sleeps in line (pacing, a start's
// backoff) with nothing else reading the clock; it returns c.
func (c *Clock) AdvanceOnSleep() *Clock {
	c.mu.Lock()
	c.moves = true
	c.mu.Unlock()
	return c
}

// Sleeps are the durations Sleep was called with, in order.
func (c *Clock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// OnArm makes f be called with each timer's duration before it is armed.
func (c *Clock) OnArm(f func(d time.Duration)) {
	c.mu.Lock()
	c.onArm = f
	c.mu.Unlock()
}

// OnSleep makes f be called with each Sleep's number (from 1) before the
// sleep waits.
func (c *Clock) OnSleep(f func(n int)) {
	c.mu.Lock()
	c.onSleep = f
	c.mu.Unlock()
}

// Armed is closed when a timer is next armed.
func (c *Clock) Armed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.armed
}

// Timers are the instants the live timers fire at.
func (c *Clock) Timers() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Time
	for _, t := range c.timers {
		if !t.off {
			out = append(out, t.at)
		}
	}
	return out
}

// AwaitTimer waits until a live timer fires at exactly now+d: one armed
// at the clock's present instant for d. It fails t after ten seconds.
func (c *Clock) AwaitTimer(t testing.TB, d time.Duration) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		want := c.now.Add(d)
		for _, tm := range c.timers {
			if !tm.off && tm.at.Equal(want) {
				c.mu.Unlock()
				return
			}
		}
		armed := c.armed
		c.mu.Unlock()
		select {
		case <-armed:
		case <-deadline:
			t.Fatalf("fakeclock: no timer armed for %s at %s", d, c.Now())
		}
	}
}

func (c *Clock) arm(d time.Duration, t *timer) clock.Timer {
	c.mu.Lock()
	hook := c.onArm
	c.mu.Unlock()
	if hook != nil {
		hook(d)
	}
	c.mu.Lock()
	t.c, t.at, t.off = c, c.now.Add(d), false
	live := c.timers[:0]
	for _, o := range c.timers {
		if !o.off && o != t {
			live = append(live, o)
		}
	}
	c.timers = append(live, t)
	close(c.armed)
	c.armed = make(chan struct{})
	if d <= 0 {
		c.fire()
		return t
	}
	c.mu.Unlock()
	return t
}

// fire fires the timers the clock has reached and unlocks mu; the
// WaitGroup is done when the AfterFunc calls have returned. The caller
// holds mu.
func (c *Clock) fire() *sync.WaitGroup {
	var due []func()
	live := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.off:
		case !t.at.After(c.now):
			t.off = true
			if t.f != nil {
				due = append(due, t.f)
			} else {
				t.ch <- c.now
			}
		default:
			live = append(live, t)
		}
	}
	c.timers = live
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, f := range due {
		wg.Go(f)
	}
	return &wg
}
