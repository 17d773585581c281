// Command baddestinations is broken one way: written against the raw
// Extism ABI (the SDK refuses to send such a list), its admit names a
// destination that is no http(s) URL, from a kind that declares no fetch.
// Target: admit.destinations.
package main

import "github.com/vigilhq/vigil/conformance/testdata/rawabi"

var p = rawabi.Plugin{Kind: "broken.baddestinations", Version: "1.0.0", CheckKind: true,
	Destinations: `[{"target":"ftp://files.example.com/"}]`} // the bug

//go:wasmexport describe
func describe() int32 { return p.Describe() }

//go:wasmexport admit
func admit() int32 { return p.Admit() }

//go:wasmexport observe
func observe() int32 { return p.Observe() }

func main() {}
