package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/vigilhq/vigil/sdk/abi"
)

// FuzzParseRegistry: a plugin directory's registry.json either reads as a
// registry whose every entry is within the rules (a valid kind, bounded
// timeouts, memory and read floor, exec only with its capability), which encoded
// again reads back the same, or is refused as a *RegistryError naming the
// file (and the kind, when one entry is at fault).
func FuzzParseRegistry(f *testing.F) {
	for _, s := range []string{
		`{"kinds":{"ci":{"wasm":"ci.wasm","capabilities":["fetch"],"fetch_hosts":["api.github.com","*.example.com"],"private_ranges":["10.0.0.0/8"],"timeout":"5s","memory_mib":64,"config":{"forge":"github"}}}}`,
		`{"kinds":{"cmd":{"capabilities":["exec"],"exec":{"programs":["/bin/true","git"],"env":["HOME"],"max_timeout":"10s"},"timeout":"20s","secrets":["github"]}}}`,
		`{"kinds":{"cmd":{"capabilities":["exec"],"exec":{"programs":["git"],"max_timeout":"1m"},"timeout":"30s"}}}`,
		`{"kinds":{"x":{"exec":{"programs":["git"]}}}}`,
		`{"kinds":{"Bad Kind":{}}}`, `{"kinds":{"ci":{"wasm":"../ci.wasm"}}}`, `{"kinds":{"ci":{"timeout":"-1s"}}}`,
		`{"kinds":{"ci":{"timeout":5}}}`, `{"kinds":{"ci":{"memory_mib":5000}}}`, `{"kinds":{"ci":{"grants":[]}}}`,
		`{"kinds":{"ci":{"fetch_hosts":["a*b"]}}}`, `{"kinds":{}} {}`, `{"kinds":null}`, `{}`, `[]`, ``,
		`{"kinds":{"ticket":{"min_read_interval":"1m"}}}`, `{"kinds":{"ticket":{"min_read_interval":"-1s"}}}`, `{"kinds":{"ticket":{"min_read_interval":"24h0m1s"}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const label = "plugins/registry.json"
		r, err := readRegistry(fstest.MapFS{RegistryFile: {Data: data}}, label)
		if err != nil {
			var re *RegistryError
			if !errors.As(err, &re) || re.File != label || re.Key != "" && !strings.HasPrefix(re.Key, "kinds.") {
				t.Fatalf("%q: %T %v: want a *RegistryError naming %s", data, err, err, label)
			}
			return
		}
		for kind, e := range r.Kinds {
			hasExec := false
			for _, c := range e.Capabilities {
				hasExec = hasExec || c == abi.CapabilityExec
			}
			if abi.CheckKind(kind) != nil || time.Duration(e.Timeout) < 0 || time.Duration(e.Timeout) > maxTimeout ||
				e.MemoryMiB > maxMemoryMiB || hasExec != (e.Exec != nil) ||
				time.Duration(e.MinReadInterval) < 0 || time.Duration(e.MinReadInterval) > MaxMinReadInterval ||
				e.Exec != nil && (len(e.Exec.Programs) == 0 || e.Exec.Max() <= 0 || e.Exec.Max() > maxTimeout ||
					e.Timeout > 0 && e.Exec.Max() >= time.Duration(e.Timeout)) {
				t.Fatalf("%q: accepted %s: %+v", data, kind, e)
			}
		}
		enc, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("%q accepted, and does not encode: %v", data, err)
		}
		back, err := ParseRegistry(label, enc)
		if err != nil {
			t.Fatalf("%q accepted as %s, which is refused: %v", data, enc, err)
		}
		if again, _ := json.Marshal(back); !bytes.Equal(again, enc) {
			t.Fatalf("%q -> %s -> %s", data, enc, again)
		}
	})
}
