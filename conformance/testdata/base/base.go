// Package base is the well-behaved plugin the suite's test plugins start
// from. Each plugin in ../broken changes one thing about it, so the suite
// must fail exactly the check for that thing and pass the others; the
// plugin in ../good changes nothing.
//
// The kind fetches params.url. A 200 settles "ok" (a standing kind compares
// the body's fingerprint with its baseline instead); anything else, a
// fetch failure, a 404, a 429 or a 503, is pending: "I could not tell".
package base

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/vigilhq/vigil/sdk"
	"github.com/vigilhq/vigil/sdk/abi"
)

// Params name the resource to watch.
type Params struct {
	URL string `json:"url"`
	// Tag is a label carried into the outcome.
	Tag string `json:"tag,omitempty"`
}

// Schema is the JSON Schema of Params.
const Schema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "url": {"type": "string", "format": "uri", "maxLength": 512},
    "tag": {"type": "string", "maxLength": 64}
  },
  "required": ["url"],
  "additionalProperties": false
}`

// Plugin returns the well-behaved plugin of kind.
func Plugin(kind string, standing bool) sdk.Plugin[Params] {
	return sdk.Plugin[Params]{
		Kind:         kind,
		Version:      "1.0.0",
		Summary:      "a test plugin: settles once a GET of a URL answers 200",
		Standing:     standing,
		DefaultEvery: 30 * time.Second,
		Schema:       Schema,
		Capabilities: []string{abi.CapabilityFetch},
		Example:      Params{URL: "https://forge.example.com/api/status", Tag: "nightly"},
		Admit:        func(p Params, g sdk.Grants) error { return Admit(kind, p, g) },
		Destinations: func(p Params) []sdk.Destination { return []sdk.Destination{{Target: p.URL, Field: "url"}} },
		Observe:      func(p Params, in sdk.Input) (sdk.Result, error) { return Observe(standing, p, in) },
	}
}

// Admit checks the URL and its grant; it never fetches.
func Admit(kind string, p Params, g sdk.Grants) error {
	u, err := url.Parse(p.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return sdk.InvalidParams("url", "want an absolute http or https URL")
	}
	if !abi.HostGranted(g.FetchHosts, u.Hostname()) {
		return sdk.Unobservable("kinds."+kind+".fetch_hosts", "host %s is not granted", u.Hostname())
	}
	return nil
}

// Snapshot is a standing watch's baseline.
type Snapshot struct {
	Fingerprint string `json:"fingerprint"`
}

// Fetch makes the one GET; status is 0 and note says why when there was
// no 200 to read.
func Fetch(p Params, in sdk.Input) (resp sdk.FetchResponse, note string) {
	resp, err := in.Fetch(sdk.FetchRequest{Method: "GET", URL: p.URL, TimeoutSeconds: 4})
	if err != nil {
		var fe *sdk.FetchError
		if errors.As(err, &fe) {
			return resp, "could not tell: fetch " + fe.Reason
		}
		return resp, "could not tell: " + err.Error()
	}
	if resp.Status != 200 {
		return resp, fmt.Sprintf("could not tell: answered %d", resp.Status)
	}
	return resp, ""
}

// Observe is the well-behaved observe.
func Observe(standing bool, p Params, in sdk.Input) (sdk.Result, error) {
	resp, note := Fetch(p, in)
	if note != "" {
		return sdk.Pending(note), nil
	}
	fp := Fingerprint(resp)
	if !standing {
		return sdk.Settled(Ok(p, in, fp)), nil
	}
	var before Snapshot
	if ok, err := in.DecodeBaseline(&before); err != nil || !ok {
		return sdk.Baseline(Snapshot{Fingerprint: fp}), nil
	}
	if before.Fingerprint == fp {
		return sdk.Pending("no change"), nil
	}
	return sdk.Changed(sdk.Outcome{Result: "changed", Summary: "the body of " + p.URL + " changed"},
		Snapshot{Fingerprint: fp}), nil
}

// Ok is the settled outcome of a 200.
func Ok(p Params, in sdk.Input, fp string) sdk.Outcome {
	return sdk.Outcome{
		Result:  "ok",
		Summary: "GET " + p.URL + " answered 200",
		Detail:  map[string]string{"tag": p.Tag, "fingerprint": fp, "at": in.Now.UTC().Format(time.RFC3339)},
	}
}

// Fingerprint is the host's fingerprint of a response, or the body's
// SHA-256 when a fetcher gave none.
func Fingerprint(resp sdk.FetchResponse) string {
	if resp.Fingerprint != "" {
		return resp.Fingerprint
	}
	sum := sha256.Sum256(resp.Body)
	return hex.EncodeToString(sum[:])
}

// Wake is the well-behaved wake: a Standard Webhooks event whose body
// names a URL ({"url": …}) wakes the watches on it (their partition key
// is their URL); anything else names none.
func Wake(e sdk.Event) ([]string, error) {
	var body struct {
		URL string `json:"url"`
	}
	if e.Source != abi.SourceStandard || !e.DecodeBody(&body) || body.URL == "" || len(body.URL) > abi.MaxPartitionKey {
		return nil, nil
	}
	return []string{body.URL}, nil
}
