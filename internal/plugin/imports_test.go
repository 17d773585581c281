package plugin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// importPlugin is a module, raw Extism ABI and no dependencies, whose
// describe calls one import given by the test: what docs/abi.md says a
// module may not import, each refused at load with the message it quotes,
// and a kernel import it says traps.
const importPlugin = `package main

//go:wasmimport MODULE NAME
func imported(SIGNATURE

//go:wasmexport describe
func describe() int32 { CALL; return 0 }

//go:wasmexport admit
func admit() int32 { return 0 }

//go:wasmexport observe
func observe() int32 { return 0 }

func main() {}
`

func TestImportsOutsideTheHostsModulesAreRefusedAtLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds four plugins")
	}
	for _, tt := range []struct {
		name, module, fn, signature, call, says string
	}{
		{"env", "env", "abort", "a, b, c, d uint32)", "imported(0, 0, 0, 0)",
			"the plugin imports env.abort, and the host provides only extism:host/env, extism:host/user and wasi_snapshot_preview1; AssemblyScript imports it by default: build with --use abort="},
		{"unknown host function", "extism:host/user", "vigil_fech", "off uint64) uint64", "imported(0)",
			`"vigil_fech" is not exported in module "extism:host/user"`},
		{"wrong signature", "extism:host/user", "vigil_fetch", "off uint32) uint32", "imported(0)",
			"import func[extism:host/user.vigil_fetch]: signature mismatch: i32_i32 != i64_i64"},
		// Present, and refused when called: vars are disabled.
		{"var_set", "extism:host/env", "var_set", "key, value uint64)", "imported(0, 0)",
			"Vars are disabled by this host"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := t.TempDir()
			body := strings.NewReplacer("MODULE", tt.module, "NAME", tt.fn, "SIGNATURE", tt.signature, "CALL", tt.call).Replace(importPlugin)
			for name, text := range map[string]string{"go.mod": "module imports\n\ngo 1.24\n", "main.go": body} {
				if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			dir := t.TempDir()
			copyFile(t, builder.Build(t, src), filepath.Join(dir, "imports.wasm"))
			r := newRuntime(t, Config{Dir: dir})
			ps := r.Problems()
			if len(ps) != 1 || !strings.Contains(ps[0].Error(), tt.says) {
				t.Fatalf("problems = %v, want one saying %q", ps, tt.says)
			}
		})
	}
}
