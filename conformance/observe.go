package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/sdk/abi"
)

// budgetFault reports whether a fault is one of the call's bounds biting:
// time, memory or output size. Those belong to observe.budget alone.
func budgetFault(ce *kind.CallError) bool {
	if ce == nil {
		return false
	}
	switch ce.Reason {
	case kind.FaultTimeout, kind.FaultMemory, kind.FaultTooLarge, kind.FaultInstance:
		return true
	case kind.FaultTrap:
		return outOfMemory(ce.Err.Error())
	}
	return false
}

// outOfMemory reads a trap as the memory cap biting: the runtime's note of
// it, or a Go guest's throw from inside an allocation, which is how Go
// reports a heap that cannot grow (its "fatal error: out of memory" line
// leads a goroutine dump, so the runtime's stderr tail may have lost it).
func outOfMemory(trap string) bool {
	return strings.Contains(trap, "out of memory") ||
		strings.Contains(trap, "runtime.throw") && strings.Contains(trap, "runtime.mallocgc")
}

// answered reports whether the call came back with an answer of the
// plugin's own: no error, no fault.
func (c *obsCall) answered() bool { return c.err == nil && c.obs.Fault == nil }

// describe says in a few words what the call came back with.
func (c *obsCall) describe() string {
	switch {
	case c.err != nil:
		return "an error: " + c.err.Error()
	case c.obs.Fault != nil:
		return "a fault: " + c.obs.Fault.Reason + ": " + firstLine(c.obs.Fault.Err.Error())
	}
	return string(obsKey(c.obs))
}

// obsKey is an observation's answer as JSON, to compare two.
func obsKey(o kind.Observation) []byte {
	resp := abi.ObserveResponse{Status: o.Status, Note: o.Note, Outcome: o.Outcome, Baseline: o.Baseline}
	if !o.NextCheck.IsZero() {
		t := o.NextCheck
		resp.NextCheck = &t
	}
	b, _ := json.Marshal(resp)
	return b
}

func (s *suite) observeChecks(ctx context.Context) {
	if s.example == nil {
		return // skipped by admitChecks
	}
	if !s.anySelected(needsExample...) {
		return
	}
	t := time.Now()
	s.first = s.observeExample(ctx, s.rt, "the first time", nil, answerOK)
	took := time.Since(t)
	first := s.first
	switch {
	case first.obs.Fault != nil && budgetFault(first.obs.Fault):
		s.skipAll("the example's observation ran past a bound (observe.budget)", ObserveValidResult)
	case !first.answered():
		s.record(ObserveValidResult, Fail, took, "observing the example came back with %s", first.describe())
	default:
		msg := "answered " + first.obs.Status
		if o := first.obs.Outcome; o != nil {
			msg += " (" + o.Result + ")"
		}
		if first.obs.Note != "" {
			msg += ": " + first.obs.Note
		}
		if n := len(first.reqs); n > 0 {
			msg += fmt.Sprintf("; %d fetch(es)", n)
		}
		s.record(ObserveValidResult, Pass, took, "%s", msg)
	}
	if first.answered() {
		s.timed(ObserveDeterministic, func() (Status, string) { return s.deterministic(ctx) })
		if s.selected(ObserveNoWallClock) {
			s.timed(ObserveNoWallClock, func() (Status, string) { return s.noWallClock(ctx) })
		}
		s.timed(ObserveFetchFailure, func() (Status, string) { return s.fetchFailure(ctx) })
		s.timed(ObserveExecFailure, func() (Status, string) { return s.execFailure(ctx) })
		s.timed(ObserveDeadline, func() (Status, string) { return s.deadlineReachable(ctx) })
		s.standing(ctx)
	} else {
		why := "needs an answer to the example (observe.valid-result)"
		if budgetFault(first.obs.Fault) {
			why = "the example's observation ran past a bound (observe.budget)"
		}
		s.skipAll(why, ObserveDeterministic, ObserveNoWallClock, ObserveFetchFailure, ObserveExecFailure, ObserveDeadline, RobustnessGenerated)
		s.skipAll(why, standingIDs...)
	}
	s.timed(ObserveBudget, s.budget)
}

// deadlineReachable looks for the trap LateProbe names, with the kind's
// default cadence: in the example's first answer, and, when the natural
// deadline is further off than one cadence, in an answer half a cadence
// before it, where a timer's last probe by its cadence would be.
func (s *suite) deadlineReachable(ctx context.Context) (Status, string) {
	if s.info.Standing {
		return Pass, "a standing kind has no deadline: nothing expires"
	}
	if s.exampleAdm == nil || s.exampleAdm.Deadline.IsZero() {
		return Pass, "admit gives the example no natural deadline: the host's default applies, and the watch may set its own"
	}
	deadline := s.exampleAdm.Deadline
	every := s.info.DefaultEvery
	if every <= 0 {
		every = scheduler.DefaultEvery
	}
	if msg, late := LateProbe(false, s.first.obs, suiteNow, every, deadline); late {
		return Fail, "observing the example " + msg
	}
	at := deadline.Add(-every / 2)
	if !at.After(suiteNow) {
		return Pass, fmt.Sprintf("the first answer leaves a probe before the natural deadline %s", deadline.UTC().Format(time.RFC3339))
	}
	req := s.exampleReq(nil)
	req.Now = at
	c := s.observe(ctx, s.rt, "half a cadence before its natural deadline", req, answerOK)
	if !c.answered() {
		return Fail, "observing the example half a cadence before its natural deadline came back with " + c.describe()
	}
	if msg, late := LateProbe(false, c.obs, at, every, deadline); late {
		return Fail, "observing the example half a cadence before its natural deadline: " + msg
	}
	return Pass, fmt.Sprintf("half a cadence (%s) before its natural deadline %s it answered %s", every, deadline.UTC().Format(time.RFC3339), answerLabel(c.obs))
}

// answerLabel is an answer's status, with its next_check when it has one.
func answerLabel(o kind.Observation) string {
	if !o.NextCheck.IsZero() {
		return o.Status + " with next_check " + o.NextCheck.UTC().Format(time.RFC3339)
	}
	return o.Status
}

// deterministic observes the example four more times, two after another
// and two side by side (so on two warm instances), and compares.
func (s *suite) deterministic(ctx context.Context) (Status, string) {
	calls := []*obsCall{
		s.observeExample(ctx, s.rt, "a second time", nil, answerOK),
		s.observeExample(ctx, s.rt, "a third time", nil, answerOK),
	}
	side := make([]*obsCall, 2)
	var wg sync.WaitGroup
	for i := range side {
		wg.Add(1)
		go func() {
			defer wg.Done()
			side[i] = s.observe(ctx, s.rt, "on a second instance, side by side", s.exampleReq(nil), answerOK)
		}()
	}
	wg.Wait()
	s.exampleCalls = append(s.exampleCalls, side...)
	calls = append(calls, side...)
	want := obsKey(s.first.obs)
	for _, c := range calls {
		if c.obs.Fault != nil && budgetFault(c.obs.Fault) {
			continue // observe.budget's to report
		}
		if !c.answered() || !bytes.Equal(obsKey(c.obs), want) {
			s.nondet = true
			return Fail, fmt.Sprintf("the same input and fetch answers, observed %s, came back with %s; the first time with %s",
				c.label, clip([]byte(c.describe())), clip(want))
		}
	}
	return Pass, "the same answer five times, two of them on other instances"
}

// noWallClock observes the example, and then each admitted generated
// params, on two runtimes whose guest wall clocks lie at the far ends of
// what a guest clock can say (earliestGuestClock, latestGuestClock), the
// input's now the same each time, and compares each answer with the one
// under the default clock. Far apart, so a plugin that compares the guest's
// clock with any instant, its example's one far in the future included,
// answers differently under one of them; on generated params too, so a
// plugin that reads the clock only for params other than its example's
// is caught.
func (s *suite) noWallClock(ctx context.Context) (Status, string) {
	if s.nondet {
		return Skip, "observe is not deterministic (observe.deterministic), so a clock's effect cannot be told apart"
	}
	if !s.selected(ObserveDeterministic) {
		// Two runs under the default clock first, as the check promises.
		if c := s.observeExample(ctx, s.rt, "a second time", nil, answerOK); !c.answered() || !bytes.Equal(obsKey(c.obs), obsKey(s.first.obs)) {
			return Skip, "observe is not deterministic under the default clock (observe.deterministic)"
		}
	}
	var clocks []guestRuntime
	defer func() {
		for _, g := range clocks {
			_ = g.rt.Close(context.WithoutCancel(ctx))
		}
	}()
	for _, at := range []time.Time{earliestGuestClock, latestGuestClock} {
		rt, err := s.newRuntime(ctx, guestClock(at))
		if err != nil {
			return Fail, err.Error()
		}
		clocks = append(clocks, guestRuntime{at: at, rt: rt})
	}

	want := obsKey(s.first.obs)
	for _, g := range clocks {
		c := s.observeExample(ctx, g.rt, "with the guest's clock at "+g.label(), nil, answerOK)
		if c.obs.Fault != nil && budgetFault(c.obs.Fault) {
			return Skip, "the observation with the clock moved ran past a bound (observe.budget)"
		}
		if !c.answered() || !bytes.Equal(obsKey(c.obs), want) {
			return Fail, fmt.Sprintf("with the guest's wall clock at %s and now %s, the example answered %s; under the default clock %s",
				g.label(), suiteNow.Format(time.RFC3339), clip([]byte(c.describe())), clip(want))
		}
	}
	st, gen := s.noWallClockGenerated(ctx, clocks)
	if st != Pass {
		return st, gen + " (the example answered the same under each clock)"
	}
	return Pass, fmt.Sprintf("the same answer with the guest's wall clock at %s and at %s (now %s), on the example and %s",
		clocks[0].label(), clocks[1].label(), suiteNow.Format(time.RFC3339), gen)
}

// guestRuntime is a runtime whose guest wall clock starts at at.
type guestRuntime struct {
	at time.Time
	rt *plugin.Runtime
}

func (g guestRuntime) label() string { return g.at.Format(time.DateOnly) }

// noWallClockGenerated observes each admitted generated params under the
// default clock and under each of clocks, and compares. A params whose
// answers differ is observed again under the default clock: if that
// answer differs too, the params are not deterministic, which is no
// clock's doing (robustness and observe.deterministic speak to that), and
// they are left out. Params that come back with no answer are left out,
// and after maxRobustnessProblems of those the rest are not tried: a
// plugin that hangs on them would spend its timeout on each.
func (s *suite) noWallClockGenerated(ctx context.Context, clocks []guestRuntime) (Status, string) {
	gs := s.generatedParams(ctx)
	var idx []int
	for i, ok := range gs.admitted {
		if ok {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return Pass, "on no generated params (none was admitted)"
	}
	var (
		mu                 sync.Mutex
		bad                []string
		compared, unanswer int
		nondet             int
	)
	stop := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(bad) > 0 || unanswer >= maxRobustnessProblems
	}
	// judge observes params under the default clock and each of clocks,
	// and names the count it falls in, or (nil) why the clock is blamed.
	judge := func(params json.RawMessage) (*int, string) {
		req := abi.ObserveRequest{Kind: s.info.Kind, WatchID: suiteWatchID, Params: params, Now: suiteNow, Attempt: 1}
		base := s.observe(ctx, s.rt, "", req, answerOK)
		if !base.answered() {
			return &unanswer, ""
		}
		want := obsKey(base.obs)
		for _, g := range clocks {
			c := s.observe(ctx, g.rt, "", req, answerOK)
			if !c.answered() {
				return &unanswer, ""
			}
			if bytes.Equal(obsKey(c.obs), want) {
				continue
			}
			// Blamed on the clock only if the default clock gives the same
			// answer twice more: a plugin whose answers merely vary (a
			// per-instance count, say) can meet want once on another
			// instance by chance, rarely twice in a row.
			if !s.sameTwice(ctx, req, want) {
				return &nondet, ""
			}
			return nil, fmt.Sprintf("params %s: with the guest's wall clock at %s, answered %s; under the default clock %s",
				clip(params), g.label(), clip(obsKey(c.obs)), clip(want))
		}
		return &compared, ""
	}
	each(len(idx), observeWorkers(), stop, func(j int) {
		n, why := judge(gs.params[idx[j]])
		mu.Lock()
		defer mu.Unlock()
		if n == nil {
			bad = append(bad, why)
			return
		}
		*n++
	})
	if len(bad) > 0 {
		return Fail, "generated " + bad[0]
	}
	msg := fmt.Sprintf("on %d admitted generated params (seed %d)", compared, s.opts.Seed)
	var left []string
	if nondet > 0 {
		left = append(left, fmt.Sprintf("%d not deterministic under the default clock", nondet))
	}
	if unanswer > 0 {
		left = append(left, fmt.Sprintf("%d with no answer", unanswer))
	}
	if len(left) > 0 {
		msg += "; left out: " + strings.Join(left, ", ")
	}
	if n := len(idx) - compared - nondet - unanswer; n > 0 {
		msg += fmt.Sprintf("; %d not tried after %d with no answer", n, unanswer)
	}
	return Pass, msg
}

// fetchFailure observes the example with every fetch failing each way;
// each answer must be pending. A standing kind is asked with and without
// its baseline.
func (s *suite) fetchFailure(ctx context.Context) (Status, string) {
	if !slices.Contains(s.info.Capabilities, abi.CapabilityFetch) {
		return Skip, "the kind declares no fetch capability"
	}
	if len(s.first.reqs) == 0 {
		return Skip, "observing the example made no fetch, so there is nothing to fail"
	}
	bases := []json.RawMessage{nil}
	if s.info.Standing && len(s.first.obs.Baseline) > 0 {
		bases = append(bases, s.first.obs.Baseline)
	}
	var bad, budget []string
	n := 0
	for _, sc := range failureScenarios {
		for _, b := range bases {
			label := sc.name
			if b != nil {
				label += " (with a baseline)"
			}
			c := s.observeExample(ctx, s.rt, "with every fetch answered "+label, b, sc.answer)
			n++
			switch {
			case c.obs.Fault != nil && budgetFault(c.obs.Fault):
				budget = append(budget, label)
			case !c.answered():
				bad = append(bad, label+": "+c.describe())
			case c.obs.Status != abi.StatusPending:
				bad = append(bad, fmt.Sprintf("%s: answered %s", label, clip(obsKey(c.obs))))
			}
		}
	}
	if len(bad) > 0 {
		return Fail, "a fetch that could not tell was not pending: " + strings.Join(bad, "; ")
	}
	msg := fmt.Sprintf("pending on each of %d failures (%s)", n, scenarioNames())
	if len(budget) > 0 {
		msg += "; past a bound on " + strings.Join(budget, ", ") + " (observe.budget)"
	}
	return Pass, msg
}

// execFailure observes the example with every command failing each way
// (timed out, not granted, no workspace, not started); each answer must be
// pending.
func (s *suite) execFailure(ctx context.Context) (Status, string) {
	if !slices.Contains(s.info.Capabilities, abi.CapabilityExec) {
		return Skip, "the kind declares no exec capability"
	}
	var bad, budget, names []string
	for _, sc := range execFailureScenarios {
		names = append(names, sc.name)
		c := s.observeExample(withExec(ctx, sc.answer), s.rt, "with every command answered "+sc.name, nil, answerOK)
		switch {
		case c.obs.Fault != nil && budgetFault(c.obs.Fault):
			budget = append(budget, sc.name)
		case !c.answered():
			bad = append(bad, sc.name+": "+c.describe())
		case c.obs.Status != abi.StatusPending:
			bad = append(bad, fmt.Sprintf("%s: answered %s", sc.name, clip(obsKey(c.obs))))
		}
	}
	if len(bad) > 0 {
		return Fail, "a command that could not tell was not pending: " + strings.Join(bad, "; ")
	}
	msg := fmt.Sprintf("pending on each of %d failures (%s)", len(names), strings.Join(names, ", "))
	if len(budget) > 0 {
		msg += "; past a bound on " + strings.Join(budget, ", ") + " (observe.budget)"
	}
	return Pass, msg
}

func scenarioNames() string {
	var names []string
	for _, sc := range failureScenarios {
		names = append(names, sc.name)
	}
	return strings.Join(names, ", ")
}

// standing runs the standing checks on the first observation and two more
// with its baseline fed back: the same fetch answers, then a changed body.
func (s *suite) standing(ctx context.Context) {
	if !s.info.Standing {
		s.skipAll("the kind is not standing", standingIDs...)
		return
	}
	first := s.first
	base := first.obs.Baseline
	s.timed(StandingFirstSilent, func() (Status, string) {
		switch {
		case first.obs.Status == abi.StatusChanged:
			return Fail, fmt.Sprintf("the first check mailed a change: %s", clip(obsKey(first.obs)))
		case first.obs.Status != abi.StatusPending || first.obs.Outcome != nil:
			return Fail, fmt.Sprintf("the first check answered %s, want pending with a baseline", clip(obsKey(first.obs)))
		case len(base) == 0 || string(base) == "null":
			return Fail, "the first check answered pending with no baseline, so the next check has nothing to compare with" +
				" (with every fetch answered 200 " + genericBody + ")"
		}
		return Pass, "pending, baseline " + clip(base)
	})
	if len(base) == 0 || string(base) == "null" {
		s.skipAll("the first check gave no baseline to feed back (standing.first-baseline-silent)", StandingUnchanged, StandingChanged)
		return
	}
	s.timed(StandingUnchanged, func() (Status, string) {
		c := s.observeExample(ctx, s.rt, "with its own baseline", base, answerOK)
		switch {
		case c.obs.Fault != nil && budgetFault(c.obs.Fault):
			return Skip, "the observation ran past a bound (observe.budget)"
		case !c.answered():
			return Fail, "fed its own baseline back, it came back with " + c.describe()
		case c.obs.Status != abi.StatusPending || c.obs.Outcome != nil:
			return Fail, fmt.Sprintf("fed its own baseline and the same fetch answers, it answered %s", clip(obsKey(c.obs)))
		case len(c.obs.Baseline) > 0 && !jsonEqual(c.obs.Baseline, base):
			return Fail, fmt.Sprintf("nothing changed, yet it recorded a new baseline %s over %s", clip(c.obs.Baseline), clip(base))
		}
		return Pass, "pending, no change"
	})
	s.timed(StandingChanged, func() (Status, string) {
		c := s.observeExample(ctx, s.rt, "with a changed body", base, answerChanged)
		switch {
		case c.obs.Fault != nil && budgetFault(c.obs.Fault):
			return Skip, "the observation ran past a bound (observe.budget)"
		case !c.answered():
			return Fail, "with a changed body, it came back with " + c.describe()
		case c.obs.Status != abi.StatusChanged:
			return Fail, fmt.Sprintf("every fetch answered a different body (%s), and it answered %s; if the plugin reads fields this body lacks, prove a change with a cases file",
				changedBody, clip(obsKey(c.obs)))
		case jsonEqual(c.obs.Baseline, base):
			return Fail, "it answered changed with the old baseline"
		}
		return Pass, fmt.Sprintf("changed (%s), new baseline %s", c.obs.Outcome.Result, clip(c.obs.Baseline))
	})
}

// budget looks at every observation of the example the suite made.
func (s *suite) budget() (Status, string) {
	var slowest time.Duration
	for _, c := range s.exampleCalls {
		if f := c.obs.Fault; budgetFault(f) {
			reason := f.Reason
			if reason == kind.FaultTrap {
				reason = "out of memory (the guest trapped inside an allocation)"
			}
			return Fail, fmt.Sprintf("observing the example %s: %s: %s", c.label, reason, firstLine(f.Err.Error()))
		}
		slowest = max(slowest, c.took)
	}
	if len(s.exampleCalls) == 0 {
		return Skip, "the example was not observed"
	}
	return Pass, fmt.Sprintf("%d observations inside the bounds, the slowest %s", len(s.exampleCalls), slowest.Round(time.Microsecond))
}

// wrongKind calls observe directly with another kind in the input: the
// plugin must raise an error.
func (s *suite) wrongKind(ctx context.Context, pr *probe) (Status, string) {
	other := "conformance.wrong-kind"
	if other == s.info.Kind {
		other = "conformance.other-kind"
	}
	params := s.example
	if params == nil {
		params = s.info.Example
	}
	req := abi.ObserveRequest{Kind: other, WatchID: suiteWatchID, Params: params, Now: suiteNow, Attempt: 1}
	sctx, _ := withScope(ctx, answerOK)
	c := pr.observeAs(sctx, req)
	switch {
	case c.raised != "":
		return Pass, "raised: " + c.raised
	case c.fault != nil:
		return Fail, fmt.Sprintf("a call for kind %q faulted (%s): the host reads a fault as pending, so the routing bug would still hide", other, firstLine(c.fault.Error()))
	}
	return Fail, fmt.Sprintf("a call for kind %q answered %s", other, clip(c.out))
}

// jsonEqual compares two JSON values by value.
func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return jsonString(x) == jsonString(y)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// sameTwice reports whether two more observations of req under the
// default clock, one after the other, both answer want.
func (s *suite) sameTwice(ctx context.Context, req abi.ObserveRequest, want []byte) bool {
	for range 2 {
		if again := s.observe(ctx, s.rt, "", req, answerOK); !again.answered() || !bytes.Equal(obsKey(again.obs), want) {
			return false
		}
	}
	return true
}
