// Command memhog is broken one way: observe holds on to a megabyte per
// step and never stops, past the host's memory cap. Target: observe.budget.
package main

import (
	"github.com/vigilhq/vigil/conformance/testdata/base"
	"github.com/vigilhq/vigil/sdk"
)

var keep [][]byte

func init() {
	p := base.Plugin("broken.memhog", false)
	p.Observe = func(p base.Params, in sdk.Input) (sdk.Result, error) {
		for { // the bug
			b := make([]byte, 1<<20)
			b[0] = 1
			keep = append(keep, b)
		}
	}
	sdk.Register(p)
}

func main() {}
