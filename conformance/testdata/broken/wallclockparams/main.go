// Command wallclockparams is broken one way: for every params but its
// example's, its outcome carries the date read from the guest's wall
// clock (time.Now) instead of the host's clock in the input, so only
// generated params show it. Target: observe.no-wall-clock.
package main

import (
	"time"

	"github.com/vigilhq/vigil/conformance/testdata/base"
	"github.com/vigilhq/vigil/sdk"
)

func init() {
	p := base.Plugin("broken.wallclockparams", false)
	example := p.Example
	p.Observe = func(p base.Params, in sdk.Input) (sdk.Result, error) {
		resp, note := base.Fetch(p, in)
		if note != "" {
			return sdk.Pending(note), nil
		}
		o := base.Ok(p, in, base.Fingerprint(resp))
		if p != example {
			o.Summary += " on " + time.Now().UTC().Format("2006-01-02") // the bug
		}
		return sdk.Settled(o), nil
	}
	sdk.Register(p)
}

func main() {}
