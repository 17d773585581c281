// Command wake is a test plugin written against the Extism ABI without
// vigil's SDK, so its wake can answer anything at all: the body's
// "answer" verbatim, an error for {"raise": message}, no answer for
// {"loop": true}, or, for any other body, the keys {"keys": [event,
// source]}. Its kind is test.wake.
package main

import (
	"encoding/json"

	"github.com/vigilhq/vigil/internal/plugin/testdata/dests/echo"
)

//go:wasmimport extism:host/env input_length
func inputLength() uint64

//go:wasmimport extism:host/env input_load_u8
func inputLoadU8(offset uint64) uint32

//go:wasmimport extism:host/env alloc
func alloc(n uint64) uint64

//go:wasmimport extism:host/env store_u8
func storeU8(offset uint64, v uint32)

//go:wasmimport extism:host/env error_set
func errorSet(offset uint64)

//go:wasmexport describe
func describe() int32 {
	return echo.Output([]byte(`{"abi":"vigil.predicate/v1","kind":"test.wake","version":"1.0.0","summary":"",` +
		`"standing":false,"default_every":"1s","params_schema":{"type":"object"},"capabilities":[]}`))
}

//go:wasmexport admit
func admit() int32 { return echo.Output([]byte(`{"ok":true}`)) }

//go:wasmexport observe
func observe() int32 { return echo.Observe() }

var spins int

//go:wasmexport wake
func wake() int32 {
	in := make([]byte, inputLength())
	for i := range in {
		in[i] = byte(inputLoadU8(uint64(i)))
	}
	var req struct {
		Event  string `json:"event"`
		Source string `json:"source"`
		Body   struct {
			Answer json.RawMessage `json:"answer"`
			Raise  string          `json:"raise"`
			Loop   bool            `json:"loop"`
		} `json:"body"`
	}
	_ = json.Unmarshal(in, &req)
	switch {
	case len(req.Body.Answer) > 0:
		return echo.Output(req.Body.Answer)
	case req.Body.Raise != "":
		off := alloc(uint64(len(req.Body.Raise)))
		for i := 0; i < len(req.Body.Raise); i++ {
			storeU8(off+uint64(i), uint32(req.Body.Raise[i]))
		}
		errorSet(off)
		return 1
	case req.Body.Loop:
		for {
			spins++
		}
	}
	out, _ := json.Marshal(map[string][]string{"keys": {req.Event, req.Source}})
	return echo.Output(out)
}

func main() {}
