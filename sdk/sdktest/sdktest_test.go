package sdktest

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/sdk"
	"github.com/vigilhq/vigil/sdk/abi"
)

// fakeTB records what a check reports instead of failing the test; its
// Fatal ends the goroutine the check runs on, as testing's does.
type fakeTB struct {
	testing.TB
	failed []string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.failed = append(f.failed, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	runtime.Goexit()
}

// run runs check on its own goroutine and waits for it, and returns what
// it reported.
func run(check func(tb testing.TB)) []string {
	f := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(f)
	}()
	<-done
	return f.failed
}

type params struct {
	At   time.Time `json:"at"`
	Note string    `json:"note,omitempty"`
}

const goodSchema = `{"type":"object","properties":{"at":{"type":"string","format":"date-time"},"note":{"type":"string"}},"required":["at"],"additionalProperties":false}`

var at = time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)

func plugin(mod func(p *sdk.Plugin[params])) *sdk.Harness {
	p := sdk.Plugin[params]{
		Kind:    "t.timer",
		Version: "1.0.0",
		Schema:  goodSchema,
		Example: params{At: at},
		Observe: func(p params, in sdk.Input) (sdk.Result, error) {
			if in.Now.Before(p.At) {
				return sdk.Pending("not yet").CheckAt(p.At), nil
			}
			return sdk.Settled(sdk.Outcome{Result: "fired"}), nil
		},
	}
	if mod != nil {
		mod(&p)
	}
	return sdk.NewHarness(p)
}

// describer is a describe given as it is, for the shapes the SDK never
// writes.
type describer abi.Describe

func (d describer) Describe() (abi.Describe, error) { return abi.Describe(d), nil }

func TestCheckSchemaPasses(t *testing.T) {
	if got := run(func(tb testing.TB) { CheckSchema(tb, plugin(nil)) }); len(got) != 0 {
		t.Fatalf("reported %q", got)
	}
	CheckSchema(t, plugin(nil))
}

// Each rule the host applies to a describe, broken once: CheckSchema
// reports it, naming what is wrong.
func TestCheckSchemaRefuses(t *testing.T) {
	good := func() abi.Describe {
		d, err := plugin(nil).Describe()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, tt := range []struct {
		name string
		mod  func(d *abi.Describe)
		says string
	}{
		{"abi", func(d *abi.Describe) { d.ABI = "vigil.predicate/v0" }, `abi "vigil.predicate/v0"`},
		{"kind", func(d *abi.Describe) { d.Kind = "Timer" }, `kind "Timer"`},
		{"version", func(d *abi.Describe) { d.Version = "v1" }, `version "v1"`},
		{"unknown capability", func(d *abi.Describe) { d.Capabilities = []string{"net"} }, `unknown capability "net"`},
		{"capability twice", func(d *abi.Describe) { d.Capabilities = []string{"fetch", "fetch"} }, "listed twice"},
		{"default_every grammar", func(d *abi.Describe) { d.DefaultEvery = "1 minute" }, "default_every"},
		{"default_every too short", func(d *abi.Describe) { d.DefaultEvery = "500ms" }, "want between 1s and 24h0m0s"},
		{"default_every too long", func(d *abi.Describe) { d.DefaultEvery = "25h" }, "want between"},
		{"no schema", func(d *abi.Describe) { d.ParamsSchema = nil }, "params_schema is missing"},
		{"schema not JSON", func(d *abi.Describe) { d.ParamsSchema = []byte(`{`) }, "params_schema is not JSON"},
		{"schema does not compile", func(d *abi.Describe) { d.ParamsSchema = []byte(`{"type":"objekt"}`) }, "does not compile"},
		{"schema reference outside", func(d *abi.Describe) {
			d.ParamsSchema = []byte(`{"$ref":"https://schemas.example.com/params.json"}`)
		}, ErrSchemaReference.Error()},
		{"no example", func(d *abi.Describe) { d.Example = nil }, "example is missing"},
		{"null example", func(d *abi.Describe) { d.Example = []byte(` `) }, "example is missing"},
		{"example refused by the schema", func(d *abi.Describe) { d.Example = []byte(`{"at":"noon"}`) }, "does not validate"},
		{"example with an unknown field", func(d *abi.Describe) { d.Example = []byte(`{"at":"2026-11-30T14:00:00Z","x":1}`) }, "does not validate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := good()
			tt.mod(&d)
			got := run(func(tb testing.TB) { CheckSchema(tb, describer(d)) })
			if len(got) != 1 || !strings.Contains(got[0], tt.says) {
				t.Fatalf("reported %q, want one saying %q", got, tt.says)
			}
		})
	}
}

// The host asserts formats: a date-time that is not one is refused,
// which a compiler that only notes formats would let through.
func TestCompileSchemaAssertsFormats(t *testing.T) {
	s, err := CompileSchema([]byte(goodSchema))
	if err != nil {
		t.Fatal(err)
	}
	for doc, ok := range map[string]bool{
		`{"at":"2026-11-30T14:00:00Z"}`:      true,
		`{"at":"2026-11-30T15:00:00+01:00"}`: true,
		`{"at":"2026-11-30 14:00"}`:          false,
		`{"at":"2026-13-30T14:00:00Z"}`:      false,
		`{}`:                                 false,
		`not json`:                           false,
	} {
		if err := s.Validate([]byte(doc)); (err == nil) != ok {
			t.Errorf("%s: %v", doc, err)
		}
	}
	_, err = CompileSchema([]byte(`{"$ref":"file:///etc/passwd"}`))
	if !errors.Is(err, ErrSchemaReference) {
		t.Fatalf("a file reference: %v", err)
	}
}

func TestCheckParams(t *testing.T) {
	want := map[string]bool{`{"at":"2026-11-30T14:00:00Z"}`: true, `{"at":1}`: false}
	if got := run(func(tb testing.TB) { CheckParams(tb, plugin(nil), want) }); len(got) != 0 {
		t.Fatalf("reported %q", got)
	}
	// A table that is wrong about a document is reported, naming it.
	want[`{"at":1}`] = true
	got := run(func(tb testing.TB) { CheckParams(tb, plugin(nil), want) })
	if len(got) != 1 || !strings.Contains(got[0], `{"at":1}: valid = false, want true`) {
		t.Fatalf("reported %q", got)
	}
}

func TestCheckAdmit(t *testing.T) {
	refused := abi.AdmitResponse{Code: abi.CodeInvalidParams, Field: "at", Message: "in the past"}
	unobservable := abi.AdmitResponse{Code: abi.CodeUnobservable, Setting: "plugins.t.fetch_hosts", Message: "host a.example is not granted"}
	for _, tt := range []struct {
		name                 string
		got                  abi.AdmitResponse
		field, setting, says string
		fails                bool
	}{
		{"admitted", abi.AdmitResponse{OK: true}, "", "", "", false},
		{"refused, wanted admitted", refused, "", "", "", true},
		{"invalid on its field", refused, "at", "", "", false},
		{"invalid on another field", refused, "note", "", "", true},
		{"admitted, wanted invalid", abi.AdmitResponse{OK: true, Code: abi.CodeInvalidParams, Field: "at"}, "at", "", "", true},
		{"unobservable", unobservable, "", "plugins.t.fetch_hosts", "not granted", false},
		{"unobservable saying otherwise", unobservable, "", "plugins.t.fetch_hosts", "refused", true},
		{"unobservable, another setting", unobservable, "", "plugins.t.secrets", "not granted", true},
		{"invalid, wanted unobservable", refused, "", "plugins.t.fetch_hosts", "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := run(func(tb testing.TB) { CheckAdmit(tb, tt.got, tt.field, tt.setting, tt.says) })
			if (len(got) > 0) != tt.fails {
				t.Fatalf("reported %q, want a failure: %v", got, tt.fails)
			}
		})
	}
}

func TestAdmitAndObserve(t *testing.T) {
	h := plugin(nil)
	CheckAdmit(t, Admit(t, h, `{"at":"2026-11-30T14:00:00Z"}`, abi.Grants{}), "", "", "")
	CheckAdmit(t, Admit(t, h, `{"at":"2026-11-30T14:00:00Z","x":1}`, abi.Grants{}), "x", "", "")
	got := Observe(t, h, `{"at":"2026-11-30T14:00:00Z"}`, at.Add(-time.Hour), nil)
	if got.Status != abi.StatusPending || got.NextCheck == nil || !got.NextCheck.Equal(at) {
		t.Fatalf("an hour early: %+v", got)
	}
	if got := Observe(t, h, `{"at":"2026-11-30T14:00:00Z"}`, at, nil); got.Status != abi.StatusSettled {
		t.Fatalf("on time: %+v", got)
	}
	// A call that fails (an observe that returns an error) fails the test.
	broken := plugin(func(p *sdk.Plugin[params]) {
		p.Observe = func(params, sdk.Input) (sdk.Result, error) { return sdk.Result{}, errors.New("a bug") }
	})
	if got := run(func(tb testing.TB) { Observe(tb, broken, `{"at":"2026-11-30T14:00:00Z"}`, at, nil) }); len(got) != 1 || !strings.Contains(got[0], "a bug") {
		t.Fatalf("reported %q", got)
	}
}

func TestFetchers(t *testing.T) {
	r, err := Answer(503, "busy").Fetch(sdk.FetchRequest{Method: "GET", URL: "https://a.example/"})
	if err != nil || r.Status != 503 || string(r.Body) != "busy" || r.Failure != nil {
		t.Fatalf("answer: %+v %v", r, err)
	}
	r, err = Failure(abi.FetchTimeout).Fetch(sdk.FetchRequest{Method: "GET", URL: "https://a.example/"})
	if err != nil || r.Failure == nil || r.Failure.Reason != abi.FetchTimeout {
		t.Fatalf("failure: %+v %v", r, err)
	}
}
