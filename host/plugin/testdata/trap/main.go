// Command trap is a test plugin whose observe crashes the guest: a panic on
// another goroutine, which no recover in the export can catch.
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
		Kind: "test.trap", Version: "1.0.0", Schema: schema, DefaultEvery: time.Second,
		Observe: func(p Params, in sdk.Input) (sdk.Result, error) {
			if p.N == 1 {
				return sdk.Pending("quick"), nil
			}
			done := make(chan struct{})
			go func() {
				var m map[string]int
				m["boom"] = 1 // assignment to a nil map: an unrecovered panic
				close(done)
			}()
			<-done
			return sdk.Pending("unreachable"), nil
		},
	})
}
