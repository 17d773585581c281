package plugintest

import (
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/vigilhq/vigil/sdk/abi"
)

// compileSchema compiles a plugin's params schema the way the host does
// (draft 2020-12, formats asserted), failing the test if it does not.
func compileSchema(tb testing.TB, schema string) *jsonschema.Schema {
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

// CheckSchema compiles schema as compileSchema does and checks each params
// document against it: valid when want[doc] is true, refused otherwise.
func CheckSchema(tb testing.TB, schema string, want map[string]bool) {
	tb.Helper()
	s := compileSchema(tb, schema)
	for doc, ok := range want {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
		if err != nil {
			tb.Fatalf("%s: %v", doc, err)
		}
		if err := s.Validate(v); (err == nil) != ok {
			tb.Errorf("%s: valid = %v, want %v (%v)", doc, err == nil, ok, err)
		}
	}
}

// CheckAdmit checks one admit answer: invalid_params naming field when
// field is set; else unobservable naming setting, its message holding
// says, when setting is set; else admitted.
func CheckAdmit(tb testing.TB, got abi.AdmitResponse, field, setting, says string) {
	tb.Helper()
	switch {
	case field != "":
		if got.Code != abi.CodeInvalidParams || got.Field != field {
			tb.Fatalf("admit = %+v, want invalid_params on %s", got, field)
		}
	case setting != "":
		if got.Code != abi.CodeUnobservable || got.Setting != setting || !strings.Contains(got.Message, says) {
			tb.Fatalf("admit = %+v, want unobservable naming %s and saying %q", got, setting, says)
		}
	default:
		if !got.OK {
			tb.Fatalf("admit = %+v, want ok", got)
		}
	}
}
