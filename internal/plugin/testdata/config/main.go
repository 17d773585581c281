// Command config is a test plugin whose observe answers with the value of
// its Extism config key "greeting", as the note.
package main

import (
	"time"

	"github.com/vigilhq/vigil/sdk"
)

type Params struct{}

func main() {}

func init() {
	sdk.Register(sdk.Plugin[Params]{
		Kind: "test.config", Version: "1.0.0", Schema: `{"type":"object"}`, DefaultEvery: time.Second,
		Observe: func(Params, sdk.Input) (sdk.Result, error) {
			v, ok := sdk.Config("greeting")
			if !ok {
				return sdk.Pending("<none>"), nil
			}
			return sdk.Pending(v), nil
		},
	})
}
