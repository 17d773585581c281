// Command loop is a test plugin whose observe never returns.
package main

import (
	"github.com/vigilhq/vigil/internal/plugin/testdata/misbehave"
	"github.com/vigilhq/vigil/sdk"
)

var spins int

func init() {
	misbehave.Register("test.loop", func() (sdk.Result, error) {
		for {
			spins++
		}
	})
}

func main() {}
