// Command badnextcheck is broken one way: written against the raw Extism
// ABI (the SDK refuses to send it), its admit names a first check two
// minutes past the instant, after the natural deadline of a minute past
// it, so the watch would be probed only at its deadline. Target:
// admit.next-check.
package main

import (
	"time"

	"github.com/vigilhq/vigil/conformance/testdata/rawabi"
)

var p = rawabi.Plugin{Kind: "broken.badnextcheck", Version: "1.0.0", CheckKind: true,
	FirstCheck: func(at time.Time) time.Time { return at.Add(2 * time.Minute) }} // the bug

//go:wasmexport describe
func describe() int32 { return p.Describe() }

//go:wasmexport admit
func admit() int32 { return p.Admit() }

//go:wasmexport observe
func observe() int32 { return p.Observe() }

func main() {}
