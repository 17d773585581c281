// Command wakesdk is a test plugin written with vigil's Go SDK whose
// Wake answers the body's "sha" as "commit/<sha>" for a check_suite
// event, and no keys for anything else. Its kind is test.wakesdk.
package main

import (
	"time"

	"github.com/vigilhq/vigil/sdk"
	_ "github.com/vigilhq/vigil/sdk/wake"
)

type params struct {
	SHA string `json:"sha"`
}

func init() {
	sdk.Register(sdk.Plugin[params]{
		Kind: "test.wakesdk", Version: "1.0.0", DefaultEvery: time.Second,
		Schema:       `{"type":"object"}`,
		Example:      params{SHA: "abc"},
		PartitionKey: func(p params) string { return "commit/" + p.SHA },
		Observe:      func(params, sdk.Input) (sdk.Result, error) { return sdk.Pending("not yet"), nil },
		Wake: func(e sdk.Event) ([]string, error) {
			var body params
			if e.Name != "check_suite" || !e.DecodeBody(&body) || body.SHA == "" {
				return nil, nil
			}
			return []string{"commit/" + body.SHA}, nil
		},
	})
}

func main() {}
