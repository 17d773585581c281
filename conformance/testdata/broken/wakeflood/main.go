// Command wakeflood is broken one way: written against the raw Extism ABI
// (the SDK refuses to send it), its wake answers 300 keys to every event,
// past the 256 the host takes, so no event it is handed wakes anything.
// Target: wake.bounded.
package main

import (
	"encoding/json"
	"fmt"

	"github.com/vigilhq/vigil/conformance/testdata/rawabi"
)

var p = rawabi.Plugin{Kind: "broken.wakeflood", Version: "1.0.0", CheckKind: true, WakeAnswer: flood()}

// flood is 300 keys: the bug.
func flood() string {
	keys := make([]string, 300)
	for i := range keys {
		keys[i] = fmt.Sprintf("resource/%d", i)
	}
	b, _ := json.Marshal(map[string][]string{"keys": keys})
	return string(b)
}

//go:wasmexport describe
func describe() int32 { return p.Describe() }

//go:wasmexport admit
func admit() int32 { return p.Admit() }

//go:wasmexport observe
func observe() int32 { return p.Observe() }

//go:wasmexport wake
func wake() int32 { return p.Wake() }

func main() {}
