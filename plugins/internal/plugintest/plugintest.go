// Package plugintest is test support for the bundled plugins: what their
// tests share. It must never be imported by a plugin's own code.
package plugintest

import (
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// CompileSchema compiles a plugin's params schema the way the host does
// (draft 2020-12, formats asserted), failing the test if it does not.
func CompileSchema(tb testing.TB, schema string) *jsonschema.Schema {
	tb.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		tb.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource("params.json", doc); err != nil {
		tb.Fatal(err)
	}
	s, err := c.Compile("params.json")
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
