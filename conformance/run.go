package conformance

import (
	"context"
	"testing"
)

// Run runs the suite over the plugin at wasmPath from a Go test, one
// subtest per check named by its id: a failed required check fails its
// subtest, a skipped check skips it, and an advisory failure is logged.
// A plugin author's whole conformance test is
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, "mykind.wasm", conformance.Options{CasesDir: "testdata/cases"})
//	}
//
// With a testing.TB that has no subtests (a benchmark), failures are
// reported on t itself.
func Run(t testing.TB, wasmPath string, opts Options) Report {
	t.Helper()
	rep, err := Check(context.Background(), wasmPath, opts)
	if err != nil {
		t.Fatalf("conformance: %v", err)
		return rep
	}
	tt, subtests := t.(*testing.T)
	for _, res := range rep.Results {
		if subtests {
			tt.Run(res.ID, func(t *testing.T) { report(t, res) })
			continue
		}
		if res.Status == Fail && res.Level == Required {
			t.Errorf("%s: %s\nfix: %s", res.ID, res.Message, res.Fix)
		}
	}
	return rep
}

func report(t *testing.T, res Result) {
	t.Helper()
	switch {
	case res.Status == Fail && res.Level == Required:
		t.Errorf("%s\nwhy: %s\nfix: %s", res.Message, res.Why, res.Fix)
	case res.Status == Fail:
		t.Logf("advisory: %s\nfix: %s", res.Message, res.Fix)
	case res.Status == Skip:
		t.Skip(res.Message)
	default:
		t.Log(res.Message)
	}
}
