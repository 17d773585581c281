package sdktest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/vigilhq/vigil/sdk"
	"github.com/vigilhq/vigil/sdk/abi"
)

// Describer is what the checks read a plugin's describe from:
// *sdk.Harness is one.
type Describer interface {
	Describe() (abi.Describe, error)
}

var _ Describer = (*sdk.Harness)(nil)

// Schema is a params schema compiled the way the host compiles it.
type Schema struct{ s *jsonschema.Schema }

// ErrSchemaReference is a params schema's reference to a document outside
// itself, which the host refuses: a plugin's schema must not make the host
// read a file or reach the network.
var ErrSchemaReference = errors.New("only references within the schema are allowed")

// noLoader refuses every reference outside the schema document, as the
// host's loader does.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema reference %q: %w", url, ErrSchemaReference)
}

// schemaURL is the name the schema is compiled under, as the host names it.
const schemaURL = "vigil:params.json"

// CompileSchema compiles a params schema as the host does when it loads
// the plugin: JSON Schema draft 2020-12 unless the schema's $schema names
// another, formats ("date-time", "uri", …) asserted rather than noted, and
// no reference outside the document.
func CompileSchema(schema []byte) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
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
		// The library's load error does not unwrap: take the loader's
		// own error out of it, so the refusal answers errors.Is.
		var le *jsonschema.LoadURLError
		if errors.As(err, &le) && errors.Is(le.Err, ErrSchemaReference) {
			return nil, fmt.Errorf("params_schema: %w", le.Err)
		}
		return nil, fmt.Errorf("params_schema does not compile: %w", err)
	}
	return &Schema{s: s}, nil
}

// Validate checks one params document (JSON text) against the schema, as
// the host does before admit runs. A refusal is a
// *jsonschema.ValidationError.
func (s *Schema) Validate(params []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(params))
	if err != nil {
		return fmt.Errorf("params are not JSON: %w", err)
	}
	return s.s.Validate(v)
}

// Bounds on default_every the host enforces when it loads a plugin.
const (
	MinDefaultEvery = time.Second
	MaxDefaultEvery = 24 * time.Hour
)

// CheckDescribe says what the host would refuse in a describe, or nil,
// returning the compiled params schema: the ABI version, the kind and
// version grammars, params_schema compiling as the host compiles it,
// capabilities this ABI defines (each once), default_every a Go duration
// between MinDefaultEvery and MaxDefaultEvery when given, and an example
// that is there and valid against the schema (the conformance suite's
// admit.example, a required check, starts from it).
func CheckDescribe(d abi.Describe) (*Schema, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if d.ABI != abi.Version {
		bad("abi %q: want %q", d.ABI, abi.Version)
	}
	if err := abi.CheckKind(d.Kind); err != nil {
		errs = append(errs, err)
	}
	if !abi.ValidSemver(d.Version) {
		bad("version %q is not a semantic version", d.Version)
	}
	for i, c := range d.Capabilities {
		switch {
		case !slices.Contains(abi.KnownCapabilities(), c):
			bad("unknown capability %q: want one of %s", c, strings.Join(abi.KnownCapabilities(), ", "))
		case slices.Contains(d.Capabilities[:i], c):
			bad("capability %q listed twice", c)
		}
	}
	if d.DefaultEvery != "" {
		every, err := time.ParseDuration(d.DefaultEvery)
		switch {
		case err != nil:
			bad("default_every: %w", err)
		case every < MinDefaultEvery || every > MaxDefaultEvery:
			bad("default_every %s: want between %s and %s", every, MinDefaultEvery, MaxDefaultEvery)
		}
	}
	var s *Schema
	if len(d.ParamsSchema) == 0 {
		bad("params_schema is missing")
	} else if cs, err := CompileSchema(d.ParamsSchema); err != nil {
		errs = append(errs, err)
	} else {
		s = cs
	}
	switch ex := bytes.TrimSpace(d.Example); {
	case len(ex) == 0:
		bad("example is missing: describe must give params the plugin admits")
	case s != nil:
		if err := s.Validate(ex); err != nil {
			bad("example %s does not validate against params_schema: %w", ex, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// CheckSchema is the one line of an author's schema test:
//
//	func TestSchema(t *testing.T) { sdktest.CheckSchema(t, sdk.NewHarness(Plugin)) }
//
// It runs describe and fails tb with everything CheckDescribe finds. It
// returns the compiled params schema for further checks.
func CheckSchema(tb testing.TB, d Describer) *Schema {
	tb.Helper()
	desc, err := d.Describe()
	if err != nil {
		tb.Fatalf("describe: %v", err)
	}
	s, err := CheckDescribe(desc)
	if err != nil {
		tb.Fatalf("describe of %q: %v", desc.Kind, err)
	}
	return s
}

// CheckParams runs CheckSchema and then checks each params document
// against the schema: valid when want[doc] is true, refused otherwise.
func CheckParams(tb testing.TB, d Describer, want map[string]bool) {
	tb.Helper()
	s := CheckSchema(tb, d)
	for doc, ok := range want {
		if err := s.Validate([]byte(doc)); (err == nil) != ok {
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
		if got.OK || got.Code != abi.CodeInvalidParams || got.Field != field {
			tb.Fatalf("admit = %+v, want invalid_params on %s", got, field)
		}
	case setting != "":
		if got.OK || got.Code != abi.CodeUnobservable || got.Setting != setting || !strings.Contains(got.Message, says) {
			tb.Fatalf("admit = %+v, want unobservable naming %s and saying %q", got, setting, says)
		}
	default:
		if !got.OK {
			tb.Fatalf("admit = %+v, want ok", got)
		}
	}
}

// Admit runs h's admit for params (JSON text) with grants g, for the kind
// h describes, failing tb when the call itself fails (a refusal is an
// answer, not a failure).
func Admit(tb testing.TB, h *sdk.Harness, params string, g abi.Grants) abi.AdmitResponse {
	tb.Helper()
	d, err := h.Describe()
	if err != nil {
		tb.Fatalf("describe: %v", err)
	}
	got, err := h.Admit(abi.AdmitRequest{Kind: d.Kind, Params: json.RawMessage(params), Grants: g})
	if err != nil {
		tb.Fatalf("admit %s: %v", params, err)
	}
	return got
}

// Observe runs h's observe for params (JSON text) at now, as the host's
// first attempt of watch "w1", with fetches going to f (nil: every fetch
// fails as unavailable), failing tb when the call itself fails.
func Observe(tb testing.TB, h *sdk.Harness, params string, now time.Time, f sdk.Fetcher) abi.ObserveResponse {
	tb.Helper()
	d, err := h.Describe()
	if err != nil {
		tb.Fatalf("describe: %v", err)
	}
	got, err := h.Observe(abi.ObserveRequest{Kind: d.Kind, WatchID: "w1", Params: json.RawMessage(params), Now: now, Attempt: 1}, f)
	if err != nil {
		tb.Fatalf("observe %s: %v", params, err)
	}
	return got
}

// Answer is a fetcher that answers every request with status and body, as
// a recorded response.
func Answer(status int, body string) sdk.Fetcher {
	return sdk.FetcherFunc(func(sdk.FetchRequest) (sdk.FetchResponse, error) {
		return sdk.FetchResponse{Status: status, Body: []byte(body)}, nil
	})
}

// Failure is a fetcher that answers every request with the host's failure
// reason (abi.FetchTimeout, abi.FetchDestinationRefused, …), as the fetch
// issuer reports one.
func Failure(reason string) sdk.Fetcher {
	return sdk.FetcherFunc(func(sdk.FetchRequest) (sdk.FetchResponse, error) {
		return sdk.FetchResponse{Failure: &abi.FetchFailure{Reason: reason, Message: "recorded " + reason}}, nil
	})
}
