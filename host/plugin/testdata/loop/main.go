// Command loop is a test plugin whose observe never returns.
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
		Kind: "test.loop", Version: "1.0.0", Schema: schema, DefaultEvery: time.Second,
		Observe: func(p Params, in sdk.Input) (sdk.Result, error) {
			if p.N == 1 { // answer, so the next call proves the plugin still serves
				return sdk.Pending("quick"), nil
			}
			n := 0
			for {
				n++
			}
		},
	})
}
