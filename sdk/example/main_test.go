package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/sdk"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/sdk/sdktest"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// granted is what the operator grants in the tests.
var granted = sdk.Grants{Capabilities: []string{"fetch"}, FetchHosts: []string{"status.example.com"}}

// answer is a recorded fetch: a response, or the failure the host reports.
func answer(status int) sdk.Fetcher {
	return sdk.FetcherFunc(func(sdk.FetchRequest) (sdk.FetchResponse, error) {
		return sdk.FetchResponse{Status: status}, nil
	})
}

func failure(reason string) sdk.Fetcher {
	return sdk.FetcherFunc(func(sdk.FetchRequest) (sdk.FetchResponse, error) {
		return sdk.FetchResponse{Failure: &abi.FetchFailure{Reason: reason, Message: "recorded"}}, nil
	})
}

func TestObserve(t *testing.T) {
	const u = "https://status.example.com/healthz"
	matched := func(status int) sdk.Result {
		return sdk.Settled(sdk.Outcome{
			Result:  "matched",
			Summary: "GET " + u + " answered " + strconv.Itoa(status),
			Detail:  matchDetail{URL: u, Status: status, At: "2026-11-30T12:00:00Z"},
		})
	}
	tests := []struct {
		name   string
		params Params
		fetch  sdk.Fetcher
		want   sdk.Result
	}{
		{"wanted status", Params{URL: u, Status: 200}, answer(200), matched(200)},
		{"default is 200", Params{URL: u}, answer(200), matched(200)},
		{"other status", Params{URL: u, Status: 200}, answer(404), sdk.Pending("answered 404, waiting for 200")},
		{"wanted 204 got 200", Params{URL: u, Status: 204}, answer(200), sdk.Pending("answered 200, waiting for 204")},
		{"503 cannot tell", Params{URL: u}, answer(503), sdk.Pending("could not tell: server answered 503")},
		{"500 cannot tell", Params{URL: u}, answer(500), sdk.Pending("could not tell: server answered 500")},
		{"429 cannot tell", Params{URL: u}, answer(429), sdk.Pending("could not tell: server answered 429")},
		{"waiting for a 503", Params{URL: u, Status: 503}, answer(503), matched(503)},
		{"fetch timeout", Params{URL: u}, failure(abi.FetchTimeout), sdk.Pending("could not tell: fetch timeout")},
		{"rate limited by the host", Params{URL: u}, failure(abi.FetchRateLimited), sdk.Pending("could not tell: fetch rate_limited")},
		{"grant withdrawn", Params{URL: u}, failure(abi.FetchNotGranted), sdk.Pending("could not tell: fetch not_granted")},
		{"fetcher error", Params{URL: u}, sdk.FetcherFunc(func(sdk.FetchRequest) (sdk.FetchResponse, error) {
			return sdk.FetchResponse{}, errors.New("boom")
		}), sdk.Pending("could not tell: boom")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := sdk.Input{Kind: Kind, WatchID: "w1", Now: now, Attempt: 1}.WithFetcher(tt.fetch)
			got, err := observe(tt.params, in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("observe = %+v\nwant      %+v", got, tt.want)
			}
		})
	}
}

// The request observe makes is a bounded GET of the URL as given.
func TestObserveRequest(t *testing.T) {
	var got []sdk.FetchRequest
	f := sdk.FetcherFunc(func(r sdk.FetchRequest) (sdk.FetchResponse, error) {
		got = append(got, r)
		return sdk.FetchResponse{Status: 200}, nil
	})
	p := Params{URL: "https://status.example.com/healthz?full=1"}
	if _, err := observe(p, sdk.Input{Now: now}.WithFetcher(f)); err != nil {
		t.Fatal(err)
	}
	want := []sdk.FetchRequest{{Method: "GET", URL: p.URL, TimeoutSeconds: fetchTimeout}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("requests = %+v, want %+v", got, want)
	}
}

// An Input without a fetcher is a fetch failure, and so Pending.
func TestObserveWithoutFetcher(t *testing.T) {
	got, err := observe(Params{URL: "https://status.example.com/"}, sdk.Input{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if want := sdk.Pending("could not tell: fetch " + abi.FetchUnavailable); !reflect.DeepEqual(got, want) {
		t.Fatalf("observe = %+v, want %+v", got, want)
	}
}

func TestAdmit(t *testing.T) {
	const setting = "kinds.example.http-status.fetch_hosts"
	tests := []struct {
		name    string
		params  Params
		grants  sdk.Grants
		field   string // want InvalidParams naming this field
		setting string // want Unobservable naming this setting
	}{
		{name: "ok", params: Params{URL: "https://status.example.com/healthz"}, grants: granted},
		{name: "ok, host case and port", params: Params{URL: "http://Status.Example.COM:8080/", Status: 204}, grants: granted},
		{name: "host not granted", params: Params{URL: "https://other.example.com/"}, grants: granted, setting: setting},
		{name: "nothing granted", params: Params{URL: "https://status.example.com/"}, grants: sdk.Grants{Capabilities: []string{"fetch"}}, setting: setting},
		{name: "relative url", params: Params{URL: "/healthz"}, grants: granted, field: "url"},
		{name: "not a url", params: Params{URL: "https://bad host/"}, grants: granted, field: "url"},
		{name: "ftp", params: Params{URL: "ftp://status.example.com/"}, grants: granted, field: "url"},
		{name: "credentials", params: Params{URL: "https://me:secret@status.example.com/"}, grants: granted, field: "url"},
		{name: "status out of range", params: Params{URL: "https://status.example.com/", Status: 42}, grants: granted, field: "status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := admit(tt.params, tt.grants)
			var pe *sdk.ParamError
			var ue *sdk.UnobservableError
			switch {
			case tt.field != "":
				if !errors.As(err, &pe) || pe.Field != tt.field {
					t.Fatalf("admit = %v, want invalid params on %q", err, tt.field)
				}
			case tt.setting != "":
				if !errors.As(err, &ue) || ue.Setting != tt.setting {
					t.Fatalf("admit = %v, want unobservable naming %q", err, tt.setting)
				}
			default:
				if err != nil {
					t.Fatalf("admit = %v, want admitted", err)
				}
			}
		})
	}
}

// The schema is what the host checks before admit; sdk.NewHarness does
// not run it. sdktest compiles it the way the host does (draft 2020-12,
// formats asserted), holds the example to it, and here to a few
// refusals too.
func TestSchema(t *testing.T) {
	sdktest.CheckParams(t, sdk.NewHarness(Plugin), map[string]bool{
		`{"url":"https://status.example.com/healthz"}`:         true,
		`{"url":"http://status.example.com/"}`:                 true,
		`{}`:                                                   false,
		`{"url":"status.example.com"}`:                         false,
		`{"url":"ftp://status.example.com/"}`:                  false,
		`{"url":"https://status.example.com/","status":42}`:    false,
		`{"url":"https://status.example.com/","status":"200"}`: false,
		`{"url":"https://status.example.com/","colour":"red"}`: false,
	})
	if err := admit(Plugin.Example, granted); err != nil {
		t.Errorf("the example does not admit: %v", err)
	}
}

// TestHarness runs the plugin through the same JSON dispatch the wasm
// exports use.
func TestHarness(t *testing.T) {
	h := sdk.NewHarness(Plugin)

	d, err := h.Describe()
	if err != nil {
		t.Fatal(err)
	}
	if d.ABI != abi.Version || d.Kind != Kind || d.Version != "1.0.0" || d.Standing ||
		d.DefaultEvery != "30s" || !reflect.DeepEqual(d.Capabilities, []string{"fetch"}) {
		t.Fatalf("describe = %+v", d)
	}
	if !json.Valid(d.ParamsSchema) || string(d.Example) != `{"url":"https://status.example.com/healthz","status":200}` {
		t.Fatalf("describe schema/example = %s / %s", d.ParamsSchema, d.Example)
	}

	admitTests := []struct {
		name, params string
		want         abi.AdmitResponse
	}{
		{"ok", `{"url":"https://status.example.com/healthz"}`, abi.AdmitResponse{OK: true,
			Destinations: []abi.Destination{{Target: "https://status.example.com/healthz", Field: "url"}}}},
		{"invalid url", `{"url":"/healthz"}`,
			abi.AdmitResponse{Code: abi.CodeInvalidParams, Field: "url", Message: "want an absolute http or https URL"}},
		{"unknown field", `{"url":"https://status.example.com/","colour":"red"}`,
			abi.AdmitResponse{Code: abi.CodeInvalidParams, Field: "colour", Message: "unknown field"}},
		{"wrong type", `{"url":"https://status.example.com/","status":"200"}`,
			abi.AdmitResponse{Code: abi.CodeInvalidParams, Field: "status", Message: "want int, got JSON string"}},
		{"unobservable", `{"url":"https://other.example.com/"}`,
			abi.AdmitResponse{Code: abi.CodeUnobservable, Setting: "kinds.example.http-status.fetch_hosts",
				Message: "host other.example.com is not granted to kind example.http-status"}},
	}
	for _, tt := range admitTests {
		t.Run("admit "+tt.name, func(t *testing.T) {
			got, err := h.Admit(abi.AdmitRequest{Kind: Kind, Params: json.RawMessage(tt.params), Grants: granted})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("admit = %+v, want %+v", got, tt.want)
			}
		})
	}

	req := abi.ObserveRequest{Kind: Kind, WatchID: "w1", Now: now, Attempt: 3,
		Params: json.RawMessage(`{"url":"https://status.example.com/healthz"}`)}

	got, err := h.Observe(req, answer(200))
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != abi.StatusSettled || got.Outcome == nil || got.Outcome.Result != "matched" ||
		string(got.Outcome.Detail) != `{"url":"https://status.example.com/healthz","status":200,"at":"2026-11-30T12:00:00Z"}` {
		t.Fatalf("observe 200 = %+v (outcome %+v)", got, got.Outcome)
	}

	got, err = h.Observe(req, answer(503))
	if err != nil {
		t.Fatal(err)
	}
	want := abi.ObserveResponse{Status: abi.StatusPending, Note: "could not tell: server answered 503"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("observe 503 = %+v, want %+v", got, want)
	}

	// No fetcher at all: every fetch fails as unavailable, still Pending.
	got, err = h.Observe(req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != abi.StatusPending || got.Note != "could not tell: fetch unavailable" {
		t.Fatalf("observe without fetcher = %+v", got)
	}

	// A call for another kind is a routing bug: an error, never Pending.
	req.Kind = "timer"
	var wk *sdk.WrongKindError
	if _, err := h.Observe(req, answer(200)); !errors.As(err, &wk) {
		t.Fatalf("observe of the wrong kind = %v, want a WrongKindError", err)
	}
	if _, err := h.Admit(abi.AdmitRequest{Kind: "timer", Params: req.Params, Grants: granted}); !errors.As(err, &wk) {
		t.Fatalf("admit of the wrong kind = %v, want a WrongKindError", err)
	}
}

// The plugin's build pulls the SDK and the standard library, nothing
// else: sdktest and its schema compiler are for the tests.
func TestBuildPullsOnlyTheSDK(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	got := strings.Fields(string(out))
	// go list -deps names the package itself last.
	if len(got) > 0 {
		got = got[:len(got)-1]
	}
	// sdk/internal/export joins the optional exports (sdk/wake) to the
	// registered plugin: the SDK's own.
	want := []string{"github.com/vigilhq/vigil/sdk/abi", "github.com/vigilhq/vigil/sdk/internal/export", "github.com/vigilhq/vigil/sdk"}
	if !slices.Equal(got, want) {
		t.Fatalf("the build pulls %v beside the plugin, want %v", got, want)
	}
}
