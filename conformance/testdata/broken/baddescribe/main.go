// Command baddescribe is broken one way: written against the raw Extism
// ABI (the SDK refuses a bad version before describe answers), it
// describes itself with version "1.0", which is not a semantic version.
// Target: describe.semver.
package main

import "github.com/vigilhq/vigil/conformance/testdata/rawabi"

var p = rawabi.Plugin{Kind: "broken.baddescribe", Version: "1.0", CheckKind: true} // the bug

//go:wasmexport describe
func describe() int32 { return p.Describe() }

//go:wasmexport admit
func admit() int32 { return p.Admit() }

//go:wasmexport observe
func observe() int32 { return p.Observe() }

func main() {}
