package observe

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"pgregory.net/rapid"
)

// An observer rereading its source reports what it reported before: those
// repeats are duplicates, never 429, however spent its budget is, and they
// spend nothing, so the next new item is still accepted.
func TestADuplicateSpendsNoBudget(t *testing.T) {
	for _, tt := range []struct {
		name string
		opt  func(*Options)
	}{
		{"principal budget", func(o *Options) { o.Rate, o.Burst, o.RunPerMinute = 0.001, 2, -1 }},
		{"run budget", func(o *Options) { o.Rate, o.RunPerMinute = -1, 2 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, helpConfig("watcher"), tt.opt)
			first := r.mustRecord("watcher", Record{Item: "m0", Thread: "T", Text: "a", Run: "read-1"})
			// With budget left, repeats and a conflict spend none of it.
			for range 5 {
				if got := r.mustRecord("watcher", Record{Item: "m0", Thread: "T", Text: "a", Run: "read-1"}); !got.Duplicate || got.Event.Seq != first.Event.Seq {
					t.Fatalf("repeat: %+v", got)
				}
			}
			_, err := r.record("watcher", Record{Item: "m0", Thread: "T", Text: "edited", Run: "read-1"})
			wantCode(t, err, api.CodeOnceConflict)
			r.mustRecord("watcher", Record{Item: "m1", Thread: "T", Text: "b", Run: "read-1"})
			// The budget is spent: a new item is refused, a repeat still is
			// a duplicate, and a conflict still a conflict.
			_, err = r.record("watcher", Record{Item: "m2", Thread: "T", Run: "read-1"})
			wantCode(t, err, api.CodeRateLimited)
			for _, item := range []string{"m0", "m1"} {
				text := map[string]string{"m0": "a", "m1": "b"}[item]
				got, err := r.record("watcher", Record{Item: item, Thread: "T", Text: text, Run: "read-1"})
				if err != nil || !got.Duplicate || got.ThreadKey != "observe/support/slack-help/T" {
					t.Fatalf("repeat of %s over budget: %+v %v", item, got, err)
				}
			}
			_, err = r.record("watcher", Record{Item: "m1", Thread: "T", Text: "edited", Run: "read-1"})
			wantCode(t, err, api.CodeOnceConflict)
		})
	}
}

// Repeats racing the first record of an item spend, once all are
// answered, exactly the one token of the event they made.
func TestConcurrentRepeatsSpendOneToken(t *testing.T) {
	r := newRig(t, helpConfig("watcher"), func(o *Options) { o.Rate, o.Burst = 0.001, 3 })
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = r.record("watcher", Record{Item: "m0", Thread: "T", Text: "a"}) // a duplicate, or 429 while the first is in flight
		}()
	}
	wg.Wait()
	r.mustRecord("watcher", Record{Item: "m1", Thread: "T"})
	r.mustRecord("watcher", Record{Item: "m2", Thread: "T"})
	_, err := r.record("watcher", Record{Item: "m3", Thread: "T"})
	wantCode(t, err, api.CodeRateLimited)
}

// The per-minute budget applies per run of a principal: a run over it is
// refused saying so, while the principal's other runs, its unnamed run and
// another principal's run of the same name keep their own; it refills at
// its rate.
func TestRecordingIsBudgetedPerRun(t *testing.T) {
	r := newRig(t, helpConfig("watcher", "script"), func(o *Options) { o.Rate, o.RunPerMinute = -1, 3 })
	for i := range 3 {
		r.mustRecord("watcher", Record{Item: fmt.Sprint("a", i), Thread: "T", Run: "nightly@1"})
	}
	_, err := r.record("watcher", Record{Item: "a3", Thread: "T", Run: "nightly@1"})
	e := wantCode(t, err, api.CodeRateLimited)
	if e.RetryAfter < 19900*time.Millisecond || e.RetryAfter > 20*time.Second || !strings.Contains(e.Message, `run "nightly@1"`) {
		t.Fatalf("refusal: %v, retry after %s", e, e.RetryAfter)
	}
	r.mustRecord("watcher", Record{Item: "b0", Thread: "T", Run: "nightly@2"})
	r.mustRecord("watcher", Record{Item: "c0", Thread: "T"})
	r.mustRecord("script", Record{Item: "d0", Thread: "T", Run: "nightly@1"})
	r.clock.Add(20*time.Second - time.Nanosecond)
	_, err = r.record("watcher", Record{Item: "a3", Thread: "T", Run: "nightly@1"})
	wantCode(t, err, api.CodeRateLimited)
	r.clock.Add(time.Nanosecond)
	r.mustRecord("watcher", Record{Item: "a3", Thread: "T", Run: "nightly@1"})

	// Records that name no run are one run of their principal (c0's token
	// is back by now).
	for i := range 3 {
		r.mustRecord("watcher", Record{Item: fmt.Sprint("c", i+1), Thread: "T"})
	}
	_, err = r.record("watcher", Record{Item: "c4", Thread: "T"})
	if e := wantCode(t, err, api.CodeRateLimited); !strings.Contains(e.Message, "unnamed run") {
		t.Fatalf("refusal: %v", e)
	}
}

// A record spends its principal's budget and its run's, both or neither:
// one refused by its run's budget leaves the principal's intact.
func TestBothBudgetsOrNeither(t *testing.T) {
	r := newRig(t, helpConfig("watcher"), func(o *Options) { o.Rate, o.Burst, o.RunPerMinute = 0.001, 2, 1 })
	r.mustRecord("watcher", Record{Item: "m1", Thread: "T", Run: "a"})
	_, err := r.record("watcher", Record{Item: "m2", Thread: "T", Run: "a"})
	if e := wantCode(t, err, api.CodeRateLimited); !strings.Contains(e.Message, `run "a"`) {
		t.Fatalf("refusal: %v", e)
	}
	r.mustRecord("watcher", Record{Item: "m3", Thread: "T", Run: "b"})
	_, err = r.record("watcher", Record{Item: "m4", Thread: "T", Run: "c"})
	if e := wantCode(t, err, api.CodeRateLimited); !strings.Contains(e.Message, "recording rate") || e.RetryAfter < time.Minute {
		t.Fatalf("refusal: %v, retry after %s", e, e.RetryAfter)
	}
	// Both budgets empty: the refusal names the principal's, which the
	// reporter cannot escape by naming another run.
	_, err = r.record("watcher", Record{Item: "m5", Thread: "T", Run: "a"})
	if e := wantCode(t, err, api.CodeRateLimited); !strings.Contains(e.Message, "recording rate") {
		t.Fatalf("refusal with both budgets empty: %v", e)
	}
}

// A clock that steps back refills nothing and takes nothing away: the
// bucket keeps its tokens as of the latest instant it saw.
func TestBudgetClockSteppingBack(t *testing.T) {
	b := newBudgets(limit{rate: 1, size: 2}, limit{})
	later := t0.Add(time.Minute)
	if _, ok := b.take("w", "", later); !ok {
		t.Fatal("the first take was refused")
	}
	if ref, ok := b.take("w", "", t0); !ok {
		t.Fatalf("a take a minute back was refused (wait %s): the step back cost tokens", ref.wait)
	}
	if _, ok := b.take("w", "", later); ok {
		t.Fatal("a third take from a bucket of two: the step back refilled it")
	}
}

// Sweeps are amortized: none below minSweep run buckets, and after one
// the next waits until the map has doubled what it kept.
func TestRunBudgetSweepsAreAmortized(t *testing.T) {
	b := newBudgets(limit{}, limit{rate: 1.0 / 3600, size: 1})
	for i := range minSweep - 1 {
		b.take("w", fmt.Sprint("old-", i), t0)
	}
	full := t0.Add(2 * time.Hour) // every old bucket is full again
	b.take("w", "new-0", full)
	if n := len(b.runs); n != minSweep {
		t.Fatalf("%d run buckets below the sweep threshold, want all %d kept", n, minSweep)
	}
	b.take("w", "new-1", full) // at the threshold: the full ones go
	if n := len(b.runs); n != 2 || b.sweepAt != minSweep {
		t.Fatalf("after a sweep: %d buckets, next sweep at %d; want 2 and %d", n, b.sweepAt, minSweep)
	}
	for i := range minSweep {
		b.take("w", fmt.Sprint("busy-", i), full) // none refills: the sweep at minSweep keeps them all
	}
	if b.sweepAt != 2*minSweep || len(b.runs) != minSweep+2 {
		t.Fatalf("%d buckets, next sweep at %d; want %d and %d", len(b.runs), b.sweepAt, minSweep+2, 2*minSweep)
	}
}

// Run ids are the reporter's, so their buckets must not pile up: a bucket
// full again is dropped, while one that spent within its window is kept.
func TestRunBudgetsAreSwept(t *testing.T) {
	r := newRig(t, helpConfig("watcher"), func(o *Options) { o.Rate, o.RunPerMinute = -1, 60 })
	for i := range 60 {
		r.mustRecord("watcher", Record{Item: fmt.Sprint("hot", i), Thread: "T", Run: "hot"})
	}
	for i := range 3 * minSweep {
		r.mustRecord("watcher", Record{Item: fmt.Sprint("m", i), Thread: "T", Run: fmt.Sprint("run-", i)})
		r.clock.Add(10 * time.Millisecond) // a run's one token is back within a second
	}
	if n := len(r.ob.budgets.runs); n > minSweep {
		t.Fatalf("%d run budgets kept, want at most %d", n, minSweep)
	}
	// hot spent its whole minute 30 s ago: half of it is back, not all.
	for i := range 30 {
		r.mustRecord("watcher", Record{Item: fmt.Sprint("hot-again", i), Thread: "T", Run: "hot"})
	}
	_, err := r.record("watcher", Record{Item: "hot-over", Thread: "T", Run: "hot"})
	wantCode(t, err, api.CodeRateLimited)
}

// Under any sequence of takes, refunds and clock steps, a bucket never
// holds more than its size nor goes below zero, and take never spends a
// token of one budget without the other.
func TestBudgetsProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := limit{rate: rapid.Float64Range(0.01, 10).Draw(t, "prate"), size: float64(rapid.IntRange(1, 5).Draw(t, "psize"))}
		rl := limit{rate: rapid.Float64Range(0.01, 10).Draw(t, "rrate"), size: float64(rapid.IntRange(1, 5).Draw(t, "rsize"))}
		b := newBudgets(p, rl)
		now := t0
		runs := []string{"", "a", "b"}
		for range rapid.IntRange(1, 60).Draw(t, "steps") {
			run := rapid.SampledFrom(runs).Draw(t, "run")
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				var before [2]float64
				if pb := b.principals["w"]; pb != nil {
					before[0] = pb.level(p, now)
				} else {
					before[0] = p.size
				}
				if rb := b.runs[runKey{"w", run}]; rb != nil {
					before[1] = rb.level(rl, now)
				} else {
					before[1] = rl.size
				}
				ref, ok := b.take("w", run, now)
				after := [2]float64{b.principals["w"].tokens, b.runs[runKey{"w", run}].tokens}
				switch {
				case ok && (after[0] != before[0]-1 || after[1] != before[1]-1):
					t.Fatalf("take spent %v -> %v", before, after)
				case !ok && after != before:
					t.Fatalf("a refused take spent %v -> %v", before, after)
				case !ok && ref.wait <= 0:
					t.Fatalf("refused with no wait")
				case ok != (before[0] >= 1 && before[1] >= 1):
					t.Fatalf("take = %v with %v", ok, before)
				}
			case 1:
				b.refund("w", run, now)
			case 2:
				now = now.Add(time.Duration(rapid.Int64Range(0, int64(3*time.Second)).Draw(t, "step")))
			}
			for _, pb := range b.principals {
				if pb.tokens < 0 || pb.tokens > p.size {
					t.Fatalf("principal bucket at %v of %v", pb.tokens, p.size)
				}
			}
			for _, rb := range b.runs {
				if rb.tokens < 0 || rb.tokens > rl.size {
					t.Fatalf("run bucket at %v of %v", rb.tokens, rl.size)
				}
			}
		}
	})
}
