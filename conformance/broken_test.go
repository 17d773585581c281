package conformance

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// brokenTargets names, for each plugin in testdata/broken, the one check
// it is built to fail.
var brokenTargets = map[string]string{
	"wallclock":        ObserveNoWallClock,
	"farfuture":        ObserveNoWallClock,
	"wallclockparams":  ObserveNoWallClock,
	"failure503":       ObserveFetchFailure,
	"wrongkind":        ObserveWrongKind,
	"nondeterministic": ObserveDeterministic,
	"trapjunk":         RobustnessGenerated,
	"slow":             ObserveBudget,
	"memhog":           ObserveBudget,
	"baddescribe":      DescribeSemver,
	"admitfetch":       AdmitNoFetch,
	"standingmail":     StandingFirstSilent,
	"execfailure":      ObserveExecFailure,
	"baddestinations":  AdmitDestinations,
	"movingkey":        AdmitDeterministic,
	"badnextcheck":     AdmitNextCheck,
	"wakemoving":       WakeDeterministic,
	"wakejunk":         WakeRobust,
	"wakeflood":        WakeBounded,
}

// TestBrokenPluginsFailExactlyTheirCheck proves each check bites: every
// broken plugin, one way to be wrong on top of a well-behaved base, fails
// its target check and no other required check. The well-behaved standing
// plugin in testdata/good passes every check, the advisory one included.
func TestBrokenPluginsFailExactlyTheirCheck(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join("testdata", "broken"))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if _, ok := brokenTargets[e.Name()]; !ok {
			t.Errorf("testdata/broken/%s has no target check in brokenTargets", e.Name())
		}
		dirs = append(dirs, filepath.Join("testdata", "broken", e.Name()))
	}
	if len(dirs) != len(brokenTargets) {
		t.Fatalf("%d broken plugins, %d targets", len(dirs), len(brokenTargets))
	}
	good := filepath.Join("testdata", "good", "standing")
	built := buildPlugins(t, append(dirs, good)...)

	t.Run("good/standing", func(t *testing.T) {
		t.Parallel()
		rep := check(t, built[good], testOptions())
		for _, res := range rep.Results {
			if res.Status != Pass {
				t.Errorf("%s: %s: %s", res.ID, res.Status, res.Message)
			}
		}
	})
	for _, dir := range dirs {
		name := filepath.Base(dir)
		target := brokenTargets[name]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rep := check(t, built[dir], testOptions())
			if got := rep.Failed(); !slices.Equal(got, []string{target}) {
				for _, res := range rep.Results {
					t.Logf("%s %s: %s", res.ID, res.Status, res.Message)
				}
				t.Fatalf("failed %v, want exactly [%s]", got, target)
			}
			if rep.Passed {
				t.Fatal("a report with a failed required check says it passed")
			}
			res, _ := rep.Result(target)
			if res.Message == "" || res.Fix == "" || res.Why == "" {
				t.Fatalf("the failure does not say what, why and how to fix: %+v", res)
			}
		})
	}
}
