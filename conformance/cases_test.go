package conformance

import (
	"path/filepath"
	"strings"
	"testing"
)

var goodStanding = filepath.Join("testdata", "good", "standing")

// The author's cases replay recorded responses: exact, prefix and regex
// matches, text and JSON bodies, a failure, a 503, the host's fingerprint.
func TestCasesReplayRecordedResponses(t *testing.T) {
	wasm := buildPlugins(t, goodStanding)[goodStanding]
	opts := testOptions()
	opts.CasesDir = filepath.Join("testdata", "cases", "standing")
	opts.Run = `^cases\.`
	rep := check(t, wasm, opts)
	want := []string{"cases.changed", "cases.fingerprint", "cases.first-look", "cases.no-change", "cases.timeout", "cases.unavailable"}
	if len(rep.Results) != len(want) {
		t.Fatalf("results %+v, want %v", rep.Results, want)
	}
	for i, res := range rep.Results {
		if res.ID != want[i] || res.Status != Pass || res.Level != Required {
			t.Errorf("%s: %s %s: %s", want[i], res.ID, res.Status, res.Message)
		}
	}
}

// A case that does not hold fails its check and says how.
func TestCasesThatDoNotHoldFail(t *testing.T) {
	wasm := buildPlugins(t, goodStanding)[goodStanding]
	opts := testOptions()
	opts.CasesDir = filepath.Join("testdata", "cases", "wrong")
	opts.Run = `^cases\.`
	rep := check(t, wasm, opts)
	want := map[string]string{
		"cases.wrong-status":   "status pending, want changed",
		"cases.unmatched":      "requests with no recorded response: GET https://forge.example.com/api/issues/7",
		"cases.typo":           `unknown field "note_contain"`,
		"cases.refused":        "not admitted: invalid_params: params.url",
		"cases.bad-regex":      "url_regex",
		"cases.wrong-baseline": `baseline {"fingerprint":"fp-9"}, want {"fingerprint": "fp-1"}`,
	}
	if len(rep.Results) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(rep.Results), len(want), rep.Results)
	}
	for _, res := range rep.Results {
		if res.Status != Fail || !strings.Contains(res.Message, want[res.ID]) {
			t.Errorf("%s: %s: %q, want it to say %q", res.ID, res.Status, res.Message, want[res.ID])
		}
	}
	if rep.Passed {
		t.Fatal("failed cases, yet the report passed")
	}
}
