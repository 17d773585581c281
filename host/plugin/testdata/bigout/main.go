// Command bigout is a test plugin whose observe answers 1 MiB.
package main

import (
	"strings"
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
		Kind: "test.bigout", Version: "1.0.0", Schema: schema, DefaultEvery: time.Second,
		Observe: func(p Params, in sdk.Input) (sdk.Result, error) {
			if p.N == 1 {
				return sdk.Pending("quick"), nil
			}
			return sdk.Pending(strings.Repeat("x", 1<<20)), nil
		},
	})
}
