package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"pgregory.net/rapid"

	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/sdk/abi/schema"
)

// The JSON Schemas of the plugin ABI (sdk/abi/schema) against the Go types
// of sdk/abi, in both directions: every Go field is a schema property of a
// compatible type and every property is a Go field; every field the host
// always writes is required; and Go values drawn within the schema's
// constraints encode to JSON the schema accepts.

// message is one ABI message: its schema file's key in schema.Files, its
// Go type, and whether the host writes it (so every field Go always
// encodes must be required).
type message struct {
	name      string
	typ       reflect.Type
	hostWrite bool
	// fix brings a drawn value within the rules between fields that the
	// schema states with if/then (a settled answer has an outcome).
	fix func(v reflect.Value)
}

func messages() []message {
	return []message{
		{name: "describe", typ: reflect.TypeFor[abi.Describe]()},
		{name: "admit.request", typ: reflect.TypeFor[abi.AdmitRequest](), hostWrite: true},
		{name: "admit.response", typ: reflect.TypeFor[abi.AdmitResponse](), fix: func(v reflect.Value) {
			r := v.Addr().Interface().(*abi.AdmitResponse)
			if !r.OK {
				if r.Code == "" {
					r.Code = abi.CodeInvalidParams
				}
				r.Destinations = nil
				r.PartitionKey = ""
				r.NextCheck = nil
			}
		}},
		{name: "observe.request", typ: reflect.TypeFor[abi.ObserveRequest](), hostWrite: true},
		{name: "observe.response", typ: reflect.TypeFor[abi.ObserveResponse](), fix: func(v reflect.Value) {
			r := v.Addr().Interface().(*abi.ObserveResponse)
			switch r.Status {
			case abi.StatusSettled:
				r.NextCheck = nil
				if r.Outcome == nil {
					r.Outcome = &abi.Outcome{Result: "fired"}
				}
			case abi.StatusChanged:
				if r.Outcome == nil {
					r.Outcome = &abi.Outcome{Result: "changed"}
				}
				if len(r.Baseline) == 0 {
					r.Baseline = json.RawMessage(`{}`)
				}
			case abi.StatusPending:
				r.Outcome = nil
			}
		}},
		{name: "vigil_fetch.request", typ: reflect.TypeFor[abi.FetchRequest]()},
		{name: "vigil_fetch.response", typ: reflect.TypeFor[abi.FetchResponse](), hostWrite: true},
		{name: "vigil_extraction_failed.request", typ: reflect.TypeFor[abi.ExtractionFailedRequest]()},
		{name: "vigil_extraction_failed.response", typ: reflect.TypeFor[abi.ExtractionFailedResponse](), hostWrite: true},
		{name: "vigil_exec.request", typ: reflect.TypeFor[abi.ExecRequest]()},
		{name: "vigil_exec.response", typ: reflect.TypeFor[abi.ExecResponse](), hostWrite: true},
		{name: "wake.request", typ: reflect.TypeFor[abi.WakeRequest](), hostWrite: true},
		{name: "wake.response", typ: reflect.TypeFor[abi.WakeResponse]()},
	}
}

// node is one schema object, decoded as plain JSON.
type node = map[string]any

// loadSchema reads one schema file as plain JSON and compiled.
func loadSchema(t *testing.T, name string) (node, *jsonschema.Schema) {
	t.Helper()
	file, ok := schema.Files()[name]
	if !ok {
		t.Fatalf("no schema for %s", name)
	}
	b, err := fs.ReadFile(schema.FS(), file)
	if err != nil {
		t.Fatal(err)
	}
	var root node
	if err := json.Unmarshal(b, &root); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	c.AssertContent()
	if err := c.AddResource(file, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(file)
	if err != nil {
		t.Fatalf("%s does not compile: %v", file, err)
	}
	return root, s
}

// resolveRef follows a node's $ref within its own document.
func resolveRef(root, n node) node {
	for {
		ref, ok := n["$ref"].(string)
		if !ok {
			return n
		}
		cur := any(root)
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			cur = cur.(node)[part]
		}
		n = cur.(node)
	}
}

var byteType = reflect.TypeFor[[]byte]()

// types lists the JSON types a node allows ("" when it names none).
func types(n node) []string {
	switch v := n["type"].(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, s := range v {
			out = append(out, s.(string))
		}
		return out
	}
	if c, ok := n["const"]; ok {
		return []string{jsonType(c)}
	}
	if e, ok := n["enum"].([]any); ok {
		var out []string
		for _, v := range e {
			if s := jsonType(v); !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case nil:
		return "null"
	case []any:
		return "array"
	}
	return "object"
}

// compare walks a Go type and its schema node together and reports every
// disagreement, each naming its path.
func compare(root, n node, t reflect.Type, hostWrite bool, path string) []string {
	n = resolveRef(root, n)
	var problems []string
	bad := func(format string, args ...any) {
		problems = append(problems, path+": "+fmt.Sprintf(format, args...))
	}
	want := func(jsonTypes ...string) {
		got := types(n)
		if len(got) == 0 {
			bad("the schema names no type, Go has %s", t)
			return
		}
		for _, g := range got {
			if !slices.Contains(jsonTypes, g) {
				bad("the schema allows %s, Go has %s", g, t)
			}
		}
	}
	switch {
	case t == rawType:
		// Any JSON value: the schema may narrow it (params_schema is a
		// schema) but names JSON types only.
		return nil
	case t == timeType:
		want("string")
		if n["format"] != "date-time" {
			bad("a time.Time with format %v, want date-time", n["format"])
		}
		return problems
	case t == byteType:
		want("string")
		if n["contentEncoding"] != "base64" {
			bad("a []byte without contentEncoding base64")
		}
		return problems
	}
	switch t.Kind() {
	case reflect.Pointer:
		return compare(root, n, t.Elem(), hostWrite, path)
	case reflect.String:
		want("string")
	case reflect.Bool:
		want("boolean")
	case reflect.Int, reflect.Int32, reflect.Int64:
		want("integer")
	case reflect.Float64:
		want("number", "integer")
	case reflect.Slice:
		want("array")
		items, _ := n["items"].(node)
		if items == nil {
			bad("an array without items")
			break
		}
		problems = append(problems, compare(root, items, t.Elem(), hostWrite, path+"[]")...)
	case reflect.Map:
		want("object")
		add, _ := n["additionalProperties"].(node)
		if add == nil || t.Key().Kind() != reflect.String {
			bad("a map without additionalProperties of its value")
			break
		}
		problems = append(problems, compare(root, add, t.Elem(), hostWrite, path+"{}")...)
	case reflect.Struct:
		want("object")
		if n["additionalProperties"] != false {
			bad("an object that allows properties its Go type does not have")
		}
		props, _ := n["properties"].(node)
		var required []string
		for _, r := range asSlice(n["required"]) {
			required = append(required, r.(string))
		}
		var names []string
		for _, f := range jsonFields(t) {
			names = append(names, f.name)
			p, ok := props[f.name].(node)
			if !ok {
				bad("Go field %s (%q) is not in the schema", f.goName, f.name)
				continue
			}
			if hostWrite && !f.omitempty && !slices.Contains(required, f.name) {
				bad("the host always writes %q, and the schema does not require it", f.name)
			}
			problems = append(problems, compare(root, p, f.typ, hostWrite, path+"."+f.name)...)
		}
		for name := range props {
			if !slices.Contains(names, name) {
				bad("schema property %q is no field of %s", name, t)
			}
		}
		for _, r := range required {
			if !slices.Contains(names, r) {
				bad("required %q is no field of %s", r, t)
			}
		}
	default:
		bad("Go type %s has no JSON mapping here", t)
	}
	return problems
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

func TestABISchemasMatchTheGoTypes(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range messages() {
		seen[m.name] = true
		t.Run(m.name, func(t *testing.T) {
			root, _ := loadSchema(t, m.name)
			for _, p := range compare(root, root, m.typ, m.hostWrite, m.name) {
				t.Error(p)
			}
		})
	}
	for name := range schema.Files() {
		if !seen[name] {
			t.Errorf("schema %s has no Go type in this test", name)
		}
	}
	// Every file in the package is listed by Files.
	entries, err := fs.ReadDir(schema.FS(), ".")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, f := range schema.Files() {
		listed[f] = true
	}
	for _, e := range entries {
		if !listed[e.Name()] {
			t.Errorf("%s is in the package and not in schema.Files", e.Name())
		}
	}
}

// The comparison bites: a Go field the schema lacks, a property Go lacks,
// a type that differs, and a host-written field the schema leaves
// optional are each reported.
func TestABISchemaComparisonBites(t *testing.T) {
	type pair struct {
		Status string `json:"status"`
		Count  int    `json:"count,omitempty"`
	}
	base := func() node {
		return node{"type": "object", "additionalProperties": false, "required": []any{"status"},
			"properties": node{"status": node{"type": "string"}, "count": node{"type": "integer"}}}
	}
	if p := compare(base(), base(), reflect.TypeFor[pair](), true, "pair"); len(p) != 0 {
		t.Fatalf("a matching pair: %q", p)
	}
	for _, tt := range []struct {
		name string
		mod  func(n node)
		says string
	}{
		{"property Go lacks", func(n node) { n["properties"].(node)["extra"] = node{"type": "string"} }, `schema property "extra"`},
		{"field the schema lacks", func(n node) { delete(n["properties"].(node), "count") }, `Go field Count ("count")`},
		{"type differs", func(n node) { n["properties"].(node)["count"] = node{"type": "string"} }, "allows string"},
		{"host-written field optional", func(n node) { n["required"] = []any{} }, `always writes "status"`},
		{"open object", func(n node) { delete(n, "additionalProperties") }, "allows properties"},
		{"required that is no field", func(n node) { n["required"] = []any{"status", "gone"} }, `required "gone"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := base()
			tt.mod(n)
			p := compare(n, n, reflect.TypeFor[pair](), true, "pair")
			if len(p) == 0 || !strings.Contains(strings.Join(p, "\n"), tt.says) {
				t.Fatalf("reported %q, want one saying %q", p, tt.says)
			}
		})
	}
}

// Go values drawn within each schema's constraints (its enums, patterns,
// bounds and required fields, and the rules between fields) encode to
// JSON the schema accepts, and that JSON decodes strictly back into the
// Go type.
func TestABISchemasAcceptWhatGoWrites(t *testing.T) {
	for _, m := range messages() {
		t.Run(m.name, func(t *testing.T) {
			root, s := loadSchema(t, m.name)
			rapid.Check(t, func(rt *rapid.T) {
				v := reflect.New(m.typ).Elem()
				draw(rt, root, root, v, true)
				if m.fix != nil {
					m.fix(v)
				}
				b, err := json.Marshal(v.Interface())
				if err != nil {
					rt.Fatal(err)
				}
				doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
				if err != nil {
					rt.Fatal(err)
				}
				if err := s.Validate(doc); err != nil {
					rt.Fatalf("%s: %v", b, err)
				}
				back := reflect.New(m.typ)
				if err := abi.StrictUnmarshal(b, back.Interface()); err != nil {
					rt.Fatalf("%s does not decode strictly: %v", b, err)
				}
			})
		})
	}
}

// draw fills v with a value of its Go type within node n's constraints.
// present says the field will be encoded (it is required, or drawn to be
// there): an omitempty field that must be present is drawn non-zero.
func draw(t *rapid.T, root, n node, v reflect.Value, present bool) {
	n = resolveRef(root, n)
	typ := v.Type()
	switch {
	case typ == rawType:
		v.Set(reflect.ValueOf(drawRaw(t, n)))
		return
	case typ == timeType:
		v.Set(reflect.ValueOf(drawTime(t, n)))
		return
	case typ == byteType:
		v.Set(reflect.ValueOf(rapid.SliceOfN(rapid.Byte(), 1, 16).Draw(t, "bytes")))
		return
	}
	switch typ.Kind() {
	case reflect.Pointer:
		p := reflect.New(typ.Elem())
		draw(t, root, n, p.Elem(), true)
		v.Set(p)
	case reflect.String:
		v.SetString(drawString(t, n, present))
	case reflect.Bool:
		v.SetBool(present || rapid.Bool().Draw(t, "bool"))
	case reflect.Int, reflect.Int32, reflect.Int64:
		lo, hi := int64(-1<<31), int64(1<<31)
		if m, ok := n["minimum"].(float64); ok {
			lo = int64(m)
		}
		if m, ok := n["maximum"].(float64); ok {
			hi = int64(m)
		}
		x := rapid.Int64Range(lo, hi).Filter(func(x int64) bool { return x != 0 || !present }).Draw(t, "int")
		v.SetInt(x)
	case reflect.Float64:
		f := rapid.Float64Range(1e-3, 1e6).Draw(t, "float")
		if _, ok := n["exclusiveMinimum"]; !ok && rapid.Bool().Draw(t, "negative") {
			f = -f
		}
		v.SetFloat(f)
	case reflect.Slice:
		items := n["items"].(node)
		lo, hi := 0, 4
		if m, ok := n["minItems"].(float64); ok {
			lo = int(m)
		}
		if present && lo == 0 {
			lo = 1
		}
		if e, ok := resolveRef(root, items)["enum"].([]any); ok && n["uniqueItems"] == true {
			hi = min(hi, len(e))
		}
		k := rapid.IntRange(lo, max(lo, hi)).Draw(t, "len")
		s := reflect.MakeSlice(typ, 0, k)
		for i := 0; i < k; i++ {
			e := reflect.New(typ.Elem()).Elem()
			draw(t, root, items, e, true)
			if n["uniqueItems"] == true && slices.ContainsFunc(s.Interface().([]string), func(x string) bool { return x == e.String() }) {
				continue
			}
			s = reflect.Append(s, e)
		}
		v.Set(s)
	case reflect.Map:
		k := rapid.IntRange(0, 4).Draw(t, "props")
		if present && k == 0 {
			k = 1
		}
		m := reflect.MakeMap(typ)
		for i := 0; i < k; i++ {
			e := reflect.New(typ.Elem()).Elem()
			draw(t, root, n["additionalProperties"].(node), e, true)
			m.SetMapIndex(reflect.ValueOf(rapid.StringMatching(`[a-z][a-z0-9-]{0,15}`).Draw(t, "key")), e)
		}
		v.Set(m)
	case reflect.Struct:
		props := n["properties"].(node)
		var required []string
		for _, r := range asSlice(n["required"]) {
			required = append(required, r.(string))
		}
		for i, f := range jsonFields(typ) {
			_ = i
			need := slices.Contains(required, f.name)
			if !need && f.omitempty && rapid.Bool().Draw(t, "omit "+f.name) {
				continue
			}
			draw(t, root, props[f.name].(node), v.FieldByIndex(f.index), need || f.omitempty)
		}
	default:
		t.Fatalf("no draw for %s", typ)
	}
}

func drawString(t *rapid.T, n node, present bool) string {
	if c, ok := n["const"].(string); ok {
		return c
	}
	if e, ok := n["enum"].([]any); ok {
		return e[rapid.IntRange(0, len(e)-1).Draw(t, "enum")].(string)
	}
	if p, ok := n["pattern"].(string); ok {
		return rapid.StringMatching(p).Filter(func(s string) bool { return s != "" || !present }).Draw(t, "pattern")
	}
	lo, hi := 0, 32
	if m, ok := n["minLength"].(float64); ok {
		lo = int(m)
	}
	if present && lo == 0 {
		lo = 1
	}
	if m, ok := n["maxLength"].(float64); ok {
		hi = min(hi, int(m))
	}
	return rapid.StringN(lo, hi, -1).Draw(t, "string")
}

// drawTime is an instant in years 0000-9999: in UTC when the node's
// pattern allows only Z (what the host writes), else at an offset of
// whole minutes, with or without a fraction.
func drawTime(t *rapid.T, n node) time.Time {
	lo := time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	hi := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Unix()
	at := time.Unix(rapid.Int64Range(lo, hi).Draw(t, "sec"), 0)
	if rapid.Bool().Draw(t, "fraction") {
		at = at.Add(time.Duration(rapid.Int64Range(0, 999_999_999).Draw(t, "nsec")))
	}
	if p, _ := n["pattern"].(string); strings.HasSuffix(p, ")?Z$") {
		return at.UTC()
	}
	// The year is written as it reads at the offset, and encoding/json
	// writes only years 0000-9999: the first instant at a negative
	// offset is in year -1 there.
	off := rapid.IntRange(-23*60-59, 23*60+59).Filter(func(off int) bool {
		y := at.In(time.FixedZone("", off*60)).Year()
		return y >= 0 && y <= 9999
	}).Draw(t, "offset minutes")
	return at.In(time.FixedZone("", off*60))
}

// drawRaw is a JSON value for a json.RawMessage: a schema (an object or a
// boolean) where the node says so, else any small value.
func drawRaw(t *rapid.T, n node) json.RawMessage {
	if ts := types(n); len(ts) > 0 {
		switch rapid.SampledFrom(ts).Draw(t, "raw type") {
		case "boolean":
			return json.RawMessage(`true`)
		case "object":
			return json.RawMessage(`{"type":"object"}`)
		}
	}
	v := rapid.OneOf(
		rapid.Just[any](nil),
		rapid.Map(rapid.Bool(), func(b bool) any { return b }),
		rapid.Map(rapid.Float64Range(-1e9, 1e9), func(f float64) any { return math.Round(f) }),
		rapid.Map(rapid.String(), func(s string) any { return s }),
		rapid.Map(rapid.MapOfN(rapid.StringMatching(`[a-z]{1,8}`), rapid.String(), 0, 3), func(m map[string]string) any { return m }),
	).Draw(t, "raw")
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
