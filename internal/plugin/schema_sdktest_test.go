package plugin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/sdk/sdktest"
)

// sdktest.CompileSchema, which authors' schema tests run, compiles a
// params schema as the host does: the two accept and refuse the same
// schemas, and the same params against each. A change to one side only
// (a loader, the draft, formats noted instead of asserted) fails here.
func TestSDKTestCompilesSchemasAsTheHost(t *testing.T) {
	params := []string{
		`{}`, `{"at":"2026-11-30T14:00:00Z"}`, `{"at":"2026-11-30 14:00"}`, `{"at":"noon"}`,
		`{"url":"https://a.example/"}`, `{"url":"a.example"}`, `{"n":3}`, `{"n":-1}`, `{"n":"3"}`,
		`{"at":"2026-11-30T14:00:00Z","x":1}`, `[]`, `null`, `not json`,
	}
	// A schema file that is there and valid: a loader that read it would
	// compile a reference to it.
	ref := filepath.Join(t.TempDir(), "p.json")
	if err := os.WriteFile(ref, []byte(`{"type":"object"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, schema := range []string{
		`{"$ref":"file://` + filepath.ToSlash(ref) + `"}`,
		`{"type":"object","properties":{"at":{"type":"string","format":"date-time"}},"required":["at"],"additionalProperties":false}`,
		`{"type":"object","properties":{"url":{"type":"string","format":"uri"}}}`,
		`{"type":"object","properties":{"n":{"type":"integer","minimum":0}},"$defs":{"x":{"type":"string"}}}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"n":{"type":"integer"}}}`,
		`{"$ref":"#/$defs/p","$defs":{"p":{"type":"object","properties":{"n":{"type":"integer"}}}}}`,
		`{"$ref":"https://schemas.example.com/p.json"}`,
		`{"$ref":"file:///etc/hostname"}`,
		`{"type":"objekt"}`,
		`{"type":"object","required":"at"}`,
		`{`,
		`true`,
	} {
		host, herr := compileSchema([]byte(schema))
		sdk, serr := sdktest.CompileSchema([]byte(schema))
		if (herr == nil) != (serr == nil) {
			t.Errorf("%s: the host says %v, sdktest says %v", schema, herr, serr)
			continue
		}
		if herr != nil {
			continue
		}
		for _, p := range params {
			_, _, hok := host.validate([]byte(p))
			serr := sdk.Validate([]byte(p))
			if hok != (serr == nil) {
				t.Errorf("%s against %s: the host says valid=%v, sdktest says %v", p, schema, hok, serr)
			}
		}
	}
}

// sdktest.CheckDescribe refuses every describe the host's load refuses,
// and passes every one the host loads that gives a valid example (the one
// rule it adds, as the conformance suite does). A rule added to the host
// only fails here.
func TestSDKTestChecksDescribesAsTheHost(t *testing.T) {
	const good = `{"abi":"vigil.predicate/v1","kind":"t.k","version":"1.0.0","summary":"s","standing":false,
		"default_every":"30s","params_schema":{"type":"object"},"capabilities":["fetch"],"example":{}}`
	for _, mod := range []func(d map[string]any){
		func(map[string]any) {},
		func(d map[string]any) { d["abi"] = "vigil.predicate/v2" },
		func(d map[string]any) { d["kind"] = "K" },
		func(d map[string]any) { d["kind"] = strings.Repeat("k", 65) },
		func(d map[string]any) { d["version"] = "1.0" },
		func(d map[string]any) { d["version"] = "v1.0.0" },
		func(d map[string]any) { d["version"] = "1.0.0-rc.1+b5" },
		func(d map[string]any) { delete(d, "params_schema") },
		func(d map[string]any) { d["params_schema"] = map[string]any{"type": "objekt"} },
		func(d map[string]any) { d["params_schema"] = map[string]any{"$ref": "https://a.example/s.json"} },
		func(d map[string]any) { d["params_schema"] = true },
		func(d map[string]any) { d["capabilities"] = []any{"net"} },
		func(d map[string]any) { d["capabilities"] = []any{"exec", "exec"} },
		func(d map[string]any) { d["capabilities"] = []any{"exec", "fetch"} },
		func(d map[string]any) { d["capabilities"] = nil },
		func(d map[string]any) { d["default_every"] = "" },
		func(d map[string]any) { d["default_every"] = "999ms" },
		func(d map[string]any) { d["default_every"] = "1s" },
		func(d map[string]any) { d["default_every"] = "24h" },
		func(d map[string]any) { d["default_every"] = "24h0m1s" },
		func(d map[string]any) { d["default_every"] = "soon" },
		func(d map[string]any) { d["standing"] = true },
	} {
		var d map[string]any
		if err := json.Unmarshal([]byte(good), &d); err != nil {
			t.Fatal(err)
		}
		mod(d)
		out, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		_, _, _, bad := validateDescribe(out)
		var desc abi.Describe
		if err := json.Unmarshal(out, &desc); err != nil {
			t.Fatal(err)
		}
		_, serr := sdktest.CheckDescribe(desc)
		switch {
		case bad != nil && serr == nil:
			t.Errorf("%s: the host refuses it (%s: %v), sdktest passes it", out, bad.rule, bad.err)
		case bad == nil && serr != nil:
			t.Errorf("%s: the host loads it, sdktest says %v", out, serr)
		}
	}
}
