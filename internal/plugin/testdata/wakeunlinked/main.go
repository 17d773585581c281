// Command wakeunlinked is a test plugin written with vigil's Go SDK that
// sets Wake and does not import sdk/wake, so its module exports no wake:
// the SDK refuses it at every export, and the host does not load it.
package main

import (
	"time"

	"github.com/vigilhq/vigil/sdk"
)

func init() {
	sdk.Register(sdk.Plugin[struct{}]{
		Kind: "test.wakeunlinked", Version: "1.0.0", DefaultEvery: time.Second,
		Schema:  `{"type":"object"}`,
		Observe: func(struct{}, sdk.Input) (sdk.Result, error) { return sdk.Pending("not yet"), nil },
		Wake:    func(sdk.Event) ([]string, error) { return nil, nil },
	})
}

func main() {}
