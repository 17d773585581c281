package fetch

import (
	"sync/atomic"
	"testing"
	"time"
)

// The watchdog fires when d passes without progress, not while paused,
// and never once stopped, whatever progress is reported after: a late
// sign of progress must not arm a timer that outlives the fetch.
func TestWatchdog(t *testing.T) {
	c := newFakeClock()
	var fired atomic.Int32
	w := newWatchdog(c, time.Second, func() { fired.Add(1) })
	step := func(d time.Duration, want int32) {
		t.Helper()
		c.Add(d)
		if got := fired.Load(); got != want {
			t.Fatalf("at %s: fired %d times, want %d", c.Now(), got, want)
		}
	}
	step(900*time.Millisecond, 0)
	w.progress()
	step(900*time.Millisecond, 0) // 1.8 s in, 0.9 s since the progress
	w.pause()
	step(5*time.Second, 0)
	w.progress()
	step(time.Second, 1)

	w.progress()
	w.stop()
	w.progress()
	step(time.Hour, 1)
}
