package sdk_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/vigilhq/vigil/sdk"
	"github.com/vigilhq/vigil/sdk/abi"
)

// afterParams are the params of demo.after, a tiny timer.
type afterParams struct {
	At time.Time `json:"at"`
}

// after settles "fired" once the host's clock reaches params.at.
var after = sdk.Plugin[afterParams]{
	Kind:    "demo.after",
	Version: "1.0.0",
	Summary: "fires once the host's clock reaches an instant",
	Schema: `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
		"properties":{"at":{"type":"string","format":"date-time"}},
		"required":["at"],"additionalProperties":false}`,
	Observe: func(p afterParams, in sdk.Input) (sdk.Result, error) {
		if in.Now.Before(p.At) {
			return sdk.Pending("not yet").CheckAt(p.At), nil
		}
		return sdk.Settled(sdk.Outcome{Result: "fired", Summary: "reached " + p.At.Format(time.RFC3339)}), nil
	},
}

var noon = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

func ExampleNewHarness() {
	h := sdk.NewHarness(after)

	d, err := h.Describe()
	if err != nil {
		panic(err)
	}
	fmt.Println(d.ABI, d.Kind, d.Version)

	req := abi.ObserveRequest{
		Kind:   "demo.after",
		Params: json.RawMessage(`{"at":"2030-01-01T14:00:00Z"}`),
		Now:    noon,
	}
	resp, err := h.Observe(req, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Status, resp.Note)

	req.Now = noon.Add(2 * time.Hour)
	resp, err = h.Observe(req, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Status, resp.Outcome.Result, resp.Outcome.Summary)

	// A call for another kind is a routing bug: an error, never pending.
	req.Kind = "timer"
	_, err = h.Observe(req, nil)
	var wrong *sdk.WrongKindError
	fmt.Println(errors.As(err, &wrong))
	// Output:
	// vigil.predicate/v1 demo.after 1.0.0
	// pending not yet
	// settled fired reached 2030-01-01T14:00:00Z
	// true
}

func ExampleResult_CheckAt() {
	h := sdk.NewHarness(after)
	resp, err := h.Observe(abi.ObserveRequest{
		Kind:   "demo.after",
		Params: json.RawMessage(`{"at":"2030-01-01T14:00:00Z"}`),
		Now:    noon,
	}, nil)
	if err != nil {
		panic(err)
	}
	// The host probes again at 14:00, not every interval until then.
	fmt.Println(resp.Status, resp.NextCheck.Format(time.RFC3339))
	// Output:
	// pending 2030-01-01T14:00:00Z
}

type pageParams struct {
	URL string `json:"url"`
}

func ExamplePending() {
	// "I could not tell" is Pending, never a settled failure: the watch
	// stays open and the host asks again.
	up := sdk.Plugin[pageParams]{
		Kind:         "demo.up",
		Version:      "1.0.0",
		Schema:       `{"type":"object","properties":{"url":{"type":"string"}},"required":["url"],"additionalProperties":false}`,
		Capabilities: []string{"fetch"},
		Observe: func(p pageParams, in sdk.Input) (sdk.Result, error) {
			resp, err := in.Fetch(sdk.FetchRequest{Method: "GET", URL: p.URL})
			if err != nil {
				return sdk.Pending("could not tell: " + err.Error()), nil
			}
			if resp.Status >= 500 || resp.Status == 429 {
				return sdk.Pending(fmt.Sprintf("could not tell: %d", resp.Status)), nil
			}
			return sdk.Settled(sdk.Outcome{Result: "up"}), nil
		},
	}
	h := sdk.NewHarness(up)
	req := abi.ObserveRequest{Kind: "demo.up", Params: json.RawMessage(`{"url":"https://example.com/"}`), Now: noon}

	timeout := sdk.FetcherFunc(func(sdk.FetchRequest) (sdk.FetchResponse, error) {
		return sdk.FetchResponse{Failure: &abi.FetchFailure{Reason: abi.FetchTimeout, Message: "no answer in 4s"}}, nil
	})
	resp, _ := h.Observe(req, timeout)
	fmt.Println(resp.Status, "|", resp.Note)

	unavailable := sdk.FetcherFunc(func(sdk.FetchRequest) (sdk.FetchResponse, error) {
		return sdk.FetchResponse{Status: 503}, nil
	})
	resp, _ = h.Observe(req, unavailable)
	fmt.Println(resp.Status, "|", resp.Note)
	// Output:
	// pending | could not tell: fetch timeout: no answer in 4s
	// pending | could not tell: 503
}

func ExampleInput_WithFetcher() {
	// A predicate's logic is tested with recorded responses: no host, no
	// network, no wasm.
	recorded := sdk.FetcherFunc(func(req sdk.FetchRequest) (sdk.FetchResponse, error) {
		if req.URL == "https://example.com/missing" {
			return sdk.FetchResponse{Failure: &abi.FetchFailure{Reason: abi.FetchConnectFailed, Message: "refused"}}, nil
		}
		return sdk.FetchResponse{Status: 200, Body: []byte("ok")}, nil
	})
	in := sdk.Input{Kind: "demo.up", Now: noon}.WithFetcher(recorded)

	resp, err := in.Fetch(sdk.FetchRequest{Method: "GET", URL: "https://example.com/"})
	fmt.Println(resp.Status, string(resp.Body), err)

	_, err = in.Fetch(sdk.FetchRequest{Method: "GET", URL: "https://example.com/missing"})
	var fe *sdk.FetchError
	if errors.As(err, &fe) {
		fmt.Println(fe.Reason)
	}

	// Without WithFetcher every fetch fails as unavailable.
	_, err = sdk.Input{Now: noon}.Fetch(sdk.FetchRequest{Method: "GET", URL: "https://example.com/"})
	fmt.Println(errors.Is(err, sdk.ErrNoFetcher))
	// Output:
	// 200 ok <nil>
	// connect_failed
	// true
}

type hostParams struct {
	Host string `json:"host"`
}

func ExampleUnobservable() {
	p := sdk.Plugin[hostParams]{
		Kind:    "demo.host",
		Version: "1.0.0",
		Schema:  `{"type":"object","properties":{"host":{"type":"string"}},"required":["host"],"additionalProperties":false}`,
		// Admit checks configuration only; it never reaches the network.
		Admit: func(p hostParams, g sdk.Grants) error {
			if p.Host == "" {
				return sdk.InvalidParams("host", "required")
			}
			for _, h := range g.FetchHosts {
				if h == p.Host {
					return nil
				}
			}
			return sdk.Unobservable("kinds.demo.host.fetch_hosts", "host %s is not granted", p.Host)
		},
		Observe: func(hostParams, sdk.Input) (sdk.Result, error) { return sdk.Pending("not yet"), nil },
	}
	h := sdk.NewHarness(p)
	grants := sdk.Grants{Capabilities: []string{"fetch"}, FetchHosts: []string{"api.example.com"}}
	for _, params := range []string{
		`{"host":"api.example.com"}`,
		`{"host":"other.example.com"}`,
		`{"host":""}`,
		`{"hots":"api.example.com"}`,
	} {
		resp, err := h.Admit(abi.AdmitRequest{Kind: "demo.host", Params: json.RawMessage(params), Grants: grants})
		if err != nil {
			panic(err)
		}
		out, _ := json.Marshal(resp)
		fmt.Println(string(out))
	}
	// Output:
	// {"ok":true}
	// {"ok":false,"code":"unobservable","message":"host other.example.com is not granted","setting":"kinds.demo.host.fetch_hosts"}
	// {"ok":false,"code":"invalid_params","message":"required","field":"host"}
	// {"ok":false,"code":"invalid_params","message":"unknown field","field":"hots"}
}

// snapshot is what demo.etag remembers between checks.
type snapshot struct {
	ETag string `json:"etag"`
}

func ExampleChanged() {
	// A standing kind never settles: the first check records a baseline
	// silently, and each later change worth mail answers Changed with the
	// new baseline.
	watch := sdk.Plugin[pageParams]{
		Kind:         "demo.etag",
		Version:      "1.0.0",
		Standing:     true,
		Schema:       `{"type":"object","properties":{"url":{"type":"string"}},"required":["url"],"additionalProperties":false}`,
		Capabilities: []string{"fetch"},
		Observe: func(p pageParams, in sdk.Input) (sdk.Result, error) {
			resp, err := in.Fetch(sdk.FetchRequest{Method: "HEAD", URL: p.URL})
			if err != nil {
				return sdk.Pending("could not tell: " + err.Error()), nil
			}
			now := snapshot{ETag: resp.Headers["etag"]}
			var was snapshot
			seen, err := in.DecodeBaseline(&was)
			switch {
			case err != nil:
				return sdk.Result{}, err
			case !seen:
				return sdk.Baseline(now), nil
			case was == now:
				return sdk.Pending("unchanged"), nil
			}
			return sdk.Changed(sdk.Outcome{Result: "changed", Summary: p.URL + " changed"}, now), nil
		},
	}
	h := sdk.NewHarness(watch)
	etag := `"v1"`
	page := sdk.FetcherFunc(func(sdk.FetchRequest) (sdk.FetchResponse, error) {
		return sdk.FetchResponse{Status: 200, Headers: map[string]string{"etag": etag}}, nil
	})
	req := abi.ObserveRequest{Kind: "demo.etag", Params: json.RawMessage(`{"url":"https://example.com/"}`), Now: noon}

	for range 3 {
		resp, err := h.Observe(req, page)
		if err != nil {
			panic(err)
		}
		if len(resp.Baseline) > 0 {
			fmt.Println(resp.Status, "baseline", string(resp.Baseline))
			req.Baseline = resp.Baseline // what the host records
		} else {
			fmt.Println(resp.Status, resp.Note)
		}
		etag = `"v2"`
	}
	// Output:
	// pending baseline {"etag":"\"v1\""}
	// changed baseline {"etag":"\"v2\""}
	// pending unchanged
}

func ExampleDecodeFields() {
	data := []byte(`{"repo":"vigilhq/vigil","pr":42,"draft":false,"labels":["ci"]}`)
	err := sdk.DecodeFields(data, func(key string, v sdk.Value) error {
		switch key {
		case "repo":
			s, err := v.String()
			fmt.Println(key, s)
			return err
		case "pr":
			n, err := v.Int()
			fmt.Println(key, n)
			return err
		case "draft":
			b, err := v.Bool()
			fmt.Println(key, b)
			return err
		default:
			fmt.Println(key, string(v.Raw()))
			return nil
		}
	})
	fmt.Println(err)

	// A key given twice is refused.
	err = sdk.DecodeFields([]byte(`{"pr":1,"pr":2}`), func(string, sdk.Value) error { return nil })
	fmt.Println(errors.Is(err, sdk.ErrDuplicateKey))
	// Output:
	// repo vigilhq/vigil
	// pr 42
	// draft false
	// labels ["ci"]
	// <nil>
	// true
}

// prParams decodes itself on observe's hot path with DecodeFields; admit
// still decodes it strictly through its json tags, so the two must agree.
type prParams struct {
	Repo string `json:"repo"`
	PR   int64  `json:"pr"`
}

func (p *prParams) UnmarshalParams(data []byte) error {
	return sdk.DecodeFields(data, func(key string, v sdk.Value) error {
		var err error
		switch key {
		case "repo":
			p.Repo, err = v.String()
		case "pr":
			p.PR, err = v.Int()
		default:
			err = errors.New("unknown field")
		}
		return err
	})
}

func ExampleParamsUnmarshaler() {
	var _ sdk.ParamsUnmarshaler = (*prParams)(nil)
	h := sdk.NewHarness(sdk.Plugin[prParams]{
		Kind:    "demo.pr",
		Version: "1.0.0",
		Schema:  `{"type":"object","properties":{"repo":{"type":"string"},"pr":{"type":"integer"}},"required":["repo","pr"],"additionalProperties":false}`,
		Observe: func(p prParams, in sdk.Input) (sdk.Result, error) {
			return sdk.Pending(fmt.Sprintf("%s#%d not merged yet", p.Repo, p.PR)), nil
		},
	})
	resp, err := h.Observe(abi.ObserveRequest{
		Kind:   "demo.pr",
		Params: json.RawMessage(`{"repo":"vigilhq/vigil","pr":42}`),
		Now:    noon,
	}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Note)
	// Output:
	// vigilhq/vigil#42 not merged yet
}

// urlParams are the params of demo.page.
type urlParams struct {
	URL string `json:"url"`
}

// A kind that fetches names where, in one line; the host then refuses a
// watch of a loopback or private URL at registration. A param that is no
// destination at all is refused by the SDK, naming the param.
func ExamplePlugin_destinations() {
	p := sdk.Plugin[urlParams]{
		Kind:         "demo.page",
		Version:      "1.0.0",
		Schema:       `{"type":"object","properties":{"url":{"type":"string"}},"required":["url"],"additionalProperties":false}`,
		Capabilities: []string{abi.CapabilityFetch},
		Observe:      func(urlParams, sdk.Input) (sdk.Result, error) { return sdk.Pending("not yet"), nil },
		Destinations: func(p urlParams) []sdk.Destination { return []sdk.Destination{{Target: p.URL, Field: "url"}} },
	}
	h := sdk.NewHarness(p)
	for _, params := range []string{
		`{"url":"https://status.example.com/healthz"}`,
		`{"url":"ftp://files.example.com/"}`,
	} {
		resp, err := h.Admit(abi.AdmitRequest{Kind: "demo.page", Params: json.RawMessage(params)})
		if err != nil {
			panic(err)
		}
		out, _ := json.Marshal(resp)
		fmt.Println(string(out))
	}
	// Output:
	// {"ok":true,"destinations":[{"target":"https://status.example.com/healthz","field":"url"}]}
	// {"ok":false,"code":"invalid_params","message":"not a destination the host can fetch: scheme \"ftp\": want http or https","field":"url"}
}
