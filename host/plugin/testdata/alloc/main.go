// Command alloc is a test plugin whose observe allocates without bound.
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

var keep [][]byte

func init() {
	sdk.Register(sdk.Plugin[Params]{
		Kind: "test.alloc", Version: "1.0.0", Schema: schema, DefaultEvery: time.Second,
		Observe: func(p Params, in sdk.Input) (sdk.Result, error) {
			if p.N == 1 {
				return sdk.Pending("quick"), nil
			}
			for {
				b := make([]byte, 1<<20)
				b[0] = 1
				keep = append(keep, b)
			}
		},
	})
}
