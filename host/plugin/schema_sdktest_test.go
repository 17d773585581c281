package plugin

import (
	"os"
	"path/filepath"
	"testing"

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
