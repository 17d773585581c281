package plugin

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// paramsSchema is a plugin's compiled params schema.
type paramsSchema struct {
	s       *jsonschema.Schema
	printer *message.Printer
}

// noLoader refuses every reference outside the schema document: a plugin's
// schema must not make the host read a file or reach the network.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema reference %q: only references within the schema are allowed", url)
}

const schemaURL = "vigil:params.json"

func compileSchema(raw []byte) (*paramsSchema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("params_schema is not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("params_schema: %w", err)
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("params_schema does not compile: %w", err)
	}
	return &paramsSchema{s: s, printer: message.NewPrinter(language.English)}, nil
}

// validate checks params against the schema and names the first failing
// field, as a dotted path ("repo.owner"; "" for the params object itself).
func (ps *paramsSchema) validate(params []byte) (field, msg string, ok bool) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(params))
	if err != nil {
		return "", "params are not JSON: " + err.Error(), false
	}
	err = ps.s.Validate(v)
	if err == nil {
		return "", "", true
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return "", err.Error(), false
	}
	leaf := firstLeaf(ve)
	loc := leaf.InstanceLocation
	switch k := leaf.ErrorKind.(type) {
	case *kind.Required:
		if len(k.Missing) > 0 {
			loc = append(loc[:len(loc):len(loc)], k.Missing[0])
		}
	case *kind.AdditionalProperties:
		if len(k.Properties) > 0 {
			loc = append(loc[:len(loc):len(loc)], k.Properties[0])
		}
	}
	return strings.Join(loc, "."), leaf.ErrorKind.LocalizedString(ps.printer), false
}

func firstLeaf(ve *jsonschema.ValidationError) *jsonschema.ValidationError {
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	return ve
}

// Schema is a compiled JSON Schema, compiled as a plugin's params schema
// is (draft 2020-12 by default, formats asserted, no reference outside the
// document): the host's one JSON Schema library, for what else it
// validates (a signal's data against the schema its registration gave).
type Schema struct{ ps *paramsSchema }

// CompileSchema compiles raw.
func CompileSchema(raw []byte) (*Schema, error) {
	ps, err := compileSchema(raw)
	if err != nil {
		return nil, err
	}
	return &Schema{ps: ps}, nil
}

// Validate checks the JSON document doc: ok, or the first failing field
// as a dotted path ("" for the document itself) and what is wrong with it.
func (s *Schema) Validate(doc []byte) (field, msg string, ok bool) { return s.ps.validate(doc) }
