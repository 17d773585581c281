// Command offcontract is a test plugin written against the Extism ABI
// without vigil's SDK, as a plugin in another language would be. Its
// describe is valid; its first observe answers a status the contract does
// not have, which the host must treat as a fault, not an outcome.
package main

//go:wasmimport extism:host/env alloc
func alloc(n uint64) uint64

//go:wasmimport extism:host/env store_u8
func storeU8(offset uint64, v uint32)

//go:wasmimport extism:host/env output_set
func outputSet(offset, n uint64)

func output(s string) int32 {
	off := alloc(uint64(len(s)))
	for i := 0; i < len(s); i++ {
		storeU8(off+uint64(i), uint32(s[i]))
	}
	outputSet(off, uint64(len(s)))
	return 0
}

//go:wasmexport describe
func describe() int32 {
	return output(`{"abi":"vigil.predicate/v1","kind":"test.offcontract","version":"1.0.0","summary":"",` +
		`"standing":false,"default_every":"1s","params_schema":{"type":"object"},"capabilities":[]}`)
}

//go:wasmexport admit
func admit() int32 { return output(`{"ok":true}`) }

var calls int

// observe is off contract on its first call and sound after, so a test can
// show the instance was kept and the plugin still serves.
//
//go:wasmexport observe
func observe() int32 {
	calls++
	if calls == 1 {
		return output(`{"status":"failed","outcome":{"result":"red"}}`)
	}
	return output(`{"status":"pending","note":"quick"}`)
}

func main() {}
