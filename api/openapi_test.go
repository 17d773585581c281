package api

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

// The tests below keep openapi.yaml in step with this package: the schemas
// mirror the wire types field by field, the error codes are this file's
// codes with the statuses Status gives them, and what the Go types marshal
// to validates against the schemas. internal/httpapi checks the paths and
// methods against the routes the server registers.

const docURL = "file:///openapi.json"

// openAPIDoc is openapi.yaml parsed, as the JSON it is equivalent to.
func openAPIDoc(t *testing.T) (map[string]any, []byte) {
	t.Helper()
	var raw any
	if err := yaml.Unmarshal(OpenAPI(), &raw); err != nil {
		t.Fatalf("openapi.yaml does not parse: %v", err)
	}
	b, err := json.Marshal(raw) // fails on a mapping key that is not a string
	if err != nil {
		t.Fatalf("openapi.yaml is not JSON-compatible (quote keys such as '200'): %v", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc, b
}

// m is a YAML mapping, or nil.
func m(v any) map[string]any {
	x, _ := v.(map[string]any)
	return x
}

// resolve follows a local JSON pointer ("#/components/schemas/Watch").
func resolve(doc map[string]any, ref string) (any, bool) {
	p, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, false
	}
	var cur any = doc
	for _, tok := range strings.Split(p, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		next, ok := m(cur)[tok]
		if !ok {
			return nil, false
		}
		cur = next
	}
	return cur, true
}

// refs calls f with every $ref in v and where it stands.
func refs(v any, at string, f func(at, ref string)) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "$ref" {
				f(at, s)
				continue
			}
			refs(e, at+"/"+k, f)
		}
	case []any:
		for i, e := range x {
			refs(e, at+"/"+strconv.Itoa(i), f)
		}
	}
}

func TestOpenAPIParses(t *testing.T) {
	doc, _ := openAPIDoc(t)
	if v, _ := doc["openapi"].(string); !regexp.MustCompile(`^3\.1\.\d+$`).MatchString(v) {
		t.Errorf("openapi: %q, want 3.1.x", v)
	}
	info := m(doc["info"])
	if info["title"] != "vigil" || info["version"] != "0.1.0" || info["description"] == "" {
		t.Errorf("info: %v", info)
	}
	if len(m(doc["paths"])) == 0 {
		t.Error("no paths")
	}
	mine := OpenAPI()
	mine[0] = '#'
	if OpenAPI()[0] == '#' {
		t.Error("OpenAPI must return a copy: a caller changed the embedded document")
	}
}

func TestOpenAPIRefsResolve(t *testing.T) {
	doc, _ := openAPIDoc(t)
	var bad []string
	refs(doc, "#", func(at, ref string) {
		if _, ok := resolve(doc, ref); !ok {
			bad = append(bad, at+": "+ref)
		}
	})
	if len(bad) > 0 {
		t.Errorf("$refs that do not resolve within the document:\n  %s", strings.Join(bad, "\n  "))
	}
}

func TestOpenAPISchemasAllReferenced(t *testing.T) {
	doc, _ := openAPIDoc(t)
	used := map[string]bool{}
	refs(doc, "#", func(_, ref string) {
		if name, ok := strings.CutPrefix(ref, "#/components/schemas/"); ok {
			used[name] = true
		}
	})
	var unused []string
	for name := range m(m(doc["components"])["schemas"]) {
		if !used[name] {
			unused = append(unused, name)
		}
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		t.Errorf("components/schemas never referenced: %v", unused)
	}
}

// wireTypes are the schemas that mirror a Go type of this package, by the
// type's name. Every struct type in types.go must be here.
var wireTypes = map[string]reflect.Type{
	"Error":            reflect.TypeFor[Error](),
	"ErrorEnvelope":    reflect.TypeFor[ErrorEnvelope](),
	"RecipientRef":     reflect.TypeFor[RecipientRef](),
	"WatchRequest":     reflect.TypeFor[WatchRequest](),
	"Outcome":          reflect.TypeFor[Outcome](),
	"MessagePush":      reflect.TypeFor[MessagePush](),
	"Watch":            reflect.TypeFor[Watch](),
	"SignalRequest":    reflect.TypeFor[SignalRequest](),
	"Signal":           reflect.TypeFor[Signal](),
	"SignalConflict":   reflect.TypeFor[SignalConflict](),
	"HeartbeatRequest": reflect.TypeFor[HeartbeatRequest](),
	"Heartbeat":        reflect.TypeFor[Heartbeat](),
	"Ping":             reflect.TypeFor[Ping](),
	"HookAccepted":     reflect.TypeFor[HookAccepted](),
	"Fault":            reflect.TypeFor[Fault](),
	"WatchList":        reflect.TypeFor[WatchList](),
	"Message":          reflect.TypeFor[Message](),
	"Mailbox":          reflect.TypeFor[Mailbox](),
	"WebhookRequest":   reflect.TypeFor[WebhookRequest](),
	"Ref":              reflect.TypeFor[Ref](),
	"RecipientRequest": reflect.TypeFor[RecipientRequest](),
	"WebhookView":      reflect.TypeFor[WebhookView](),
	"Recipient":        reflect.TypeFor[Recipient](),
	"Plugin":           reflect.TypeFor[Plugin](),
	"PluginProblem":    reflect.TypeFor[PluginProblem](),
	"PluginList":       reflect.TypeFor[PluginList](),
	"Kind":             reflect.TypeFor[Kind](),
	"KindList":         reflect.TypeFor[KindList](),
	"DeadLetter":       reflect.TypeFor[DeadLetter](),
	"DeadLetters":      reflect.TypeFor[DeadLetters](),
	"ObserveRequest":   reflect.TypeFor[ObserveRequest](),
	"ObservedEvent":    reflect.TypeFor[ObservedEvent](),
	"ObserveResult":    reflect.TypeFor[ObserveResult](),
	"WorkInput":        reflect.TypeFor[WorkInput](),
	"Work":             reflect.TypeFor[Work](),
	"WorkList":         reflect.TypeFor[WorkList](),
	"ClaimRequest":     reflect.TypeFor[ClaimRequest](),
	"PhaseRequest":     reflect.TypeFor[PhaseRequest](),
	"Phase":            reflect.TypeFor[Phase](),
	"ActivityRequest":  reflect.TypeFor[ActivityRequest](),
	"Activity":         reflect.TypeFor[Activity](),
	"ReminderRequest":  reflect.TypeFor[ReminderRequest](),
	"Reminder":         reflect.TypeFor[Reminder](),
}

// requestTypes are decoded strictly from request bodies: their schemas
// refuse unknown fields, and what they require is what the server needs
// rather than what omitempty says.
var requestTypes = map[string]bool{"ObserveRequest": true, "ClaimRequest": true, "WatchRequest": true, "RecipientRequest": true, "WebhookRequest": true, "Ref": true, "RecipientRef": true,
	"PhaseRequest": true, "ActivityRequest": true, "ReminderRequest": true}

// jsonField is a struct field as encoding/json sees it: its JSON name,
// whether it is omitempty, its type, and its Go name and index (none for
// a slice's element).
type jsonField struct {
	name      string
	omitempty bool
	typ       reflect.Type
	goName    string
	index     []int
}

func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for f := range t.Fields() {
		tag, ok := f.Tag.Lookup("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if !ok || name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name: name, omitempty: slices.Contains(strings.Split(opts, ","), "omitempty"), typ: f.Type, goName: f.Name, index: f.Index})
	}
	return out
}

func TestOpenAPIEveryWireTypeHasASchema(t *testing.T) {
	fs := token.NewFileSet()
	f, err := parser.ParseFile(fs, "types.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			continue
		}
		for _, s := range g.Specs {
			ts := s.(*ast.TypeSpec)
			if _, isStruct := ts.Type.(*ast.StructType); isStruct && ts.Name.IsExported() && wireTypes[ts.Name.Name] == nil {
				t.Errorf("types.go declares %s: add its schema to openapi.yaml and to wireTypes", ts.Name.Name)
			}
		}
	}
}

func TestOpenAPISchemasMirrorTypes(t *testing.T) {
	doc, _ := openAPIDoc(t)
	schemas := m(m(doc["components"])["schemas"])
	for _, name := range []string{"Watch", "WatchRequest", "Message", "Mailbox", "Recipient", "RecipientRequest", "Plugin", "PluginList", "Error"} {
		if wireTypes[name] == nil {
			t.Fatalf("%s is not in wireTypes", name)
		}
	}
	for name, typ := range wireTypes {
		t.Run(name, func(t *testing.T) {
			s := m(schemas[name])
			if s == nil {
				t.Fatalf("no components/schemas/%s", name)
			}
			if s["type"] != "object" {
				t.Errorf("type %v, want object", s["type"])
			}
			props := m(s["properties"])
			fields := jsonFields(typ)
			var want, got, wantRequired, gotRequired []string
			for _, f := range fields {
				want = append(want, f.name)
				if !f.omitempty {
					wantRequired = append(wantRequired, f.name)
				}
			}
			for p := range props {
				got = append(got, p)
			}
			for _, r := range s["required"].([]any) {
				gotRequired = append(gotRequired, r.(string))
			}
			sort.Strings(want)
			sort.Strings(got)
			sort.Strings(wantRequired)
			sort.Strings(gotRequired)
			if !slices.Equal(want, got) {
				t.Errorf("properties %v, but %s has JSON fields %v", got, typ, want)
			}
			if requestTypes[name] {
				if s["additionalProperties"] != false {
					t.Error("a request body is decoded strictly: want additionalProperties: false")
				}
				for _, r := range gotRequired {
					if !slices.Contains(want, r) {
						t.Errorf("required %q is not a field", r)
					}
				}
			} else if !slices.Equal(wantRequired, gotRequired) {
				t.Errorf("required %v, but the fields always present (no omitempty) are %v", gotRequired, wantRequired)
			}
			for _, f := range fields {
				if p := m(props[f.name]); p != nil {
					checkType(t, schemas, name+"."+f.name, f, p)
				}
			}
		})
	}
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// checkType checks that a property's schema has the JSON type the Go field
// marshals to.
func checkType(t *testing.T, schemas map[string]any, at string, f jsonField, p map[string]any) {
	t.Helper()
	typ := f.typ
	// A pointer without omitempty marshals nil as null; with omitempty nil
	// is left out, and null may still be accepted on input.
	nullable, mayBeNull := false, false
	if typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
		nullable, mayBeNull = !f.omitempty, f.omitempty
	}
	if ref, ok := p["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		if wt := wireTypes[name]; wt != nil {
			if wt != typ || nullable {
				t.Errorf("%s: $ref %s, but the field is %s", at, ref, f.typ)
			}
			return
		}
		p = m(schemas[name]) // a named scalar such as RecipientID or Duration
	}
	var want any
	switch {
	case typ == rawType:
		if _, has := p["type"]; has {
			t.Errorf("%s: any JSON value, want no type, got %v", at, p["type"])
		}
		return
	case typ == timeType:
		want = "string"
		if p["format"] != "date-time" {
			t.Errorf("%s: want format date-time", at)
		}
	case typ.Kind() == reflect.String:
		want = "string"
	case typ.Kind() == reflect.Bool:
		want = "boolean"
	case typ.Kind() >= reflect.Int && typ.Kind() <= reflect.Uint64:
		want = "integer"
		if typ.Kind() >= reflect.Uint && !(p["minimum"] == float64(0) || p["minimum"] == float64(1)) {
			t.Errorf("%s: unsigned, want minimum 0 or 1", at)
		}
	case typ.Kind() == reflect.Slice:
		want = "array"
		if items := m(p["items"]); items != nil {
			checkType(t, schemas, at+"[]", jsonField{typ: typ.Elem(), omitempty: true}, items)
		} else {
			t.Errorf("%s: an array without items", at)
		}
	default:
		t.Errorf("%s: no rule for Go type %s", at, typ)
		return
	}
	withNull := []any{want, "null"}
	if nullable {
		want = withNull
	}
	if !reflect.DeepEqual(p["type"], want) && !(mayBeNull && reflect.DeepEqual(p["type"], withNull)) {
		t.Errorf("%s: type %v, want %v (Go %s)", at, p["type"], want, f.typ)
	}
}

// codeConsts are the Code* constants of types.go.
func codeConsts(t *testing.T) []string {
	fs := token.NewFileSet()
	f, err := parser.ParseFile(fs, "types.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && strings.HasPrefix(n.Name, "Code") && lit.Kind == token.STRING {
					v, _ := strconv.Unquote(lit.Value)
					codes = append(codes, v)
				}
			}
		}
	}
	return codes
}

func TestOpenAPIErrorCodes(t *testing.T) {
	doc, _ := openAPIDoc(t)
	var enum []string
	for _, c := range m(m(m(m(m(doc["components"])["schemas"])["Error"])["properties"])["code"])["enum"].([]any) {
		enum = append(enum, c.(string))
	}
	consts := codeConsts(t)
	if len(consts) == 0 {
		t.Fatal("no Code constants found in types.go")
	}
	sort.Strings(enum)
	sort.Strings(consts)
	if !slices.Equal(enum, consts) {
		t.Errorf("Error.code enum %v, want the codes of types.go %v", enum, consts)
	}

	// Each operation lists, per error status it answers, the codes it can
	// answer with it, and each code has that status in Status.
	for path, item := range m(doc["paths"]) {
		for method, op := range m(item) {
			if !httpMethods[method] {
				continue
			}
			op := m(op)
			where := strings.ToUpper(method) + " " + path
			listed := m(op["x-error-codes"])
			for status, resp := range m(op["responses"]) {
				n, err := strconv.Atoi(status)
				if err != nil {
					t.Errorf("%s: response %q: want a status code", where, status)
					continue
				}
				if n < 400 {
					continue
				}
				codes, _ := listed[status].([]any)
				if len(codes) == 0 {
					t.Errorf("%s: %s has no x-error-codes", where, status)
				}
				for _, c := range codes {
					if !slices.Contains(consts, c.(string)) {
						t.Errorf("%s: %s lists unknown code %v", where, status, c)
					} else if Status(c.(string)) != n {
						t.Errorf("%s: %s lists %v, whose status is %d", where, status, c, Status(c.(string)))
					}
				}
				// The shared error response it points to uses the envelope
				// and an example with a code of this status.
				ref, _ := m(resp)["$ref"].(string)
				r, ok := resolve(doc, ref)
				if !strings.HasPrefix(ref, "#/components/responses/") || !ok {
					t.Errorf("%s: %s: want a $ref to a shared error response, got %v", where, status, resp)
					continue
				}
				mt := m(m(m(r)["content"])["application/json"])
				if !isEnvelope(doc, m(mt["schema"])) {
					t.Errorf("%s: %s: %s is not the error envelope", where, status, ref)
				}
				if code, _ := m(m(mt["example"])["error"])["code"].(string); Status(code) != n {
					t.Errorf("%s: %s: %s's example has code %q, whose status is %d", where, status, ref, code, Status(code))
				}
			}
			for status := range listed {
				if _, ok := m(op["responses"])[status]; !ok {
					t.Errorf("%s: x-error-codes lists %s, which is not among its responses", where, status)
				}
			}
		}
	}
}

// isEnvelope says schema is the error envelope, or an envelope that
// carries more beside its error (a signal's conflict carries the signal).
func isEnvelope(doc map[string]any, schema map[string]any) bool {
	ref, _ := schema["$ref"].(string)
	if ref == "#/components/schemas/ErrorEnvelope" {
		return true
	}
	s, ok := resolve(doc, ref)
	if !ok {
		return false
	}
	required, _ := m(s)["required"].([]any)
	return m(m(m(s)["properties"])["error"])["$ref"] == "#/components/schemas/Error" && slices.Contains(required, any("error"))
}

var httpMethods = map[string]bool{"get": true, "put": true, "post": true, "delete": true, "options": true, "head": true, "patch": true, "trace": true}

// compileSchemas compiles the document's schemas as JSON Schema 2020-12
// (the dialect of OpenAPI 3.1), which also checks them against the
// meta-schema.
func compileSchemas(t *testing.T, b []byte) func(name string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(docURL, doc); err != nil {
		t.Fatal(err)
	}
	return func(name string) *jsonschema.Schema {
		t.Helper()
		s, err := c.Compile(docURL + "#/components/schemas/" + name)
		if err != nil {
			t.Fatalf("schema %s: %v", name, err)
		}
		return s
	}
}

func TestOpenAPISchemasCompile(t *testing.T) {
	doc, b := openAPIDoc(t)
	compile := compileSchemas(t, b)
	for name := range m(m(doc["components"])["schemas"]) {
		compile(name)
	}
}

// What the Go types marshal to validates against their schemas, and what
// the schemas refuse the server refuses too.
func TestOpenAPISchemasAcceptGoValues(t *testing.T) {
	_, b := openAPIDoc(t)
	compile := compileSchemas(t, b)
	at := time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)
	exp := at.Add(15 * time.Minute)
	outcome := Outcome{Result: "success", Summary: "passed", Detail: json.RawMessage(`{"run":7}`)}
	pending := Watch{ID: "01jdx3kqv0d3f7m2a9c8e6b4t1", Kind: "ci", Params: json.RawMessage(`{"sha":"abc"}`), Recipient: RecipientRef{ID: "agent-1"},
		State: "pending", Receipt: "none", Every: "30s", CreatedAt: at, ExpiresAt: &exp}
	standing := Watch{ID: "01jdx3kqv0d3f7m2a9c8e6b4t2", Kind: "ticket", Recipient: RecipientRef{ID: "agent-1"},
		State: "pending", Receipt: "none", Every: "1m0s", CreatedAt: at, Attempts: 3, LastNote: "unchanged"}
	settled := pending
	settled.State, settled.Receipt, settled.SettledAt, settled.Outcome, settled.Attempts = "fired", "delivered", &exp, &outcome, 2
	msg := Message{Seq: 1, ID: "01jdx3m5z8a8w0q6v4f1r2n3p4", WatchID: pending.ID, Kind: "ci", Type: "fired", Outcome: Outcome{Result: "fired"}, At: at}
	valid := []struct {
		schema string
		v      any
	}{
		{"Watch", pending},
		{"Watch", standing},
		{"Watch", settled},
		{"WatchList", WatchList{Watches: []Watch{pending, standing, settled}, HeldAside: 2}},
		{"WatchList", WatchList{Watches: []Watch{}}},
		{"WatchList", WatchList{Watches: []Watch{pending}, Next: "AQGeGmz0AOtvT4lkvHpRgxw"}},
		{"Message", msg},
		{"Message", Message{Seq: msg.Seq, ID: msg.ID, WatchID: msg.WatchID, Kind: msg.Kind, Type: msg.Type, Outcome: msg.Outcome, At: msg.At,
			Push: &MessagePush{State: "retrying", Attempts: 1, NextAttempt: &at, LastError: "status 503", UpdatedAt: at}}},
		{"Recipient", Recipient{ID: "agent-2", Status: "running", Webhook: &WebhookView{URL: "https://hooks.example.org/gone", DisabledAt: &at, DisabledReason: "410"},
			Refs: []Ref{}, CreatedAt: at, UpdatedAt: at}},
		{"Mailbox", Mailbox{Messages: []Message{msg}, Next: 1}},
		{"Mailbox", Mailbox{Messages: []Message{}, Next: 0}},
		{"Recipient", Recipient{ID: "agent-1", Status: "running", Webhook: &WebhookView{URL: "https://hooks.example.org/vigil"},
			Refs: []Ref{{Kind: "ticket", Params: json.RawMessage(`{"n":1}`)}, {Kind: "ticket"}}, CreatedAt: at, UpdatedAt: at}},
		{"Recipient", Recipient{ID: "a.b_c-d:e@f", Status: "stopped", Refs: []Ref{}, CreatedAt: at, UpdatedAt: at}},
		{"PluginList", PluginList{Plugins: []Plugin{{Kind: "ci", Version: "1.0.0", Summary: "CI", DefaultEvery: "30s", Capabilities: []string{"fetch"}, File: "bundled:ci.wasm",
			Source: "bundled", SHA256: strings.Repeat("ab", 32)},
			{Kind: "timer", Capabilities: []string{}, Observable: false, Setting: "kinds.timer", Source: "/etc/vigil/plugins", SHA256: strings.Repeat("0", 64)}},
			Problems: []PluginProblem{{File: "x.wasm", Rule: "compile", Error: "bad magic"}}}},
		{"PluginList", PluginList{Plugins: []Plugin{}, Problems: []PluginProblem{}}},
		{"KindList", KindList{Kinds: []Kind{{Kind: "timer", Summary: "fires", Observable: true, DefaultEvery: "1m0s", ParamsSchema: json.RawMessage(`{"type":"object"}`), Example: json.RawMessage(`{"at":"2030-01-01T14:00:00Z"}`)},
			{Kind: "observe.thread", Observable: true, BuiltIn: true}}}},
		{"KindList", KindList{Kinds: []Kind{}}},
		{"WatchRequest", WatchRequest{Kind: "timer", Params: json.RawMessage(`{"at":"2026-12-01T14:00:00Z"}`), Recipient: RecipientRef{ID: "agent-1"}, Every: "5s", ExpiresAt: &exp}},
		{"WatchRequest", WatchRequest{Kind: "timer", Recipient: RecipientRef{ID: "agent-1"}}},
		{"RecipientRequest", RecipientRequest{Status: "running", Webhook: &WebhookRequest{URL: "https://x.example/", Secret: "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYX"},
			Refs: []Ref{{Kind: "ticket", Params: json.RawMessage(`{}`)}}}},
		{"RecipientRequest", RecipientRequest{Status: "paused"}},
	}
	for _, code := range codeConsts(t) {
		valid = append(valid, struct {
			schema string
			v      any
		}{"ErrorEnvelope", ErrorEnvelope{Error: Error{Code: code, Message: "m", Field: "f", Setting: "s"}}})
	}
	for _, tt := range valid {
		b, err := json.Marshal(tt.v)
		if err != nil {
			t.Fatal(err)
		}
		inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err := compile(tt.schema).Validate(inst); err != nil {
			t.Errorf("%s refuses %s:\n%v", tt.schema, b, err)
		}
	}
	invalid := []struct{ schema, json string }{
		{"WatchRequest", `{"kind":"ci","recipient":{"id":"a"},"priority":1}`},
		{"WatchRequest", `{"params":{},"recipient":{"id":"a"}}`},
		{"RecipientRequest", `{"status":"asleep"}`},
		{"WatchRequest", `{"kind":"` + strings.Repeat("k", 65) + `","recipient":{"id":"a"}}`},
		{"WatchRequest", `{"kind":"CI","recipient":{"id":"a"}}`},
		{"WebhookRequest", `{"url":"https://x.example/` + strings.Repeat("a", 2049) + `","secret":"whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYX"}`},
		{"WebhookRequest", `{"url":"https://x.example/","secret":"whsec_` + strings.Repeat("AAAA", 23) + `"}`},
		{"WebhookRequest", `{"url":"https://x.example/","secret":"whsec_AAAAAAAAAAAAAAAAAAAAAA=="}`},
		{"RecipientRequest", `{"status":"running","workspace":"/` + strings.Repeat("w", 4096) + `"}`},
		{"Watch", `{"id":"01jdx3kqv0d3f7m2a9c8e6b4t1","kind":"ci","params":{},"recipient":{"id":"a"},"state":"pending","receipt":"none","every":"30s","created_at":"2026-12-01T14:00:00Z","attempts":0}`},
		{"Error", `{"code":"teapot","message":"m"}`},
	}
	for _, tt := range invalid {
		inst, _ := jsonschema.UnmarshalJSON(strings.NewReader(tt.json))
		if compile(tt.schema).Validate(inst) == nil {
			t.Errorf("%s accepts %s", tt.schema, tt.json)
		}
	}
}
