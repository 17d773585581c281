// Command wrongkind is broken one way: written against the raw Extism ABI,
// its observe never checks the kind it was called for, so a call meant for
// another kind (a routing bug) answers "pending" and hides the bug for the
// life of the watch. Target: observe.wrong-kind-is-error.
package main

import "github.com/vigilhq/vigil/conformance/testdata/rawabi"

var p = rawabi.Plugin{Kind: "broken.wrongkind", Version: "1.0.0", CheckKind: false} // the bug

//go:wasmexport describe
func describe() int32 { return p.Describe() }

//go:wasmexport admit
func admit() int32 { return p.Admit() }

//go:wasmexport observe
func observe() int32 { return p.Observe() }

func main() {}
