// Command standingmail is broken one way: a standing kind that mails a
// change on its first check, where the first check must record the
// baseline silently. Target: standing.first-baseline-silent.
package main

import (
	"github.com/vigilhq/vigil/conformance/testdata/base"
	"github.com/vigilhq/vigil/sdk"
)

func init() {
	p := base.Plugin("broken.standingmail", true)
	p.Observe = func(p base.Params, in sdk.Input) (sdk.Result, error) {
		if len(in.Baseline) == 0 { // the bug: "it exists" is not news
			resp, note := base.Fetch(p, in)
			if note != "" {
				return sdk.Pending(note), nil
			}
			return sdk.Changed(sdk.Outcome{Result: "changed", Summary: "first look at " + p.URL},
				base.Snapshot{Fingerprint: base.Fingerprint(resp)}), nil
		}
		return base.Observe(true, p, in)
	}
	sdk.Register(p)
}

func main() {}
