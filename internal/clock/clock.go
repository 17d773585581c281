package clock

import (
	"context"
	"time"
)

// Clock is the time a component reads and waits on: Now for every
// decision, NewTimer for a loop's one timer, AfterFunc for a bound that
// ends work in flight, Sleep for a wait in line (a backoff, pacing).
type Clock interface {
	Now() time.Time
	// NewTimer is a timer whose channel receives once d has passed.
	NewTimer(d time.Duration) Timer
	// AfterFunc calls f in its own goroutine once d has passed, unless
	// the Timer is stopped first; its C is nil.
	AfterFunc(d time.Duration, f func()) Timer
	// Sleep returns after d, or with ctx's error when ctx ends first.
	Sleep(ctx context.Context, d time.Duration) error
}

// Timer is an armed timer.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it did.
	Stop() bool
	// Reset arms the timer again to fire d from now, dropping a value
	// its channel holds; it reports whether the timer was armed.
	Reset(d time.Duration) bool
}

// Wall is the real clock: the product's, and every component's default.
type Wall struct{}

func (Wall) Now() time.Time { return time.Now() }

func (Wall) NewTimer(d time.Duration) Timer { return wallTimer{time.NewTimer(d)} }

func (Wall) AfterFunc(d time.Duration, f func()) Timer { return wallTimer{time.AfterFunc(d, f)} }

func (Wall) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type wallTimer struct{ t *time.Timer }

func (w wallTimer) C() <-chan time.Time        { return w.t.C }
func (w wallTimer) Stop() bool                 { return w.t.Stop() }
func (w wallTimer) Reset(d time.Duration) bool { return w.t.Reset(d) }

// Or is c, or the wall clock when c is nil: a component's default.
func Or(c Clock) Clock {
	if c == nil {
		return Wall{}
	}
	return c
}

var _ Clock = Wall{}
