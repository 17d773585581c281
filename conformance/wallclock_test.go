package conformance

import (
	"path/filepath"
	"strings"
	"testing"
)

// observe.no-wall-clock on generated params blames the clock only for
// what the clock did, and bounds what it spends: params whose answer
// differs under the default clock alone are left out, not failed; and
// once five params have come back with no answer, the rest are not
// tried, since a plugin that hangs on them would spend its timeout on
// each (robustness.generated-params reports those).
func TestNoWallClockOnGeneratedParams(t *testing.T) {
	nondet := filepath.Join("testdata", "quirks", "nondetparams")
	trap := filepath.Join("testdata", "broken", "trapjunk")
	built := buildPlugins(t, nondet, trap)
	for _, tt := range []struct {
		dir, says string
	}{
		{nondet, "not deterministic under the default clock"},
		{trap, "not tried after 5 with no answer"},
	} {
		t.Run(filepath.Base(tt.dir), func(t *testing.T) {
			t.Parallel()
			rep := check(t, built[tt.dir], testOptions())
			res, ok := rep.Result(ObserveNoWallClock)
			if !ok || res.Status != Pass || !strings.Contains(res.Message, tt.says) {
				t.Fatalf("%s: %+v, want a pass saying %q", ObserveNoWallClock, res, tt.says)
			}
		})
	}
}
