package main

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/vigilhq/vigil/sdk"
)

// Kind is the predicate's name.
const Kind = "example.http-status"

// Params are what a watch of this kind names. The json tags are the
// contract: admit decodes them strictly, so an unknown field is refused.
type Params struct {
	// URL is fetched with GET on every observation.
	URL string `json:"url"`
	// Status is the HTTP status to wait for; 0 (absent) means 200.
	Status int `json:"status,omitempty"`
}

// want is the status the watch waits for.
func (p Params) want() int {
	if p.Status == 0 {
		return 200
	}
	return p.Status
}

// schema is the JSON Schema of Params. The host validates params against
// it before admit runs, and names the failing field in its refusal.
const schema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "url": {
      "type": "string",
      "format": "uri",
      "pattern": "^https?://",
      "maxLength": 2048,
      "description": "the http or https URL to GET"
    },
    "status": {
      "type": "integer",
      "minimum": 100,
      "maximum": 599,
      "description": "the HTTP status to wait for; default 200"
    }
  },
  "required": ["url"],
  "additionalProperties": false
}`

// fetchTimeout bounds one GET. It stays under the host's default observe
// timeout (5 s), so a slow server comes back as a fetch timeout, which
// observe answers as Pending, rather than as a call the host has to kill.
const fetchTimeout = 4 // seconds

// Plugin is the example.http-status kind.
var Plugin = sdk.Plugin[Params]{
	Kind:         Kind,
	Version:      "1.0.0",
	Summary:      "settles once a GET of a URL answers the wanted HTTP status",
	DefaultEvery: 30 * time.Second,
	Schema:       schema,
	Capabilities: []string{"fetch"},
	Example:      Params{URL: "https://status.example.com/healthz", Status: 200},
	Admit:        admit,
	Observe:      observe,
	// The watch fetches its URL: naming it lets the host refuse a loopback
	// or private address at registration, not at every probe.
	Destinations: func(p Params) []sdk.Destination { return []sdk.Destination{{Target: p.URL, Field: "url"}} },
}

// admit checks configuration only: what the schema cannot say about the
// params, and whether the operator granted the URL's host. It never
// fetches: a server that is down at registration may be up at the next
// check, and that is exactly what the watch is for.
func admit(p Params, g sdk.Grants) error {
	u, err := url.Parse(p.URL)
	if err != nil || !u.IsAbs() || u.Hostname() == "" {
		return sdk.InvalidParams("url", "want an absolute http or https URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return sdk.InvalidParams("url", "scheme %q: want http or https", u.Scheme)
	}
	if u.User != nil {
		// Params are stored and shown in listings; a secret does not
		// belong in them.
		return sdk.InvalidParams("url", "credentials in the URL are refused")
	}
	// The host checks the schema before admit, but a unit test through
	// sdk.NewHarness does not: keep the range check here too.
	if p.Status != 0 && (p.Status < 100 || p.Status > 599) {
		return sdk.InvalidParams("status", "%d is not an HTTP status (100-599)", p.Status)
	}
	host := strings.TrimSuffix(u.Hostname(), ".")
	granted := slices.ContainsFunc(g.FetchHosts, func(h string) bool {
		return strings.EqualFold(strings.TrimSuffix(h, "."), host)
	})
	if !granted {
		return sdk.Unobservable("kinds."+Kind+".fetch_hosts",
			"host %s is not granted to kind %s", host, Kind)
	}
	return nil
}

// matchDetail is the settled outcome's detail.
type matchDetail struct {
	URL    string `json:"url"`
	Status int    `json:"status"`
	At     string `json:"at"` // the host's clock when it matched
}

// observe makes one GET and answers. Every "I could not tell" (the fetch
// failed or was refused, the server answered 5xx or 429) is Pending: the
// watch stays open and the host asks again at its interval. A status that
// is simply not the wanted one yet is Pending too. Only the wanted status
// settles.
func observe(p Params, in sdk.Input) (sdk.Result, error) {
	want := p.want()
	resp, err := in.Fetch(sdk.FetchRequest{Method: "GET", URL: p.URL, TimeoutSeconds: fetchTimeout})
	if err != nil {
		var fe *sdk.FetchError
		if errors.As(err, &fe) {
			// fe.Reason is the host's taxonomy: timeout, rate_limited,
			// connect_failed, destination_refused, not_granted, … None of
			// them says anything about the status.
			return sdk.Pending("could not tell: fetch " + fe.Reason), nil
		}
		return sdk.Pending("could not tell: " + err.Error()), nil
	}
	switch {
	case resp.Status == want:
		// Checked first, so a watch that waits for a 503 can settle.
		return sdk.Settled(sdk.Outcome{
			Result:  "matched",
			Summary: fmt.Sprintf("GET %s answered %d", p.URL, resp.Status),
			Detail:  matchDetail{URL: p.URL, Status: resp.Status, At: in.Now.UTC().Format(time.RFC3339)},
		}), nil
	case resp.Status == 429 || resp.Status >= 500:
		return sdk.Pending(fmt.Sprintf("could not tell: server answered %d", resp.Status)), nil
	default:
		return sdk.Pending(fmt.Sprintf("answered %d, waiting for %d", resp.Status, want)), nil
	}
}
