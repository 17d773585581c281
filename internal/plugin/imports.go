package plugin

import (
	"errors"
	"fmt"
)

// provided says whether a plugin may import from module: the Extism
// kernel, vigil's host functions and WASI. wazero's own error for any
// other ("module[env] not instantiated") names neither the import nor
// what to do, so a load checks first and says both.
func provided(module string) bool {
	switch module {
	case "extism:host/env", "extism:host/user", "wasi_snapshot_preview1":
		return true
	}
	return false
}

const providedList = "extism:host/env, extism:host/user and wasi_snapshot_preview1"

// ErrImport is a plugin importing from a module the host does not provide.
var ErrImport = errors.New("import from a module the host does not provide")

// checkImports refuses a module that imports from a module the host does
// not provide, naming the first such import. A module it cannot read is
// left to the compiler, which says what is wrong with it.
func checkImports(wasm []byte) error {
	imps, err := wasmImports(wasm)
	if err != nil {
		return nil
	}
	for _, im := range imps {
		if provided(im.module) {
			continue
		}
		hint := ""
		if im.module == "env" && im.name == "abort" {
			hint = "; AssemblyScript imports it by default: build with --use abort= or point it at a function of your own (docs/abi.md)"
		}
		return fmt.Errorf("%w: the plugin imports %s.%s, and the host provides only %s%s",
			ErrImport, im.module, im.name, providedList, hint)
	}
	return nil
}

// wasmImport is one entry of a module's import section.
type wasmImport struct{ module, name string }

// errWasm is a module wasmImports cannot read.
var errWasm = errors.New("not a readable wasm module")

// wasmImports reads the import section of a binary wasm module: the
// module and name of every import, in order. It reads nothing else and
// never trusts a length: every read is bounded by the bytes there are.
func wasmImports(b []byte) ([]wasmImport, error) {
	sec, ok, err := wasmSection(b, 2)
	if !ok || err != nil {
		return nil, err
	}
	return sec.imports()
}

// wasmSection finds the section id of a binary wasm module, reading only
// the sections' ids and sizes: a reader over its bytes, or false when the
// module has none.
func wasmSection(b []byte, id byte) (wasmReader, bool, error) {
	if len(b) < 8 || string(b[:4]) != "\x00asm" {
		return wasmReader{}, false, errWasm
	}
	r := wasmReader{b: b, i: 8}
	for r.i < len(r.b) {
		sid, err := r.byte()
		if err != nil {
			return wasmReader{}, false, err
		}
		size, err := r.u32()
		if err != nil {
			return wasmReader{}, false, err
		}
		if uint64(size) > uint64(len(r.b)-r.i) {
			return wasmReader{}, false, errWasm
		}
		if sid == id {
			return wasmReader{b: r.b[r.i : r.i+int(size)]}, true, nil
		}
		r.i += int(size)
	}
	return wasmReader{}, false, nil
}

type wasmReader struct {
	b []byte
	i int
}

func (r *wasmReader) byte() (byte, error) {
	if r.i >= len(r.b) {
		return 0, errWasm
	}
	c := r.b[r.i]
	r.i++
	return c, nil
}

// u32 reads an unsigned LEB128 of at most 5 bytes.
func (r *wasmReader) u32() (uint32, error) {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		v |= uint32(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, nil
		}
	}
	return 0, errWasm
}

func (r *wasmReader) name() (string, error) {
	n, err := r.u32()
	if err != nil || uint64(n) > uint64(len(r.b)-r.i) {
		return "", errWasm
	}
	s := string(r.b[r.i : r.i+int(n)])
	r.i += int(n)
	return s, nil
}

func (r *wasmReader) limits() error {
	flags, err := r.byte()
	if err != nil {
		return err
	}
	if _, err := r.u32(); err != nil {
		return err
	}
	if flags&1 != 0 {
		_, err = r.u32()
	}
	return err
}

// imports reads an import section's entries.
func (r *wasmReader) imports() ([]wasmImport, error) {
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	// Each entry takes at least four bytes: no count past what is there.
	if uint64(n) > uint64(len(r.b))/4+1 {
		return nil, errWasm
	}
	out := make([]wasmImport, 0, n)
	for range n {
		mod, err := r.name()
		if err != nil {
			return nil, err
		}
		name, err := r.name()
		if err != nil {
			return nil, err
		}
		kind, err := r.byte()
		if err != nil {
			return nil, err
		}
		switch kind {
		case 0: // func: a type index
			_, err = r.u32()
		case 1: // table: a reference type, then limits
			if _, err = r.byte(); err == nil {
				err = r.limits()
			}
		case 2: // memory: limits
			err = r.limits()
		case 3: // global: a value type and mutability
			if _, err = r.byte(); err == nil {
				_, err = r.byte()
			}
		case 4: // tag: an attribute and a type index
			if _, err = r.byte(); err == nil {
				_, err = r.u32()
			}
		default:
			return nil, errWasm
		}
		if err != nil {
			return nil, err
		}
		out = append(out, wasmImport{module: mod, name: name})
	}
	return out, nil
}
