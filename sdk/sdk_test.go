package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/sdk/abi"
)

type testParams struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func testPlugin(standing bool, observe func(testParams, Input) (Result, error)) Plugin[testParams] {
	return Plugin[testParams]{
		Kind: "test.kind", Version: "1.2.3", Standing: standing, DefaultEvery: 30 * time.Second,
		Schema: `{"type":"object"}`,
		Admit: func(p testParams, g Grants) error {
			switch p.Name {
			case "unobservable":
				return Unobservable("kinds.test.kind.fetch_hosts", "host not granted")
			case "bad":
				return InvalidParams("name", "must not be bad")
			case "plain":
				return errors.New("plain error")
			case "panic":
				panic("boom")
			}
			return nil
		},
		Observe: observe,
	}
}

func observeReq(params string) abi.ObserveRequest {
	return abi.ObserveRequest{Kind: "test.kind", WatchID: "w1", Now: now, Attempt: 1, Params: json.RawMessage(params)}
}

func TestDescribe(t *testing.T) {
	d, err := NewHarness(testPlugin(false, nil2)).Describe()
	if err != nil {
		t.Fatal(err)
	}
	if d.ABI != abi.Version || d.Kind != "test.kind" || d.Version != "1.2.3" || d.DefaultEvery != "30s" ||
		d.Capabilities == nil || string(d.ParamsSchema) != `{"type":"object"}` {
		t.Fatalf("describe = %+v", d)
	}
}

func nil2(testParams, Input) (Result, error) { return Pending(""), nil }

func TestInvalidPluginReportsOnEveryExport(t *testing.T) {
	bad := testPlugin(false, nil)
	bad.Kind = "Bad Kind"
	bad.Version = "v1"
	h := NewHarness(bad)
	_, err := h.Describe()
	if err == nil || !strings.Contains(err.Error(), "kind") || !strings.Contains(err.Error(), "version") || !strings.Contains(err.Error(), "Observe is nil") {
		t.Fatalf("describe err = %v", err)
	}
	if _, err := h.Observe(observeReq(`{}`), nil); err == nil {
		t.Fatal("observe of an invalid plugin answered")
	}
}

func TestAdmitMapsErrors(t *testing.T) {
	h := NewHarness(testPlugin(false, nil2))
	tests := []struct {
		params string
		want   abi.AdmitResponse
	}{
		{`{"name":"ok"}`, abi.AdmitResponse{OK: true}},
		{`{"name":"unobservable"}`, abi.AdmitResponse{Code: abi.CodeUnobservable, Message: "host not granted", Setting: "kinds.test.kind.fetch_hosts"}},
		{`{"name":"bad"}`, abi.AdmitResponse{Code: abi.CodeInvalidParams, Message: "must not be bad", Field: "name"}},
		{`{"name":"plain"}`, abi.AdmitResponse{Code: abi.CodeInvalidParams, Message: "plain error"}},
		{`{"nmae":"x"}`, abi.AdmitResponse{Code: abi.CodeInvalidParams, Message: "unknown field", Field: "nmae"}},
		{`{"count":"x"}`, abi.AdmitResponse{Code: abi.CodeInvalidParams, Message: "want int, got JSON string", Field: "count"}},
	}
	for _, tt := range tests {
		got, err := h.Admit(abi.AdmitRequest{Kind: "test.kind", Params: json.RawMessage(tt.params)})
		if err != nil {
			t.Fatalf("%s: %v", tt.params, err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %+v, want %+v", tt.params, got, tt.want)
		}
	}
}

func TestAdmitPanicIsAnErrorNotARefusal(t *testing.T) {
	_, err := NewHarness(testPlugin(false, nil2)).Admit(abi.AdmitRequest{Kind: "test.kind", Params: json.RawMessage(`{"name":"panic"}`)})
	var pe *PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v", err)
	}
}

func TestWrongKindIsAnError(t *testing.T) {
	h := NewHarness(testPlugin(false, nil2))
	var wk *WrongKindError
	_, err := h.Admit(abi.AdmitRequest{Kind: "other", Params: json.RawMessage(`{}`)})
	if !errors.As(err, &wk) {
		t.Fatalf("admit err = %v", err)
	}
	req := observeReq(`{}`)
	req.Kind = "other"
	if _, err := h.Observe(req, nil); !errors.As(err, &wk) {
		t.Fatalf("observe err = %v", err)
	}
}

func TestObserveResults(t *testing.T) {
	at := now.Add(time.Hour)
	tests := []struct {
		name     string
		standing bool
		result   Result
		err      error
		want     abi.ObserveResponse
		wantErr  string
	}{
		{name: "pending", result: Pending("not yet"), want: abi.ObserveResponse{Status: "pending", Note: "not yet"}},
		{name: "pending with hint", result: Pending("soon").CheckAt(at), want: abi.ObserveResponse{Status: "pending", Note: "soon", NextCheck: &at}},
		{name: "settled", result: Settled(Outcome{Result: "success", Summary: "ok", Detail: map[string]int{"n": 1}}),
			want: abi.ObserveResponse{Status: "settled", Outcome: &abi.Outcome{Result: "success", Summary: "ok", Detail: json.RawMessage(`{"n":1}`)}}},
		{name: "hint ignored on settled", result: Settled(Outcome{Result: "x"}).CheckAt(at), want: abi.ObserveResponse{Status: "settled", Outcome: &abi.Outcome{Result: "x"}}},
		{name: "baseline", standing: true, result: Baseline(map[string]string{"title": "a"}),
			want: abi.ObserveResponse{Status: "pending", Baseline: json.RawMessage(`{"title":"a"}`)}},
		{name: "changed", standing: true, result: Changed(Outcome{Result: "changed"}, 7),
			want: abi.ObserveResponse{Status: "changed", Outcome: &abi.Outcome{Result: "changed"}, Baseline: json.RawMessage(`7`)}},
		{name: "zero result", result: Result{}, wantErr: "empty result"},
		{name: "settled from standing", standing: true, result: Settled(Outcome{Result: "x"}), wantErr: "never settles"},
		{name: "changed from non-standing", result: Changed(Outcome{Result: "x"}, 1), wantErr: "standing kinds only"},
		{name: "baseline kept by a wait", result: Baseline(1), want: abi.ObserveResponse{Status: "pending", Baseline: json.RawMessage(`1`)}},
		{name: "outcome without result", result: Settled(Outcome{Summary: "x"}), wantErr: "needs a result"},
		{name: "unmarshallable detail", result: Settled(Outcome{Result: "x", Detail: func() {}}), wantErr: "detail"},
		{name: "observe error", err: errors.New("my bug"), wantErr: "my bug"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHarness(testPlugin(tt.standing, func(testParams, Input) (Result, error) { return tt.result, tt.err }))
			got, err := h.Observe(observeReq(`{"name":"x"}`), nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(tt.want)
			if string(gj) != string(wj) {
				t.Fatalf("got %s, want %s", gj, wj)
			}
		})
	}
}

func TestObservePanicIsRecovered(t *testing.T) {
	h := NewHarness(testPlugin(false, func(testParams, Input) (Result, error) { panic("boom") }))
	_, err := h.Observe(observeReq(`{}`), nil)
	var pe *PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v", err)
	}
}

func TestObserveSeesInput(t *testing.T) {
	var seen Input
	var seenP testParams
	h := NewHarness(testPlugin(true, func(p testParams, in Input) (Result, error) {
		seen, seenP = in, p
		return Pending(""), nil
	}))
	req := observeReq(`{"name":"n","count":3}`)
	req.Attempt = 4
	req.Baseline = json.RawMessage(`{"v":1}`)
	if _, err := h.Observe(req, nil); err != nil {
		t.Fatal(err)
	}
	if seen.Kind != "test.kind" || seen.WatchID != "w1" || !seen.Now.Equal(now) || seen.Attempt != 4 || seenP != (testParams{"n", 3}) {
		t.Fatalf("input %+v params %+v", seen, seenP)
	}
	var b struct{ V int }
	if ok, err := seen.DecodeBaseline(&b); !ok || err != nil || b.V != 1 {
		t.Fatalf("baseline %v %v %+v", ok, err, b)
	}
	if ok, _ := (Input{}).DecodeBaseline(&b); ok {
		t.Fatal("an empty baseline decoded")
	}
}

func TestFetch(t *testing.T) {
	if _, err := (Input{}).Fetch(FetchRequest{Method: "GET", URL: "https://x"}); !errors.Is(err, ErrNoFetcher) {
		t.Fatalf("no fetcher: %v", err)
	}
	in := Input{}.WithFetcher(FetcherFunc(func(r FetchRequest) (FetchResponse, error) {
		if r.URL == "https://down" {
			return FetchResponse{Failure: &abi.FetchFailure{Reason: abi.FetchTimeout, Message: "slow"}}, nil
		}
		return FetchResponse{Status: 200, Body: []byte("ok")}, nil
	}))
	resp, err := in.Fetch(FetchRequest{Method: "GET", URL: "https://up"})
	if err != nil || resp.Status != 200 {
		t.Fatalf("up: %+v %v", resp, err)
	}
	_, err = in.Fetch(FetchRequest{Method: "GET", URL: "https://down"})
	var fe *FetchError
	if !errors.As(err, &fe) || fe.Reason != abi.FetchTimeout {
		t.Fatalf("down: %v", err)
	}
}

func TestRegisterTwiceIsReported(t *testing.T) {
	t.Cleanup(func() { registered = nil })
	registered = nil
	Register(testPlugin(false, nil2))
	if _, ok := registered.(*typed[testParams]); !ok {
		t.Fatalf("first Register: %T", registered)
	}
	Register(testPlugin(false, nil2))
	if _, err := registered.describe(); err == nil || !strings.Contains(err.Error(), "more than once") {
		t.Fatalf("second Register: %v", err)
	}
}

func TestParamsUnmarshalerIsUsedOnObserve(t *testing.T) {
	h := NewHarness(Plugin[fastParams]{
		Kind: "fast", Version: "1.0.0", Schema: `{}`,
		Observe: func(p fastParams, in Input) (Result, error) { return Pending(p.via), nil },
	})
	got, err := h.Observe(abi.ObserveRequest{Kind: "fast", Now: now, Params: json.RawMessage(`{"a":1}`)}, nil)
	if err != nil || got.Note != "UnmarshalParams" {
		t.Fatalf("%+v %v", got, err)
	}
}

type fastParams struct{ via string }

func (p *fastParams) UnmarshalParams([]byte) error {
	p.via = "UnmarshalParams"
	return nil
}

func TestDecodeFields(t *testing.T) {
	var got []string
	err := DecodeFields([]byte(` {"s":"x","t":"2026-01-02T03:04:05Z","i":-7,"f":1.5e2,"b":true,"n":null,"o":{"k":[1]}} `), func(k string, v Value) error {
		switch k {
		case "s":
			s, err := v.String()
			got = append(got, s)
			return err
		case "t":
			tm, err := v.Time()
			got = append(got, tm.Format(time.RFC3339))
			return err
		case "i":
			n, err := v.Int()
			got = append(got, strings.Repeat("i", int(-n)))
			return err
		case "f":
			f, err := v.Float()
			if f != 150 {
				return errors.New("float")
			}
			return err
		case "b":
			b, err := v.Bool()
			if !b {
				return errors.New("bool")
			}
			return err
		case "n":
			if !v.IsNull() {
				return errors.New("null")
			}
		case "o":
			var o struct{ K []int }
			if err := v.Decode(&o); err != nil || len(o.K) != 1 {
				return errors.New("object")
			}
			got = append(got, string(v.Raw()))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"x", "2026-01-02T03:04:05Z", "iiiiiii", `{"k":[1]}`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q", got)
	}
	if err := DecodeFields([]byte(`{"a":1,"a":2}`), func(string, Value) error { return nil }); !errors.Is(err, ErrDuplicateKey) {
		t.Fatalf("duplicate: %v", err)
	}
	if err := DecodeFields([]byte(`{"a":1}`), func(string, Value) error { return errors.New("nope") }); err == nil || !strings.Contains(err.Error(), "a: nope") {
		t.Fatalf("callback error: %v", err)
	}
	for _, v := range []string{`"x"`, `1`, `true`} {
		val := Value{raw: []byte(v)}
		if _, err := val.Int(); v != "1" && err == nil {
			t.Errorf("Int(%s) accepted", v)
		}
		if _, err := val.String(); v != `"x"` && err == nil {
			t.Errorf("String(%s) accepted", v)
		}
		if _, err := val.Bool(); v != "true" && err == nil {
			t.Errorf("Bool(%s) accepted", v)
		}
	}
}

// FuzzDecodeFields: never panics, and an accepted object is valid JSON
// with no key twice.
func FuzzDecodeFields(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":[true,null],"c":{"d":"e"}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		keys := map[string]bool{}
		err := DecodeFields(b, func(k string, v Value) error {
			if keys[k] {
				t.Fatalf("key %q given twice", k)
			}
			keys[k] = true
			if !json.Valid(v.Raw()) {
				t.Fatalf("value %q is not JSON", v.Raw())
			}
			return nil
		})
		if err == nil && !json.Valid(b) {
			t.Fatalf("accepted invalid JSON %q", b)
		}
	})
}

func TestResultAccessors(t *testing.T) {
	at := now.Add(time.Minute)
	p := Pending("wait").CheckAt(at)
	if p.Status() != abi.StatusPending || p.Note() != "wait" || !p.NextCheck().Equal(at) {
		t.Fatalf("pending: %+v", p)
	}
	if _, ok := p.Outcome(); ok {
		t.Fatal("pending has an outcome")
	}
	c := Changed(Outcome{Result: "changed"}, 3)
	if o, ok := c.Outcome(); !ok || o.Result != "changed" {
		t.Fatalf("changed outcome: %+v", o)
	}
	if b, ok := c.Baseline(); !ok || b != 3 {
		t.Fatalf("changed baseline: %v", b)
	}
	if _, ok := Settled(Outcome{Result: "x"}).Baseline(); ok {
		t.Fatal("settled has a baseline")
	}
}

func TestAdmitCarriesTheNaturalDeadline(t *testing.T) {
	p := testPlugin(false, nil2)
	d := now.Add(time.Hour)
	p.Deadline = func(testParams) time.Time { return d }
	got, err := NewHarness(p).Admit(abi.AdmitRequest{Kind: "test.kind", Params: json.RawMessage(`{"name":"ok"}`)})
	if err != nil || !got.OK || got.Deadline == nil || !got.Deadline.Equal(d) {
		t.Fatalf("%+v %v", got, err)
	}
	// A refusal carries none.
	got, _ = NewHarness(p).Admit(abi.AdmitRequest{Kind: "test.kind", Params: json.RawMessage(`{"name":"bad"}`)})
	if got.Deadline != nil {
		t.Fatalf("refusal with a deadline: %+v", got)
	}
}

// PartitionKey goes out on an ok answer only; a key over the bound is the
// plugin's bug, answered as an error rather than sent.
func TestAdmitCarriesThePartitionKey(t *testing.T) {
	p := testPlugin(false, nil2)
	key := "https://x.example/a"
	p.PartitionKey = func(testParams) string { return key }
	got, err := NewHarness(p).Admit(abi.AdmitRequest{Kind: "test.kind", Params: json.RawMessage(`{"name":"ok"}`)})
	if err != nil || !got.OK || got.PartitionKey != key {
		t.Fatalf("%+v %v", got, err)
	}
	got, _ = NewHarness(p).Admit(abi.AdmitRequest{Kind: "test.kind", Params: json.RawMessage(`{"name":"bad"}`)})
	if got.OK || got.PartitionKey != "" {
		t.Fatalf("refusal with a partition key: %+v", got)
	}
	key = strings.Repeat("k", abi.MaxPartitionKey)
	if got, err := NewHarness(p).Admit(abi.AdmitRequest{Kind: "test.kind", Params: json.RawMessage(`{"name":"ok"}`)}); err != nil || got.PartitionKey != key {
		t.Fatalf("a key at the bound: %v", err)
	}
	key += "k"
	if _, err := NewHarness(p).Admit(abi.AdmitRequest{Kind: "test.kind", Params: json.RawMessage(`{"name":"ok"}`)}); err == nil || !strings.Contains(err.Error(), "PartitionKey") {
		t.Fatalf("a key over the bound: %v", err)
	}
}

// fakeHost is a Fetcher that is also an Execer, as the host is.
type fakeHost struct {
	FetcherFunc
	ExecerFunc
}

func TestInputExec(t *testing.T) {
	if _, err := (Input{}).Exec(ExecRequest{Argv: []string{"true"}}); err != ErrNoExecer {
		t.Fatalf("no execer: %v", err)
	}
	in := Input{}.WithExecer(ExecerFunc(func(req ExecRequest) (ExecResponse, error) {
		if req.Argv[0] == "missing" {
			return ExecResponse{Failure: &abi.FetchFailure{Reason: abi.ExecNotGranted, Message: "no"}}, nil
		}
		return ExecResponse{ExitCode: 3, Stdout: "out"}, nil
	}))
	if r, err := in.Exec(ExecRequest{Argv: []string{"x"}}); err != nil || r.ExitCode != 3 || r.Stdout != "out" {
		t.Fatalf("%+v %v", r, err)
	}
	var fe *FetchError
	if _, err := in.Exec(ExecRequest{Argv: []string{"missing"}}); !errors.As(err, &fe) || fe.Reason != abi.ExecNotGranted {
		t.Fatalf("failure: %v", err)
	}
	// The harness hands a Fetcher that is also an Execer to both.
	p := Plugin[struct{}]{Kind: "t.exec", Version: "1.0.0", Summary: "s", Schema: `{"type":"object"}`,
		Observe: func(_ struct{}, in Input) (Result, error) {
			r, err := in.Exec(ExecRequest{Argv: []string{"x"}})
			if err != nil {
				return Pending(err.Error()), nil
			}
			return Settled(Outcome{Result: "ok", Summary: r.Stdout}), nil
		}}
	h := NewHarness(p)
	host := fakeHost{ExecerFunc: func(ExecRequest) (ExecResponse, error) { return ExecResponse{Stdout: "ran"}, nil }}
	out, err := h.Observe(abi.ObserveRequest{Kind: "t.exec", Params: []byte(`{}`)}, host)
	if err != nil || out.Status != abi.StatusSettled || out.Outcome.Summary != "ran" {
		t.Fatalf("%+v %v", out, err)
	}
}

// A deadline the contract cannot write (a year past 9999) is the caller's
// input the plugin let through: a refusal, never an answer the host cannot
// read.
func TestAdmitRefusesADeadlineRFC3339CannotWrite(t *testing.T) {
	p := testPlugin(false, nil2)
	p.Deadline = func(testParams) time.Time { return time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Add(time.Minute) }
	got, err := NewHarness(p).Admit(abi.AdmitRequest{Kind: "test.kind", Params: json.RawMessage(`{"name":"ok"}`)})
	if err != nil || got.OK || got.Code != abi.CodeInvalidParams || got.Deadline != nil || !strings.Contains(got.Message, "9999") {
		t.Fatalf("%+v %v", got, err)
	}
}

type urlParams struct {
	URL string `json:"url"`
}

func destPlugin(dests func(urlParams) []Destination) Plugin[urlParams] {
	return Plugin[urlParams]{
		Kind: "test.kind", Version: "1.0.0", Schema: `{"type":"object"}`, Capabilities: []string{abi.CapabilityFetch},
		Admit: func(p urlParams, _ Grants) error {
			if p.URL == "refuse" {
				return InvalidParams("url", "refused by admit")
			}
			return nil
		},
		Observe:      func(urlParams, Input) (Result, error) { return Pending(""), nil },
		Destinations: dests,
	}
}

func TestAdmitNamesDestinations(t *testing.T) {
	fromURL := func(p urlParams) []Destination { return []Destination{{Target: p.URL, Field: "url"}} }
	tests := []struct {
		name  string
		dests func(urlParams) []Destination
		url   string
		want  []Destination // on an ok answer
		field string        // of an invalid_params answer
		err   string        // part of an error
	}{
		{name: "a URL param", dests: fromURL, url: "https://status.example.com/x",
			want: []Destination{{Target: "https://status.example.com/x", Field: "url"}}},
		{name: "a loopback URL goes out for the host to judge", dests: fromURL, url: "http://127.0.0.1/",
			want: []Destination{{Target: "http://127.0.0.1/", Field: "url"}}},
		{name: "a fixed host", dests: func(urlParams) []Destination { return []Destination{{Target: "api.github.com"}} },
			want: []Destination{{Target: "api.github.com"}}},
		{name: "none", dests: func(urlParams) []Destination { return nil }},
		{name: "admit's refusal first", dests: fromURL, url: "refuse", field: "url"},
		{name: "a param that is no destination", dests: fromURL, url: "ftp://example.com/", field: "url"},
		{name: "a target of the plugin's own that is no destination", dests: func(urlParams) []Destination { return []Destination{{Target: "a b"}} },
			err: "Destinations[0]"},
		{name: "a malformed field", dests: func(urlParams) []Destination { return []Destination{{Target: "x.example", Field: "u rl"}} },
			err: "destination field"},
		{name: "too many", dests: func(urlParams) []Destination { return make([]Destination, abi.MaxDestinations+1) },
			err: "at most"},
		{name: "a panic", dests: func(urlParams) []Destination { panic("boom") }, err: "panic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params, _ := json.Marshal(urlParams{URL: tt.url})
			got, err := NewHarness(destPlugin(tt.dests)).Admit(abi.AdmitRequest{Kind: "test.kind", Params: params})
			switch {
			case tt.err != "":
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("admit = %+v, %v; want an error saying %q", got, err, tt.err)
				}
			case tt.field != "":
				if err != nil || got.OK || got.Code != abi.CodeInvalidParams || got.Field != tt.field || got.Destinations != nil {
					t.Fatalf("admit = %+v, %v; want invalid_params on %s", got, err, tt.field)
				}
			default:
				if err != nil || !got.OK || !slices.Equal(got.Destinations, tt.want) {
					t.Fatalf("admit = %+v, %v; want ok naming %v", got, err, tt.want)
				}
			}
		})
	}
}

// Destinations are for a kind that fetches: on one that does not, the
// plugin fails validation, loudly, at load.
func TestDestinationsNeedTheFetchCapability(t *testing.T) {
	p := destPlugin(func(urlParams) []Destination { return nil })
	p.Capabilities = nil
	if _, err := NewHarness(p).Describe(); err == nil || !strings.Contains(err.Error(), "fetch capability") {
		t.Fatalf("describe = %v, want the validation error", err)
	}
}

// The SDK's own encoder writes what encoding/json reads back as the same
// answer, through the host's strict decode.
func TestAdmitResponseEncoding(t *testing.T) {
	d := now
	for _, r := range []abi.AdmitResponse{
		{OK: true, Deadline: &d, Destinations: []Destination{{Target: "https://x.example/a?b=\"c\"", Field: "url"}, {Target: "api.github.com"}}},
		{OK: true, Destinations: []Destination{{Target: "h\u2028ost"}}},
		{Code: abi.CodeInvalidParams, Field: "url", Message: "no"},
	} {
		var back abi.AdmitResponse
		if err := abi.StrictUnmarshal(appendAdmitResponse(nil, r), &back); err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		a, _ := json.Marshal(r)
		b, _ := json.Marshal(back)
		if string(a) != string(b) {
			t.Fatalf("round trip %s, want %s", b, a)
		}
	}
}

// reportingFetcher is a Fetcher that is also an ExtractionReporter, as the
// host is.
type reportingFetcher struct {
	FetcherFunc
	got []ExtractionFailedRequest
	out ExtractionFailedResponse
}

func (f *reportingFetcher) ExtractionFailed(req ExtractionFailedRequest) (ExtractionFailedResponse, error) {
	f.got = append(f.got, req)
	return f.out, nil
}

func TestInputExtractionFailed(t *testing.T) {
	req := FetchRequest{Method: "GET", URL: "https://x/doc"}
	resp := FetchResponse{Status: 200, Body: []byte("<html>"), Fingerprint: "abc"}
	if _, err := (Input{}).ExtractionFailed(req, resp); err != ErrNoExtractionReporter {
		t.Fatalf("no reporter: %v", err)
	}
	// A plain Fetcher is no reporter.
	plain := Input{}.WithFetcher(FetcherFunc(nil))
	if _, err := plain.ExtractionFailed(req, resp); err != ErrNoExtractionReporter {
		t.Fatalf("a plain fetcher: %v", err)
	}
	f := &reportingFetcher{out: ExtractionFailedResponse{Forgot: true}}
	withF := Input{}.WithFetcher(f)
	forgot, err := withF.ExtractionFailed(req, resp)
	if err != nil || !forgot || len(f.got) != 1 || f.got[0].Fingerprint != "abc" || f.got[0].Request.URL != req.URL {
		t.Fatalf("forgot %v, %v, reports %+v", forgot, err, f.got)
	}
	f.out = ExtractionFailedResponse{Failure: &abi.FetchFailure{Reason: abi.FetchNotGranted, Message: "no"}}
	var fe *FetchError
	withR := Input{}.WithExtractionReporter(f)
	if forgot, err := withR.ExtractionFailed(req, resp); forgot || !errors.As(err, &fe) || fe.Reason != abi.FetchNotGranted {
		t.Fatalf("refused: %v %v", forgot, err)
	}
	// The harness hands its Fetcher's reporter to observe, as the ABI
	// hands the host's.
	p := Plugin[testParams]{Kind: "test.kind", Version: "1.0.0", Schema: `{"type":"object"}`,
		Observe: func(_ testParams, in Input) (Result, error) {
			forgot, err := in.ExtractionFailed(req, resp)
			return Pending(fmt.Sprintf("%v %v", forgot, err)), nil
		}}
	f.out = ExtractionFailedResponse{Forgot: true}
	got, err := NewHarness(p).Observe(abi.ObserveRequest{Kind: "test.kind", Params: json.RawMessage(`{}`)}, f)
	if err != nil || got.Note != "true <nil>" {
		t.Fatalf("through the harness: %+v %v", got, err)
	}
}
