package templates

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	extism "github.com/extism/go-sdk"
)

// The C and AssemblyScript templates copy the call's input into their own
// memory: inputs that grow call after call on one instance are read whole
// (the C buffer grows with them), and one past the 4 MiB bound is refused
// with an error rather than copied. Called directly, as the host's
// runtime never sends such an input through the suite (the schema refuses
// large params first).
func TestTemplatesReadGrowingInputs(t *testing.T) {
	for _, lang := range []Lang{C, AssemblyScript} {
		t.Run(string(lang), func(t *testing.T) {
			t.Parallel()
			env := buildEnv(t, lang)
			dir := filepath.Join(t.TempDir(), "p")
			if _, err := Write(testKind, lang, dir); err != nil {
				t.Fatal(err)
			}
			run(t, dir, env, "make")
			wasm, err := os.ReadFile(filepath.Join(dir, testKind+".wasm"))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			p, err := extism.NewPlugin(ctx, extism.Manifest{
				Wasm:   []extism.Wasm{extism.WasmData{Data: wasm, Name: "main"}},
				Memory: &extism.ManifestMemory{MaxPages: 64 * 16}, // the host's 64 MiB
			}, extism.PluginConfig{EnableWasi: true}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(ctx)
			for _, size := range []int{100, 70 << 10, 140 << 10, 1 << 20, 5 << 20, 200 << 10, 3 << 20} {
				in := admitInput(t, size)
				rc, out, err := p.CallWithContext(ctx, "admit", in)
				if size > 4<<20 {
					if rc == 0 || err == nil || !strings.Contains(err.Error(), "input larger than the plugin reads") {
						t.Fatalf("%d bytes: rc %d, %q, %v; want the input refused", len(in), rc, out, err)
					}
					continue
				}
				if err != nil || rc != 0 || string(out) != `{"ok":true,"deadline":"2026-11-30T14:01:00Z","next_check":"2026-11-30T14:00:00Z"}` {
					t.Fatalf("%d bytes: rc %d, %q, %v", len(in), rc, out, err)
				}
			}
		})
	}
}

// admitInput is an admit request of about size bytes, its grants padded
// with fetch hosts.
func admitInput(t *testing.T, size int) []byte {
	t.Helper()
	var hosts []string
	for n := 0; n < size-150; n += 24 {
		hosts = append(hosts, fmt.Sprintf("h%019d.example", n))
	}
	b, err := json.Marshal(map[string]any{
		"kind":   testKind,
		"params": map[string]string{"at": "2026-11-30T14:00:00Z"},
		"grants": map[string]any{"capabilities": []string{}, "fetch_hosts": hosts},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
