// Command template.timer is a vigil predicate: it settles "fired" once the
// host's clock reaches params.at.
//
// Build (make, or):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -buildvcs=false -o template.timer.wasm .
//
// It answers from the host's now alone, never the wall clock, so it is
// deterministic under a fake clock and probed once, at its instant, not
// every interval: its admit names the instant as the first check, and a
// pending answer names it as the next.
package main

import "github.com/vigilhq/vigil/sdk"

func init() { sdk.Register(Plugin) }

func main() {}
