// Command badschema is a test plugin whose describe carries a params schema
// that is JSON but not a JSON Schema.
package main

import (
	"github.com/vigilhq/vigil/sdk"
)

type Params struct{}

func init() {
	sdk.Register(sdk.Plugin[Params]{
		Kind: "test.badschema", Version: "1.0.0", Schema: `{"type": 12}`,
		Observe: func(Params, sdk.Input) (sdk.Result, error) { return sdk.Pending(""), nil },
	})
}

func main() {}
