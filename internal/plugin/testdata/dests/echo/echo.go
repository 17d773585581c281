// Package echo is the Extism glue of the test.dests plugins: an admit
// that answers params.answer verbatim, whatever it is.
package echo

import "encoding/json"

//go:wasmimport extism:host/env input_length
func inputLength() uint64

//go:wasmimport extism:host/env input_load_u8
func inputLoadU8(offset uint64) uint32

//go:wasmimport extism:host/env alloc
func alloc(n uint64) uint64

//go:wasmimport extism:host/env store_u8
func storeU8(offset uint64, v uint32)

//go:wasmimport extism:host/env output_set
func outputSet(offset, n uint64)

// Output sets the call's output.
func Output(s []byte) int32 {
	off := alloc(uint64(len(s)))
	for i, c := range s {
		storeU8(off+uint64(i), uint32(c))
	}
	outputSet(off, uint64(len(s)))
	return 0
}

func input() []byte {
	b := make([]byte, inputLength())
	for i := range b {
		b[i] = byte(inputLoadU8(uint64(i)))
	}
	return b
}

// Describe answers describe for kind test.dests with caps.
func Describe(caps string) int32 {
	return Output([]byte(`{"abi":"vigil.predicate/v1","kind":"test.dests","version":"1.0.0","summary":"",` +
		`"standing":false,"default_every":"1s","params_schema":{"type":"object"},"capabilities":` + caps + `}`))
}

// Admit answers params.answer verbatim, or ok when there is none.
func Admit() int32 {
	var req struct {
		Params struct {
			Answer json.RawMessage `json:"answer"`
		} `json:"params"`
	}
	if json.Unmarshal(input(), &req) != nil || len(req.Params.Answer) == 0 {
		return Output([]byte(`{"ok":true}`))
	}
	return Output(req.Params.Answer)
}

// Observe answers pending.
func Observe() int32 { return Output([]byte(`{"status":"pending","note":"quick"}`)) }
