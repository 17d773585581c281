// Command slow is broken one way: observe spins without end, past the
// host's timeout. Target: observe.budget.
package main

import (
	"github.com/vigilhq/vigil/conformance/testdata/base"
	"github.com/vigilhq/vigil/sdk"
)

var spins int

func init() {
	p := base.Plugin("broken.slow", false)
	p.Observe = func(p base.Params, in sdk.Input) (sdk.Result, error) {
		for { // the bug
			spins++
		}
	}
	sdk.Register(p)
}

func main() {}
