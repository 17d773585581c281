// Command trapjunk is broken one way: a tag longer than 48 bytes, which
// its schema admits, crashes the guest past the SDK's recovery (a panic on
// another goroutine). The example's tag is short, so only generated params
// find it. Target: robustness.generated-params.
package main

import (
	"github.com/vigilhq/vigil/conformance/testdata/base"
	"github.com/vigilhq/vigil/sdk"
)

func init() {
	p := base.Plugin("broken.trapjunk", false)
	p.Observe = func(p base.Params, in sdk.Input) (sdk.Result, error) {
		if len(p.Tag) > 48 { // the bug: a fixed-size buffer
			done := make(chan struct{})
			go func() {
				var buf [48]byte
				copy(buf[:], p.Tag)
				var m map[string]int
				m[string(buf[:])] = 1 // a nil map: an unrecovered panic
				close(done)
			}()
			<-done
		}
		return base.Observe(false, p, in)
	}
	sdk.Register(p)
}

func main() {}
