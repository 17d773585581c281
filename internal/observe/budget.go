package observe

import (
	"math"
	"sync"
	"time"
)

// limit is one budget's shape: a bucket of size tokens refilled at rate
// tokens per second. A zero limit is no limit.
type limit struct {
	rate float64
	size float64
}

func (l limit) on() bool { return l.rate > 0 }

// bucket is one token bucket's state: tokens as of at.
type bucket struct {
	tokens float64
	at     time.Time
}

// level refills b to now and returns its tokens. A clock that stepped back
// refills nothing.
func (b *bucket) level(l limit, now time.Time) float64 {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = math.Min(l.size, b.tokens+d.Seconds()*l.rate)
		b.at = now
	}
	return b.tokens
}

// wait is how long until b holds a whole token again.
func (b *bucket) wait(l limit) time.Duration {
	return time.Duration(math.Ceil((1 - b.tokens) / l.rate * float64(time.Second)))
}

// runKey names a run's bucket: a run is its principal's, so a principal
// naming another's run id spends only its own run's budget.
type runKey struct{ principal, run string }

// minSweep is the number of run buckets below which none is swept.
const minSweep = 1024

// budgets are the recording budgets: one bucket per principal and one per
// run of each principal. A record spends one token of each, both or
// neither; a record that turns out to be a duplicate (or a conflict) gets
// them back, so only an accepted event spends budget.
//
// Run ids are the reporter's, so their buckets are bounded by a sweep: a
// bucket that has refilled to full is the same as a fresh one and is
// dropped. What is kept is the runs that spent within the last refill
// window (a minute for the default run budget), which the principal's own
// budget bounds in turn.
type budgets struct {
	principal, run limit

	mu         sync.Mutex // guards principals, runs and sweepAt
	principals map[string]*bucket
	runs       map[runKey]*bucket
	sweepAt    int // sweep when runs grows past this
}

func newBudgets(principal, run limit) *budgets {
	return &budgets{principal: principal, run: run, principals: map[string]*bucket{}, runs: map[runKey]*bucket{}, sweepAt: minSweep}
}

// refusal says which budget refused a record and how long to wait.
type refusal struct {
	run  bool // the run's budget; else the principal's
	wait time.Duration
}

// take spends one token of principal's budget and one of its run's, at
// now, or neither: it then says which budget is empty (the principal's
// when both are) and how long until both hold a token.
func (b *budgets) take(principal, run string, now time.Time) (refusal, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var pb, rb *bucket
	var ref refusal
	if b.principal.on() {
		if pb = b.principals[principal]; pb == nil {
			pb = &bucket{tokens: b.principal.size, at: now}
			b.principals[principal] = pb
		}
		if pb.level(b.principal, now) < 1 {
			ref.wait = pb.wait(b.principal)
		}
	}
	if b.run.on() {
		k := runKey{principal, run}
		if rb = b.runs[k]; rb == nil {
			b.sweep(now)
			rb = &bucket{tokens: b.run.size, at: now}
			b.runs[k] = rb
		}
		if rb.level(b.run, now) < 1 {
			ref.run = ref.wait == 0
			ref.wait = max(ref.wait, rb.wait(b.run))
		}
	}
	if ref.wait > 0 {
		return ref, false
	}
	if pb != nil {
		pb.tokens--
	}
	if rb != nil {
		rb.tokens--
	}
	return refusal{}, true
}

// refund gives back what take spent for a record that added nothing.
func (b *budgets) refund(principal, run string, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if pb := b.principals[principal]; pb != nil {
		pb.tokens = math.Min(b.principal.size, pb.level(b.principal, now)+1)
	}
	if rb := b.runs[runKey{principal, run}]; rb != nil {
		rb.tokens = math.Min(b.run.size, rb.level(b.run, now)+1)
	}
}

// sweep drops the run buckets that are full again, once the map has grown
// past sweepAt; then sweepAt is twice what is left (at least minSweep), so
// the sweeps cost O(1) per new run. b.mu is held.
func (b *budgets) sweep(now time.Time) {
	if len(b.runs) < b.sweepAt {
		return
	}
	for k, rb := range b.runs {
		if rb.level(b.run, now) >= b.run.size {
			delete(b.runs, k)
		}
	}
	b.sweepAt = max(minSweep, 2*len(b.runs))
}
