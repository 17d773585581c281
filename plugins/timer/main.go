// Command timer is vigil's bundled timer predicate: it settles "fired" once
// the host's clock reaches params.at.
//
// Build (what `just plugins` runs):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -buildvcs=false -o timer.wasm .
package main

import "github.com/vigilhq/vigil/sdk"

func init() { sdk.Register(Plugin) }

func main() {}
