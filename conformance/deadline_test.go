package conformance

import (
	"bytes"
	"encoding/xml"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/sdk/abi"
)

// A timer that answers pending with no next_check, whose natural deadline
// is one cadence or less away from a probe, passes every required check
// and is warned of: observe.deadline-reachable fails, advisory, and the
// text and JUnit reports show it as a warning, not a failure. The bundled
// timer, which answers next_check at its instant, is not warned of.
func TestSuiteWarnsOfAProbePastTheDeadline(t *testing.T) {
	late := filepath.Join("testdata", "quirks", "latetimer")
	built := buildPlugins(t, late)
	rep := check(t, built[late], testOptions())
	if !rep.Passed || len(rep.Failed()) != 0 {
		t.Fatalf("a warning failed the suite: %v", rep.Failed())
	}
	res, ok := rep.Result(ObserveDeadline)
	if !ok || res.Status != Fail || res.Level != Advisory || !strings.Contains(res.Message, "no next_check") ||
		!strings.Contains(res.Message, "after its natural deadline 2030-01-01T14:00:00Z") || res.Fix == "" {
		t.Fatalf("%s: %+v", ObserveDeadline, res)
	}

	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "warn "+ObserveDeadline+":") || !strings.Contains(text.String(), "PASS: every required check passed; 1 warning(s): "+ObserveDeadline) {
		t.Fatalf("the text report does not show the warning:\n%s", text.String())
	}
	var junit bytes.Buffer
	if err := rep.WriteJUnit(&junit); err != nil {
		t.Fatal(err)
	}
	var suite struct {
		Failures int `xml:"failures,attr"`
		Cases    []struct {
			Name      string    `xml:"name,attr"`
			Failure   *struct{} `xml:"failure"`
			SystemOut string    `xml:"system-out"`
		} `xml:"testcase"`
	}
	if err := xml.Unmarshal(junit.Bytes(), &suite); err != nil {
		t.Fatal(err)
	}
	warned := false
	for _, c := range suite.Cases {
		if c.Name == ObserveDeadline {
			warned = c.Failure == nil && strings.HasPrefix(c.SystemOut, "warning:")
		}
	}
	if suite.Failures != 0 || !warned {
		t.Fatalf("JUnit: %d failures, warned %v:\n%s", suite.Failures, warned, junit.String())
	}

	timer := check(t, filepath.Join("..", "plugins", "timer", "timer.wasm"), testOptions())
	if res, ok := timer.Result(ObserveDeadline); !ok || res.Status != Pass {
		t.Fatalf("the bundled timer: %+v", res)
	}
}

// LateProbe names the trap only where it is: a pending answer of a kind
// that is not standing, with no next_check, whose next probe by its
// cadence falls after its natural deadline.
func TestLateProbe(t *testing.T) {
	now := time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)
	pending := kind.Observation{Status: abi.StatusPending}
	hinted := kind.Observation{Status: abi.StatusPending, NextCheck: now.Add(30 * time.Second)}
	settled := kind.Observation{Status: abi.StatusSettled}
	faulted := kind.Observation{Status: abi.StatusPending, Fault: &kind.CallError{Reason: kind.FaultTimeout}}
	for _, c := range []struct {
		name     string
		standing bool
		obs      kind.Observation
		deadline time.Time
		want     bool
	}{
		{"past the deadline", false, pending, now.Add(30 * time.Second), true},
		{"at the deadline", false, pending, now.Add(time.Minute), false},
		{"before the deadline", false, pending, now.Add(time.Hour), false},
		{"no natural deadline", false, pending, time.Time{}, false},
		{"a next_check", false, hinted, now.Add(30 * time.Second), false},
		{"settled", false, settled, now.Add(30 * time.Second), false},
		{"a fault", false, faulted, now.Add(30 * time.Second), false},
		{"standing", true, pending, now.Add(30 * time.Second), false},
	} {
		msg, got := LateProbe(c.standing, c.obs, now, time.Minute, c.deadline)
		if got != c.want || (got && !strings.Contains(msg, "2026-06-15T12:01:00Z")) {
			t.Errorf("%s: %v %q, want %v", c.name, got, msg, c.want)
		}
	}
}
