package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var timerWasm = filepath.Join("..", "plugins", "timer", "timer.wasm")

// What a plugin author writes: one test, one subtest per check.
func TestRunMakesASubtestPerCheck(t *testing.T) {
	rep := Run(t, timerWasm, testOptions())
	if !rep.Passed || rep.Kind != "timer" || rep.SuiteVersion != SuiteVersion {
		t.Fatalf("report %+v", rep)
	}
	if len(rep.Results) != len(specs) {
		t.Fatalf("%d results, want one per check (%d)", len(rep.Results), len(specs))
	}
	for i, res := range rep.Results {
		if res.ID != specs[i].ID {
			t.Fatalf("result %d is %s, want %s: the report keeps the spec's order", i, res.ID, specs[i].ID)
		}
	}
}

func TestRunAndSkipSelectChecks(t *testing.T) {
	opts := testOptions()
	opts.Run, opts.Skip = `^(describe|admit)\.`, `deterministic`
	rep := check(t, timerWasm, opts)
	for _, res := range rep.Results {
		if !strings.HasPrefix(res.ID, "describe.") && !strings.HasPrefix(res.ID, "admit.") || strings.Contains(res.ID, "deterministic") {
			t.Errorf("%s ran", res.ID)
		}
	}
	if len(rep.Results) != 13 {
		t.Fatalf("%d checks ran, want 13", len(rep.Results))
	}
	opts.Run = "("
	if _, err := Check(context.Background(), timerWasm, opts); err == nil || !strings.Contains(err.Error(), "run") {
		t.Fatalf("a bad expression: %v", err)
	}
}

// A file that is not a module fails the first check and skips the rest,
// each saying why.
func TestNotAModule(t *testing.T) {
	f := filepath.Join(t.TempDir(), "junk.wasm")
	if err := os.WriteFile(f, []byte("not wasm"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := check(t, f, testOptions())
	if got := rep.Failed(); len(got) != 1 || got[0] != DescribeExports {
		t.Fatalf("failed %v", got)
	}
	for _, res := range rep.Results[1:] {
		if res.Status != Skip || !strings.Contains(res.Message, "describe.exports") {
			t.Errorf("%s: %s %q", res.ID, res.Status, res.Message)
		}
	}
}

func TestWriters(t *testing.T) {
	rep := Report{SuiteVersion: 1, File: "x.wasm", Kind: "x", Version: "1.0.0", Passed: false, Results: []Result{
		{ID: DescribeExports, Level: Required, Status: Pass, Why: "w"},
		{ID: ObserveBudget, Level: Required, Status: Fail, Message: "timeout <5s>", Why: "w", Fix: "f"},
		{ID: StandingChanged, Level: Advisory, Status: Fail, Message: "pending", Why: "w", Fix: "f"},
		{ID: StandingUnchanged, Level: Required, Status: Skip, Message: "not standing", Why: "w"},
	}}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"observe.budget", "FAIL", "warn", "fix: f", "FAIL: 1 required check(s) failed: observe.budget"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}

	var junit bytes.Buffer
	if err := rep.WriteJUnit(&junit); err != nil {
		t.Fatal(err)
	}
	var suite struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Skipped  int `xml:"skipped,attr"`
		Cases    []struct {
			Name    string    `xml:"name,attr"`
			Failure *struct{} `xml:"failure"`
			Skipped *struct{} `xml:"skipped"`
			Out     string    `xml:"system-out"`
		} `xml:"testcase"`
	}
	if err := xml.Unmarshal(junit.Bytes(), &suite); err != nil {
		t.Fatalf("%v\n%s", err, junit.String())
	}
	if suite.Tests != 4 || suite.Failures != 1 || suite.Skipped != 1 || suite.Cases[1].Failure == nil ||
		suite.Cases[2].Failure != nil || !strings.Contains(suite.Cases[2].Out, "advisory") || suite.Cases[3].Skipped == nil {
		t.Fatalf("junit:\n%s", junit.String())
	}

	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil || len(back.Results) != 4 || back.Results[1].Fix != "f" {
		t.Fatalf("json round trip: %v %s", err, b)
	}
}
