// Package misbehave is shared by the test plugins that prove the runtime's
// bounds: each registers a kind whose observe misbehaves one way, except
// when params.n is 1, when it answers Pending("quick") so a test can show
// the plugin still serves after the fault.
package misbehave

import (
	"time"

	"github.com/vigilhq/vigil/sdk"
)

// Params selects the quick answer with N == 1.
type Params struct {
	N int `json:"n"`
}

// Schema is the JSON Schema of Params.
const Schema = `{"type":"object","properties":{"n":{"type":"integer"}},"additionalProperties":false}`

// Register registers kind with an observe that runs bad unless params.n
// is 1.
func Register(kind string, bad func() (sdk.Result, error)) {
	sdk.Register(sdk.Plugin[Params]{
		Kind: kind, Version: "1.0.0", Schema: Schema, DefaultEvery: time.Second,
		Observe: func(p Params, _ sdk.Input) (sdk.Result, error) {
			if p.N == 1 {
				return sdk.Pending("quick"), nil
			}
			return bad()
		},
	})
}
