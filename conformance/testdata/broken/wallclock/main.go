// Command wallclock is broken one way: its outcome carries the date read
// from the guest's wall clock (time.Now) instead of the host's clock in
// the input. Target: observe.no-wall-clock.
package main

import (
	"time"

	"github.com/vigilhq/vigil/conformance/testdata/base"
	"github.com/vigilhq/vigil/sdk"
)

func init() {
	p := base.Plugin("broken.wallclock", false)
	p.Observe = func(p base.Params, in sdk.Input) (sdk.Result, error) {
		resp, note := base.Fetch(p, in)
		if note != "" {
			return sdk.Pending(note), nil
		}
		o := base.Ok(p, in, base.Fingerprint(resp))
		o.Summary += " on " + time.Now().UTC().Format("2006-01-02") // the bug
		return sdk.Settled(o), nil
	}
	sdk.Register(p)
}

func main() {}
