package authz

import (
	"errors"
	"sync"
	"sync/atomic"
)

// ErrModeChange refuses a reload from tokens to none: the listener was
// bound for an authenticated API, and only a restart checks that a
// tokenless one binds to loopback.
var ErrModeChange = errors.New("a reload cannot remove every token (a server without tokens must bind to loopback only, which only a restart checks); restart to change it")

// Guard holds the policy in force and swaps it on a reload.
type Guard struct {
	mu  sync.Mutex // serializes Swap
	cur atomic.Pointer[Policy]
}

// NewGuard puts p in force.
func NewGuard(p *Policy) *Guard {
	g := &Guard{}
	g.cur.Store(p)
	return g
}

// Policy is the policy in force.
func (g *Guard) Policy() *Policy { return g.cur.Load() }

// Swap puts next in force. A token that next keeps with the same
// principal and grant keeps its Principal, so what it holds open goes on;
// every other principal of the old policy is revoked (its Revocation ends).
// It reports how many were revoked.
func (g *Guard) Swap(next *Policy) (revoked int, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	old := g.cur.Load()
	switch {
	case old.Open() && next.Open():
		return 0, nil
	case !old.Open() && next.Open():
		return 0, ErrModeChange
	}
	kept := map[*Principal]bool{}
	for sum, pr := range next.tokens {
		if was, ok := old.tokens[sum]; ok && was.fingerprint == pr.fingerprint {
			next.tokens[sum] = was
			kept[was] = true
		}
	}
	g.cur.Store(next)
	if old.local != nil {
		old.local.revoke()
		return 1, nil
	}
	for _, pr := range old.tokens {
		if !kept[pr] {
			pr.revoke()
			revoked++
		}
	}
	return revoked, nil
}
