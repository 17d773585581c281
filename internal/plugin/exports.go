package plugin

import (
	"slices"

	"github.com/vigilhq/vigil/sdk/abi"
)

// exportsWake says whether a module exports the optional wake function,
// read from its export section: the load learns which kinds wake without
// starting an instance. A module it cannot read exports nothing here (the
// compiler has refused it already).
func exportsWake(wasm []byte) bool {
	names, err := wasmFuncExports(wasm)
	return err == nil && slices.Contains(names, abi.ExportWake)
}

// wasmFuncExports reads the export section of a binary wasm module: the
// name of every exported function, in order. Like wasmImports it reads
// nothing else and never trusts a length.
func wasmFuncExports(b []byte) ([]string, error) {
	sec, ok, err := wasmSection(b, 7)
	if !ok || err != nil {
		return nil, err
	}
	return sec.funcExports()
}

// funcExports reads an export section's entries, keeping the functions'
// names.
func (r *wasmReader) funcExports() ([]string, error) {
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	// Each entry takes at least three bytes: no count past what is there.
	if uint64(n) > uint64(len(r.b))/3+1 {
		return nil, errWasm
	}
	var out []string
	for range n {
		name, err := r.name()
		if err != nil {
			return nil, err
		}
		kind, err := r.byte()
		if err != nil {
			return nil, err
		}
		if _, err := r.u32(); err != nil { // the index
			return nil, err
		}
		if kind == 0 { // func
			out = append(out, name)
		}
	}
	return out, nil
}
