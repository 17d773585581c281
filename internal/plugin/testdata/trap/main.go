// Command trap is a test plugin whose observe crashes the guest: a panic on
// another goroutine, which no recover in the export can catch.
package main

import (
	"github.com/vigilhq/vigil/internal/plugin/testdata/misbehave"
	"github.com/vigilhq/vigil/sdk"
)

func init() {
	misbehave.Register("test.trap", func() (sdk.Result, error) {
		done := make(chan struct{})
		go func() {
			var m map[string]int
			m["boom"] = 1 // assignment to a nil map: an unrecovered panic
			close(done)
		}()
		<-done
		return sdk.Pending("unreachable"), nil
	})
}

func main() {}
