// Command badschema is a test plugin whose describe carries a params schema
// that is JSON but not a JSON Schema.
package main

import (
	"time"

	"github.com/vigilhq/vigil/sdk"
)

type Params struct {
	N int `json:"n"`
}

const schema = `{"type":"object","properties":{"n":{"type":"integer"}},"additionalProperties":false}`

func main() {}

func init() {
	sdk.Register(sdk.Plugin[Params]{
		Kind: "test.badschema", Version: "1.0.0", Schema: `{"type": 12}`, DefaultEvery: time.Second,
		Observe: func(p Params, in sdk.Input) (sdk.Result, error) { return sdk.Pending(""), nil },
	})
}
