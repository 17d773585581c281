package conformance

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/vigilhq/vigil/sdk/abi"
)

// wakeIDs are the checks of the optional wake export.
var wakeIDs = []string{WakeRobust, WakeBounded, WakeDeterministic}

// wakeInput is one input the suite hands wake, named for a message.
type wakeInput struct {
	what string
	in   []byte
}

// The events and sources the suite's wake inputs are sent as: an event
// each bundled kind reads, from each scheme, and one no kind reads.
var wakeEvents = [][2]string{
	{"check_suite", abi.SourceGitHub},
	{"issues", abi.SourceGitHub},
	{"status", abi.SourceGitea},
	{"pull_request", abi.SourceGitea},
	{"page.changed", abi.SourceStandard},
}

// wakeSHA and wakeURL are what the suite's plausible body names.
const (
	wakeSHA = "0123456789abcdef0123456789abcdef01234567"
	wakeURL = "https://forge.example.com/conformance/suite"
)

// wakeBodies are the bodies the suite sends under each event: junk
// (absent, null, text that is not JSON, JSON of the wrong type, one as
// large as the host takes, one nested past any decoder's bound) and one
// plausible event, which names a repository, a commit, an issue and a
// URL the way GitHub, Gitea and Standard Webhooks bodies do.
func wakeBodies() []wakeInput {
	plausible := `{"action":"completed","number":7,"sha":"` + wakeSHA + `","state":"success",` +
		`"repository":{"full_name":"conformance/suite","url":"https://api.forge.example.com/repos/conformance/suite","html_url":"` + wakeURL + `"},` +
		`"check_suite":{"head_sha":"` + wakeSHA + `"},"issue":{"number":7},"pull_request":{"number":7},` +
		`"url":"` + wakeURL + `","data":{"url":"` + wakeURL + `"}}`
	// As large as the host's hook body bound (1 MiB) allows, shaped like
	// a forge's event: a repository, then a long list and a long string.
	var huge strings.Builder
	huge.WriteString(`{"action":"completed","repository":{"full_name":"conformance/suite","html_url":"` + wakeURL + `"},"commits":[`)
	for i := range 6000 {
		if i > 0 {
			huge.WriteByte(',')
		}
		fmt.Fprintf(&huge, `{"id":"%040x","message":"commit %d","added":["a/b.go"],"number":%d}`, i, i, i)
	}
	huge.WriteString(`],"padding":"` + strings.Repeat("x", 400<<10) + `"}`)
	const depth = 10001 // past encoding/json's 10,000 and any decoder's stack
	return []wakeInput{
		{"no body", nil},
		{"body null", []byte(`null`)},
		{`body ""`, []byte(`""`)},
		{"body text that is not JSON, as a string", []byte(`"<!doctype html><title>502 Bad Gateway</title>"`)},
		{"body 42", []byte(`42`)},
		{"body [1,2,3]", []byte(`[1,2,3]`)},
		{"body {}", []byte(`{}`)},
		{"a body of wrong types", []byte(`{"action":7,"repository":"conformance/suite","check_suite":[],"issue":{"number":"seven"},"sha":null,"url":{}}`)},
		{fmt.Sprintf("a body of %d KiB", huge.Len()>>10), []byte(huge.String())},
		{fmt.Sprintf("arrays nested %d deep", depth), []byte(strings.Repeat("[", depth) + strings.Repeat("]", depth))},
		{fmt.Sprintf("objects nested %d deep", depth), []byte(strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth))},
		{"a plausible event", []byte(plausible)},
	}
}

// wakeInputs are every input of the wake checks: an input that is no
// JSON at all and an empty one, then each body under each event.
func wakeInputs() []wakeInput {
	out := []wakeInput{{"an empty input", nil}, {"an input that is not JSON", []byte(`{"event": not json`)}}
	for _, ev := range wakeEvents {
		for _, b := range wakeBodies() {
			env := `{"event":"` + ev[0] + `","source":"` + ev[1] + `"`
			if b.in != nil {
				env += `,"body":` + string(b.in)
			}
			out = append(out, wakeInput{what: fmt.Sprintf("%s (%s, %s)", b.what, ev[0], ev[1]), in: []byte(env + "}")})
		}
	}
	return out
}

// wakeChecks runs wake over the suite's inputs three times (twice on one
// instance, once on a fresh one) through the probe, under admit's bounds,
// and judges what came back.
func (s *suite) wakeChecks(ctx context.Context, pr *probe) {
	if !s.anySelected(wakeIDs...) {
		return
	}
	if !s.info.Wakes {
		for _, id := range wakeIDs {
			s.record(id, Pass, 0, "the plugin exports no wake: events wake none of its watches, which are probed at their cadence")
		}
		return
	}
	t := time.Now()
	inputs := wakeInputs()
	runs := append(pr.wakeAll(ctx, inputs, s.callTimeout(), 2), pr.wakeAll(ctx, inputs, s.callTimeout(), 1)...)
	took := time.Since(t) / 3
	if ctx.Err() != nil {
		return
	}
	for _, c := range []struct {
		id    string
		judge func([]wakeInput, [][]rawCall) (Status, string)
	}{{WakeRobust, wakeRobust}, {WakeBounded, s.wakeBounded}, {WakeDeterministic, wakeDeterministic}} {
		st, msg := c.judge(inputs, runs)
		s.record(c.id, st, took, "%s", msg)
	}
}

// callTimeout is the bound of describe, admit and wake: the host's 1 s,
// unless Options raise it.
func (s *suite) callTimeout() time.Duration {
	if s.opts.CallTimeout > 0 {
		return s.opts.CallTimeout
	}
	return probeCallTimeout
}

// wakeRobust: no call raised an error or trapped (a timeout is
// wake.bounded's).
func wakeRobust(inputs []wakeInput, runs [][]rawCall) (Status, string) {
	n := 0
	for r, run := range runs {
		for i, c := range run {
			n++
			switch {
			case c.raised != "":
				return Fail, fmt.Sprintf("%s raised an error%s: %s", inputs[i].what, onRun(r), firstLine(c.raised))
			case c.fault != nil && !c.timedOut:
				return Fail, fmt.Sprintf("%s trapped%s: %s", inputs[i].what, onRun(r), firstLine(c.fault.Error()))
			}
		}
	}
	return Pass, fmt.Sprintf("%d calls on %d inputs (junk, huge and deeply nested bodies among them), no error and no trap", n, len(inputs))
}

// wakeBounded: every call answered in time, and every answer is on the
// contract.
func (s *suite) wakeBounded(inputs []wakeInput, runs [][]rawCall) (Status, string) {
	most := 0
	for r, run := range runs {
		for i, c := range run {
			if c.timedOut {
				return Fail, fmt.Sprintf("%s got no answer within %s%s", inputs[i].what, s.callTimeout(), onRun(r))
			}
			if c.fault != nil || c.raised != "" {
				continue // wake.robust's
			}
			keys, err := wakeKeys(c.out)
			if err != nil {
				return Fail, fmt.Sprintf("%s answered off the contract%s: %v: %s", inputs[i].what, onRun(r), err, clip(c.out))
			}
			most = max(most, keys)
		}
	}
	return Pass, fmt.Sprintf("every answer within %s and the contract (at most %d keys, each 1 to %d bytes); the most keys one answered: %d",
		s.callTimeout(), abi.MaxWakeKeys, abi.MaxPartitionKey, most)
}

// wakeKeys holds one wake output to the contract, as the runtime does,
// and counts its keys.
func wakeKeys(out []byte) (int, error) {
	if len(out) > probeOutputBytes {
		return 0, fmt.Errorf("%d bytes of output, cap %d", len(out), probeOutputBytes)
	}
	var resp abi.WakeResponse
	if err := abi.StrictUnmarshal(out, &resp); err != nil {
		return 0, err
	}
	if n := len(resp.Keys); n > abi.MaxWakeKeys {
		return 0, fmt.Errorf("%d keys, at most %d", n, abi.MaxWakeKeys)
	}
	for i, k := range resp.Keys {
		if k == "" || len(k) > abi.MaxPartitionKey {
			return 0, fmt.Errorf("key %d is %d bytes, want 1 to %d", i, len(k), abi.MaxPartitionKey)
		}
	}
	return len(resp.Keys), nil
}

// wakeDeterministic: each input answered the same (answer or error) on
// every pass that did not fault.
func wakeDeterministic(inputs []wakeInput, runs [][]rawCall) (Status, string) {
	for i := range inputs {
		a := runs[0][i]
		if a.fault != nil {
			continue
		}
		for r, run := range runs[1:] {
			b := run[i]
			if b.fault != nil {
				continue
			}
			if a.raised != b.raised || !jsonEqual(a.out, b.out) {
				return Fail, fmt.Sprintf("%s answered %s, then %s%s", inputs[i].what, wakeAnswer(a), wakeAnswer(b), onRun(r+1))
			}
		}
	}
	return Pass, fmt.Sprintf("%d inputs, the same answer each time on one instance and on another", len(inputs))
}

func wakeAnswer(c rawCall) string {
	if c.raised != "" {
		return "the error " + firstLine(c.raised)
	}
	return clip(c.out)
}

// onRun says which of the three passes a call was made on.
func onRun(r int) string {
	return [...]string{"", " (again, on the same instance)", " (on a fresh instance)"}[r]
}

// timeoutRetries is how many times more a wake call that ran out of time
// is asked, alone, before wake.bounded fails.
const timeoutRetries = 2

// probeOutputBytes is the runtime's default output cap, which wake's
// answer is held to.
const probeOutputBytes = 256 << 10

// wakeAll calls wake with each input, passes times over the list on one
// instance (a fresh one after a fault, which leaves an instance
// unusable), each call bounded by timeout, and returns each pass. A call
// that ran out of time is asked again, on a fresh instance, up to
// timeoutRetries times: a machine busy with other work can hold one call
// past the bound, where a plugin whose wake is unbounded runs out of time
// on every attempt.
func (p *probe) wakeAll(ctx context.Context, inputs []wakeInput, timeout time.Duration, passes int) [][]rawCall {
	inst, err := p.instance(ctx)
	defer func() {
		if inst != nil {
			_ = inst.Close(ctx)
		}
	}()
	out := make([][]rawCall, passes)
	for pass := range passes {
		out[pass] = make([]rawCall, len(inputs))
		for i, in := range inputs {
			if inst == nil {
				if inst, err = p.instance(ctx); err != nil {
					out[pass][i] = rawCall{fault: err}
					continue
				}
			}
			c := call(ctx, inst, abi.ExportWake, in.in, timeout)
			for retry := 0; c.timedOut && retry < timeoutRetries && ctx.Err() == nil; retry++ {
				_ = inst.Close(ctx)
				if inst, err = p.instance(ctx); err != nil {
					inst = nil
					break
				}
				c = call(ctx, inst, abi.ExportWake, in.in, timeout)
			}
			if c.fault != nil && inst != nil {
				_ = inst.Close(ctx)
				inst = nil
			}
			out[pass][i] = c
		}
	}
	return out
}
