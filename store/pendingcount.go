package store

import "sync"

// pendingCounts caches each recipient's count of pending watches, so the
// bound on them (the recipients' MaxPending) does not walk the recipient's
// rows at every registration: the walk is as long as the recipient's
// pending and retained rows together, and a profile of registration put a
// third of the handler's time in it. The commits that make a row pending
// or end its pendingness keep the count; a commit racing a recount can
// leave it off by one, so CountPending trusts it only away from the bound
// and counts exactly near it. A recipient not seen since the store opened
// has no count until its first exact walk.
type pendingCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func newPendingCounts() *pendingCounts { return &pendingCounts{n: map[string]int{}} }

// add moves a known recipient's count by d.
func (p *pendingCounts) add(recipient string, d int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.n[recipient]; ok {
		p.n[recipient] = max(c+d, 0)
	}
}

func (p *pendingCounts) get(recipient string) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.n[recipient]
	return c, ok
}

func (p *pendingCounts) set(recipient string, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n[recipient] = n
}

// recountMargin is how near the bound a cached count must be for
// CountPending to count exactly instead.
func recountMargin(upTo int) int { return max(upTo/16, 32) }
