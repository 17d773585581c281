// Command nondetparams answers its example the same every time, and every
// other params with a count of the calls its instance has served (the
// example's included), so two observations of generated params never
// agree, whatever the clock. The
// suite must not blame that on the guest's clock: observe.no-wall-clock
// leaves such params out and says so.
package main

import (
	"fmt"

	"github.com/vigilhq/vigil/conformance/testdata/base"
	"github.com/vigilhq/vigil/sdk"
)

func init() {
	p := base.Plugin("quirk.nondetparams", false)
	example := p.Example
	calls := 0
	p.Observe = func(p base.Params, in sdk.Input) (sdk.Result, error) {
		resp, note := base.Fetch(p, in)
		if note != "" {
			return sdk.Pending(note), nil
		}
		o := base.Ok(p, in, base.Fingerprint(resp))
		// Every call counts, the example's too: the suite observes the
		// example more often under the default clock than under the
		// others, so the count a generated params gets differs between
		// the suite's runtimes even when it probes them one at a time,
		// in the same order, on one instance each.
		calls++
		if p != example {
			o.Summary += fmt.Sprintf(" (call %d)", calls)
		}
		return sdk.Settled(o), nil
	}
	sdk.Register(p)
}

func main() {}
