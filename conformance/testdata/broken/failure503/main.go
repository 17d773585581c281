// Command failure503 is broken one way: a 503 from the server settles the
// watch as a failure, where "the server could not answer" is "I could not
// tell", pending. Target: observe.fetch-failure-is-pending.
package main

import (
	"github.com/vigilhq/vigil/conformance/testdata/base"
	"github.com/vigilhq/vigil/sdk"
)

func init() {
	p := base.Plugin("broken.failure503", false)
	p.Observe = func(p base.Params, in sdk.Input) (sdk.Result, error) {
		resp, err := in.Fetch(sdk.FetchRequest{Method: "GET", URL: p.URL, TimeoutSeconds: 4})
		if err == nil && resp.Status == 503 { // the bug
			return sdk.Settled(sdk.Outcome{Result: "failure", Summary: p.URL + " is down"}), nil
		}
		return base.Observe(false, p, in)
	}
	sdk.Register(p)
}

func main() {}
