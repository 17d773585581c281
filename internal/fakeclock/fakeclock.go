package fakeclock

import (
	"sync"
	"time"
)

// Clock is a clock at an instant the test sets.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// At is a clock standing at t.
func At(t time.Time) *Clock { return &Clock{now: t} }

// Now is the clock's instant.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// Add moves the clock on by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
