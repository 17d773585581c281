// Command alloc is a test plugin whose observe allocates without bound.
package main

import (
	"github.com/vigilhq/vigil/internal/plugin/testdata/misbehave"
	"github.com/vigilhq/vigil/sdk"
)

var keep [][]byte

func init() {
	misbehave.Register("test.alloc", func() (sdk.Result, error) {
		for {
			b := make([]byte, 1<<20)
			b[0] = 1
			keep = append(keep, b)
		}
	})
}

func main() {}
