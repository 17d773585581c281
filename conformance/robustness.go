package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/sdk/abi"
)

// maxRobustnessProblems stops robustness.generated-params early: a plugin
// that hangs on some params would otherwise cost its timeout on each.
const maxRobustnessProblems = 5

// robustness admits each generated params and observes each one admitted:
// every one must be refused or answered, never crash, hang or raise.
// Admits all run first and observes after, never side by side, so a fetch
// counted during the admits is admit's.
func (s *suite) robustness(ctx context.Context) {
	if _, done := s.results[RobustnessGenerated]; done {
		return // skipped: the example already ran past a bound
	}
	t := time.Now()
	gs := s.generatedParams(ctx)
	params, admitted, refused := gs.params, gs.admitted, gs.refused
	workers := observeWorkers()

	var mu sync.Mutex
	problems := slices.Clone(gs.problems)
	note := func(p json.RawMessage, what string) {
		mu.Lock()
		defer mu.Unlock()
		problems = append(problems, fmt.Sprintf("%s: %s", clip(p), what))
	}
	enough := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(problems) >= maxRobustnessProblems
	}

	statuses := map[string]int{}
	each(len(params), workers, enough, func(i int) {
		if !admitted[i] {
			return
		}
		req := abi.ObserveRequest{Kind: s.info.Kind, WatchID: suiteWatchID, Params: params[i], Now: suiteNow, Attempt: 1}
		c := s.observe(ctx, s.rt, "", req, answerOK)
		if c.obs.Fault != nil && c.obs.Fault.Reason == kind.FaultTimeout {
			c = s.observe(ctx, s.rt, "", req, answerOK) // once more, as for admit
		}
		if !c.answered() {
			note(params[i], "observe came back with "+c.describe())
			return
		}
		mu.Lock()
		statuses[c.obs.Status]++
		mu.Unlock()
	})
	took := time.Since(t)
	if ctx.Err() != nil {
		return
	}
	if len(problems) > 0 {
		more := ""
		if len(problems) >= maxRobustnessProblems {
			more = fmt.Sprintf(" (stopped after %d)", maxRobustnessProblems)
		}
		s.record(RobustnessGenerated, Fail, took, "%d generated params were neither refused nor answered%s: %s",
			len(problems), more, strings.Join(problems, "; "))
		return
	}
	var answered []string
	total := 0
	for _, st := range sortedKeys(statuses) {
		answered = append(answered, fmt.Sprintf("%d %s", statuses[st], st))
		total += statuses[st]
	}
	s.record(RobustnessGenerated, Pass, took, "%d params (seed %d): %d refused, %d admitted and answered (%s)",
		len(params), s.opts.Seed, refused, total, strings.Join(answered, ", "))
}

// observeWorkers is how many calls the suite's generated params make side
// by side.
func observeWorkers() int { return min(4, max(2, runtime.GOMAXPROCS(0))) }

// generatedParams generates the params robustness.generated-params and
// observe.no-wall-clock try, and admits each once, the first time either
// asks. Admits never run beside observes, so a fetch counted during them
// is admit's. It stops admitting after maxRobustnessProblems admits that
// neither refused nor admitted.
func (s *suite) generatedParams(ctx context.Context) *generatedSet {
	if s.generated != nil {
		return s.generated
	}
	params := generate(s.info.Schema, s.example, s.opts.Generated, s.opts.Seed)
	gs := &generatedSet{params: params, admitted: make([]bool, len(params))}
	var mu sync.Mutex
	enough := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(gs.problems) >= maxRobustnessProblems
	}
	each(len(params), observeWorkers(), enough, func(i int) {
		_, err := s.admit(ctx, params[i])
		if timedOut(err) {
			// Once more: a loaded machine can miss a bound that the same
			// call keeps when it is not. A plugin that hangs on these
			// params times out again.
			_, err = s.admit(ctx, params[i])
		}
		var ref *api.Error
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			gs.admitted[i] = true
		case errors.As(err, &ref):
			gs.refused++
		default:
			gs.problems = append(gs.problems, fmt.Sprintf("%s: %s", clip(params[i]), "admit came back with "+err.Error()))
		}
	})
	s.generated = gs
	return gs
}

// timedOut reports whether err is a plugin call that ran out of its time.
func timedOut(err error) bool {
	var ce *kind.CallError
	return errors.As(err, &ce) && ce.Reason == kind.FaultTimeout
}

// each runs f(0..n-1) on workers goroutines until stop says so.
func each(n, workers int, stop func() bool, f func(int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := 0; i < n && !stop(); i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}
