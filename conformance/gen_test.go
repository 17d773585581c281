package conformance

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

const richSchema = `{
  "type": "object",
  "properties": {
    "name": {"type": "string", "minLength": 1, "maxLength": 40},
    "count": {"type": "integer", "minimum": 1, "maximum": 10},
    "ratio": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
    "mode": {"enum": ["fast", "slow"]},
    "at": {"type": "string", "format": "date-time"},
    "on": {"type": "boolean"},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "minItems": 1, "maxItems": 3},
    "repo": {"$ref": "#/$defs/repo"}
  },
  "required": ["name", "count", "repo"],
  "additionalProperties": false,
  "$defs": {
    "repo": {"type": "object", "properties": {"owner": {"type": "string", "minLength": 1}, "name": {"type": "string", "minLength": 1}},
             "required": ["owner", "name"], "additionalProperties": false}
  }
}`

const richExample = `{"name":"x","count":3,"repo":{"owner":"o","name":"n"}}`

func TestGenerateIsRepeatableAndValidJSON(t *testing.T) {
	a := generate(json.RawMessage(richSchema), json.RawMessage(richExample), 300, 7)
	b := generate(json.RawMessage(richSchema), json.RawMessage(richExample), 300, 7)
	c := generate(json.RawMessage(richSchema), json.RawMessage(richExample), 300, 8)
	if len(a) != 300 {
		t.Fatalf("%d params, want 300", len(a))
	}
	same := func(x, y []json.RawMessage) bool {
		return slices.EqualFunc(x, y, func(p, q json.RawMessage) bool { return bytes.Equal(p, q) })
	}
	if !same(a, b) {
		t.Fatal("the same seed drew different params")
	}
	if same(a, c) {
		t.Fatal("another seed drew the same params")
	}
	for _, p := range a {
		if !json.Valid(p) {
			t.Fatalf("not JSON: %.80s", p)
		}
	}
}

// What the generator draws from the schema mostly passes it: those are
// the params that reach admit and observe. No whole-params junk passes.
func TestGenerateDrawsFromTheSchema(t *testing.T) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(richSchema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("s.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("s.json")
	if err != nil {
		t.Fatal(err)
	}
	params := generate(json.RawMessage(richSchema), json.RawMessage(richExample), 400, 1)
	nJunk := len(junk()) + 8*len(junkValues())
	valid := func(ps []json.RawMessage) int {
		n := 0
		for _, p := range ps {
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(p))
			if err == nil && s.Validate(v) == nil {
				n++
			}
		}
		return n
	}
	if n := valid(params[:len(junk())]); n != 0 {
		t.Errorf("%d whole-params junk pass the schema", n)
	}
	drawn := params[nJunk:]
	if n := valid(drawn); n < len(drawn)/2 {
		t.Errorf("%d of %d drawn params pass the schema, want at least half", n, len(drawn))
	}
}
