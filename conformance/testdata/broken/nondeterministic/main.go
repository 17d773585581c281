// Command nondeterministic is broken one way: it counts its observations in
// a package variable and says so in the outcome, so the same input answers
// differently each time (and differently again on another warm
// instance). Target: observe.deterministic.
package main

import (
	"fmt"

	"github.com/vigilhq/vigil/conformance/testdata/base"
	"github.com/vigilhq/vigil/sdk"
)

var looks int

func init() {
	p := base.Plugin("broken.nondeterministic", false)
	p.Observe = func(p base.Params, in sdk.Input) (sdk.Result, error) {
		resp, note := base.Fetch(p, in)
		if note != "" {
			return sdk.Pending(note), nil
		}
		looks++ // the bug
		o := base.Ok(p, in, base.Fingerprint(resp))
		o.Summary += fmt.Sprintf(" (look %d)", looks)
		return sdk.Settled(o), nil
	}
	sdk.Register(p)
}

func main() {}
