package watchwait

import (
	"errors"
	"sync"

	"github.com/vigilhq/vigil/store"
)

// DefaultLimit is how many waiters a Notifier holds at once when New is
// given no bound.
const DefaultLimit = 10_000

// ErrTooManyWaiters refuses a waiter past the Notifier's bound.
var ErrTooManyWaiters = errors.New("watchwait: too many waiters")

// Notifier wakes the waiters on a watch when it changes.
type Notifier struct {
	limit int
	// mu guards byID and waiters.
	mu sync.Mutex
	// byID is the channel the next change of a watch closes, and how many
	// waiters hold it; present only while one does.
	byID map[store.ID]*slot
	// waiters is how many waiters hold a channel, across all watches.
	waiters int
}

type slot struct {
	ch chan struct{}
	n  int
}

// New builds a Notifier that holds at most limit waiters at once
// (DefaultLimit when limit <= 0).
func New(limit int) *Notifier {
	if limit <= 0 {
		limit = DefaultLimit
	}
	return &Notifier{limit: limit, byID: map[store.ID]*slot{}}
}

// Wait returns the channel the next change of id closes, and release,
// which the waiter must call once it stops waiting (after a wake or not).
// Take it before reading the watch. ErrTooManyWaiters when the bound is
// reached; then there is nothing to release.
func (n *Notifier) Wait(id store.ID) (<-chan struct{}, func(), error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.waiters >= n.limit {
		return nil, nil, ErrTooManyWaiters
	}
	s := n.byID[id]
	if s == nil {
		s = &slot{ch: make(chan struct{})}
		n.byID[id] = s
	}
	s.n++
	n.waiters++
	var once sync.Once
	return s.ch, func() { once.Do(func() { n.release(id, s) }) }, nil
}

func (n *Notifier) release(id store.ID, s *slot) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.waiters--
	s.n--
	if s.n == 0 && n.byID[id] == s {
		delete(n.byID, id)
	}
}

// Changed wakes every waiter on id. It never blocks on a waiter.
func (n *Notifier) Changed(id store.ID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if s := n.byID[id]; s != nil {
		close(s.ch)
		delete(n.byID, id)
	}
}

// Waiters is how many waiters hold a channel now.
func (n *Notifier) Waiters() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.waiters
}

// watches is how many watches have waiters now (for the tests).
func (n *Notifier) watches() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.byID)
}
