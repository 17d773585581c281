// Command standing is a well-behaved standing plugin: the base, which also
// runs a command before it looks (so the exec checks run too), pending
// when the command could not run or timed out, and wakes the watches on a
// URL a Standard Webhooks event names (so the wake checks run too). The
// suite must pass it on every check.
package main

import (
	"github.com/vigilhq/vigil/conformance/testdata/base"
	"github.com/vigilhq/vigil/sdk"
	"github.com/vigilhq/vigil/sdk/abi"
	_ "github.com/vigilhq/vigil/sdk/wake"
)

func init() {
	p := base.Plugin("good.standing", true)
	p.Capabilities = []string{abi.CapabilityFetch, abi.CapabilityExec}
	p.Observe = func(p base.Params, in sdk.Input) (sdk.Result, error) {
		r, err := in.Exec(sdk.ExecRequest{Argv: []string{"true"}, TimeoutSeconds: 1})
		switch {
		case err != nil:
			return sdk.Pending("could not run the check: " + err.Error()), nil
		case r.TimedOut:
			return sdk.Pending("the check timed out: could not tell"), nil
		}
		return base.Observe(true, p, in)
	}
	p.PartitionKey = func(p base.Params) string { return p.URL }
	p.Wake = base.Wake
	sdk.Register(p)
}

func main() {}
