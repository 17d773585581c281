// Command bigout is a test plugin whose observe answers 1 MiB.
package main

import (
	"strings"

	"github.com/vigilhq/vigil/internal/plugin/testdata/misbehave"
	"github.com/vigilhq/vigil/sdk"
)

func init() {
	misbehave.Register("test.bigout", func() (sdk.Result, error) {
		return sdk.Pending(strings.Repeat("x", 1<<20)), nil
	})
}

func main() {}
