// Command execfailure is broken one way: a command that timed out settles
// the watch as a failure, where a timeout is "I could not tell", pending.
// Target: observe.exec-failure-is-pending.
package main

import (
	"github.com/vigilhq/vigil/conformance/testdata/base"
	"github.com/vigilhq/vigil/sdk"
	"github.com/vigilhq/vigil/sdk/abi"
)

func init() {
	p := base.Plugin("broken.execfailure", false)
	p.Capabilities = []string{abi.CapabilityFetch, abi.CapabilityExec}
	p.Observe = func(p base.Params, in sdk.Input) (sdk.Result, error) {
		r, err := in.Exec(sdk.ExecRequest{Argv: []string{"true"}, TimeoutSeconds: 1})
		switch {
		case err != nil:
			return sdk.Pending("could not run the check: " + err.Error()), nil
		case r.TimedOut: // the bug
			return sdk.Settled(sdk.Outcome{Result: "failure", Summary: "the check timed out"}), nil
		}
		return base.Observe(false, p, in)
	}
	sdk.Register(p)
}

func main() {}
