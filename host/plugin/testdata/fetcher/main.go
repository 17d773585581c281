// Command fetcher is a test plugin that needs the fetch capability: it
// fetches params.url and settles with the status, or answers pending when
// the fetch fails.
package main

import (
	"fmt"
	"time"

	"github.com/vigilhq/vigil/sdk"
)

type Params struct {
	URL string `json:"url"`
}

func main() {}

func init() {
	sdk.Register(sdk.Plugin[Params]{
		Kind: "test.fetcher", Version: "1.0.0", DefaultEvery: time.Second,
		Schema:       `{"type":"object","properties":{"url":{"type":"string","minLength":1}},"required":["url"],"additionalProperties":false}`,
		Capabilities: []string{"fetch"},
		Observe: func(p Params, in sdk.Input) (sdk.Result, error) {
			resp, err := in.Fetch(sdk.FetchRequest{Method: "GET", URL: p.URL})
			if err != nil {
				return sdk.Pending(err.Error()), nil
			}
			return sdk.Settled(sdk.Outcome{Result: fmt.Sprint(resp.Status), Summary: string(resp.Body)}), nil
		},
	})
}
