package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/vigilhq/vigil/plugins/internal/note"
	"github.com/vigilhq/vigil/sdk"
	"github.com/vigilhq/vigil/sdk/abi"
)

// Kind is the predicate's name.
const Kind = "http"

// Params are what a watch of this kind names.
type Params struct {
	// URL is fetched with GET on every observation.
	URL string `json:"url"`
	// Expect is what the answer must show to settle; nil (or empty)
	// means any 2xx.
	Expect *Expect `json:"expect,omitempty"`
	// Change settles once the body differs from the first one seen.
	Change bool `json:"change,omitempty"`
}

// Expect lists the expectations; every one given must hold.
type Expect struct {
	// Status is the HTTP status wanted; 0 (absent) means any 2xx.
	Status int `json:"status,omitempty"`
	// BodyContains is text the body must contain.
	BodyContains string `json:"body_contains,omitempty"`
	// JSONPath is a value the JSON body must hold at a path.
	JSONPath *JSONPath `json:"json_path,omitempty"`
}

// JSONPath names a value in a JSON body: Path is dotted ("a.b.0.c"; a
// numeric segment indexes an array), Equals any JSON value, compared by
// value (1 equals 1.0; object keys in any order).
type JSONPath struct {
	Path   string          `json:"path"`
	Equals json.RawMessage `json:"equals"`
}

const schema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "url": {"type": "string", "format": "uri", "pattern": "^https?://", "maxLength": 2048,
            "description": "the http or https URL to GET"},
    "expect": {
      "type": "object",
      "description": "every expectation given must hold; none given means any 2xx",
      "properties": {
        "status": {"type": "integer", "minimum": 100, "maximum": 599,
                   "description": "the HTTP status wanted; default any 2xx"},
        "body_contains": {"type": "string", "minLength": 1, "maxLength": 1024,
                          "description": "text the body must contain"},
        "json_path": {
          "type": "object",
          "properties": {
            "path": {"type": "string", "minLength": 1, "maxLength": 256, "pattern": "^[^.]+(\\.[^.]+)*$",
                     "description": "a dotted path into the JSON body; numeric segments index arrays"},
            "equals": {"description": "the JSON value wanted there, compared by value"}
          },
          "required": ["path", "equals"],
          "additionalProperties": false
        }
      },
      "additionalProperties": false
    },
    "change": {"type": "boolean",
               "description": "settle once the body differs from the first one seen; not with expect"}
  },
  "required": ["url"],
  "additionalProperties": false
}`

// fetchTimeout bounds one GET, under the host's 5 s observe timeout, so a
// slow server comes back as a timeout (pending) rather than a killed call.
const fetchTimeout = 4 // seconds

// Plugin is the http kind.
var Plugin = sdk.Plugin[Params]{
	Kind:         Kind,
	Version:      "1.0.0",
	Summary:      "settles once a GET of a URL meets its expectations (default any 2xx), or once its body changes",
	DefaultEvery: 30 * time.Second,
	Schema:       schema,
	Capabilities: []string{abi.CapabilityFetch},
	Example: Params{URL: "https://status.example.com/api/health", Expect: &Expect{
		Status:   200,
		JSONPath: &JSONPath{Path: "status", Equals: json.RawMessage(`"ok"`)},
	}},
	Admit:   admit,
	Observe: observe,
	// The URL is where every probe fetches: the host refuses a loopback
	// or private one at registration, not at every probe.
	Destinations: func(p Params) []sdk.Destination { return []sdk.Destination{{Target: p.URL, Field: "url"}} },
	// Every watch on one URL lands on one node of a cluster, which reads
	// it once per interval for all of them; an event naming it (wake)
	// wakes every watch on it.
	PartitionKey: partitionKey,
	Wake:         wake,
}

// partitionKey is the resource a watch reads: its URL as the server sees
// it (scheme and host in lower case, no default port, no fragment, "/"
// for an empty path), so two watches on one page written two ways share a
// partition. A key over the ABI's bound goes as its SHA-256: the host only
// hashes it.
func partitionKey(p Params) string {
	u, err := url.Parse(p.URL)
	if err != nil {
		return "" // admit refused it already
	}
	u.Scheme = strings.ToLower(u.Scheme)
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	u.Host = host
	u.Fragment, u.RawFragment = "", ""
	if u.Path == "" {
		u.Path, u.RawPath = "/", ""
	}
	k := u.String()
	if len(k) > abi.MaxPartitionKey {
		sum := sha256.Sum256([]byte(k))
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	return k
}

// admit checks configuration only: the URL, the expectations the schema
// cannot judge, and the host grant. It never fetches.
func admit(p Params, g sdk.Grants) error {
	u, err := url.Parse(p.URL)
	if err != nil || !u.IsAbs() || u.Hostname() == "" {
		return sdk.InvalidParams("url", "want an absolute http or https URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return sdk.InvalidParams("url", "scheme %q: want http or https", u.Scheme)
	}
	if u.User != nil {
		// Params are stored and listed; a credential does not belong there.
		return sdk.InvalidParams("url", "credentials in the URL are refused")
	}
	if _, err := abi.ParseDestination(p.URL); err != nil {
		var de *abi.DestinationError
		if errors.As(err, &de) {
			return sdk.InvalidParams("url", "not a URL the host can fetch: %s", de.Reason)
		}
		return sdk.InvalidParams("url", "not a URL the host can fetch")
	}
	if e := p.Expect; e != nil {
		if p.Change {
			return sdk.InvalidParams("change", "change and expect are two questions: name one per watch")
		}
		if e.Status != 0 && (e.Status < 100 || e.Status > 599) {
			return sdk.InvalidParams("expect.status", "%d is not an HTTP status (100-599)", e.Status)
		}
		if jp := e.JSONPath; jp != nil {
			if _, err := splitPath(jp.Path); err != nil {
				return sdk.InvalidParams("expect.json_path.path", "%v", err)
			}
			if len(jp.Equals) == 0 || !json.Valid(jp.Equals) {
				return sdk.InvalidParams("expect.json_path.equals", "required: the JSON value wanted at the path")
			}
		}
	}
	if !abi.HostGranted(g.FetchHosts, u.Hostname()) {
		return sdk.Unobservable("kinds."+Kind+".fetch_hosts", "host %s is not granted to kind %s: add it to kinds.%s.fetch_hosts", u.Hostname(), Kind, Kind)
	}
	return nil
}

// baseline is change mode's memory: the fingerprint first seen.
type baseline struct {
	Fingerprint string `json:"fingerprint"`
}

type okDetail struct {
	URL    string `json:"url"`
	Status int    `json:"status"`
	At     string `json:"at"`
}

type changedDetail struct {
	URL    string `json:"url"`
	Status int    `json:"status"`
	Before string `json:"before"`
	After  string `json:"after"`
	At     string `json:"at"`
}

// observe makes one GET and answers.
func observe(p Params, in sdk.Input) (sdk.Result, error) {
	req := sdk.FetchRequest{Method: "GET", URL: p.URL, TimeoutSeconds: fetchTimeout}
	resp, err := in.Fetch(req)
	if err != nil {
		var fe *sdk.FetchError
		if errors.As(err, &fe) {
			return sdk.Pending("could not tell: fetch " + fe.Reason), nil
		}
		return sdk.Pending("could not tell: " + err.Error()), nil
	}
	wanted := p.Expect != nil && p.Expect.Status == resp.Status
	if (resp.Status == 429 || resp.Status >= 500) && !wanted {
		// Checked after the wanted status, so a watch waiting for a 503
		// can settle; otherwise an overloaded server says nothing.
		return sdk.Pending(fmt.Sprintf("could not tell: server answered %d", resp.Status)), nil
	}
	at := in.Now.UTC().Format(time.RFC3339)
	if p.Change {
		return observeChange(p, in, resp, at)
	}
	if unmet, broken := p.Expect.unmet(resp); len(unmet) > 0 {
		if broken {
			// The bytes failed extraction: the host forgets their
			// validators, so the next GET is unconditional and a 304
			// cannot keep re-serving them. Advisory: a host that could
			// not take the report changes nothing here.
			_, _ = in.ExtractionFailed(req, resp)
		}
		return sdk.Pending(strings.Join(unmet, "; ")), nil
	}
	return sdk.Settled(sdk.Outcome{
		Result:  "ok",
		Summary: fmt.Sprintf("GET %s answered %d as expected", p.URL, resp.Status),
		Detail:  okDetail{URL: p.URL, Status: resp.Status, At: at},
	}), nil
}

// observeChange compares the body's fingerprint with the first one seen.
// The first observation records it as the watch's baseline, silently.
func observeChange(p Params, in sdk.Input, resp sdk.FetchResponse, at string) (sdk.Result, error) {
	fp := resp.Fingerprint
	if fp == "" {
		// The host fingerprints every response; a test fetcher may not.
		sum := sha256.Sum256(resp.Body)
		fp = hex.EncodeToString(sum[:])
	}
	var base baseline
	ok, err := in.DecodeBaseline(&base)
	if err != nil || !ok || base.Fingerprint == "" {
		// No baseline yet, or one this version cannot read: this answer
		// is the one later answers are compared with.
		return sdk.Baseline(baseline{Fingerprint: fp}), nil
	}
	if base.Fingerprint == fp {
		return sdk.Pending("unchanged since the first check"), nil
	}
	return sdk.Settled(sdk.Outcome{
		Result:  "changed",
		Summary: fmt.Sprintf("GET %s changed (answered %d)", p.URL, resp.Status),
		Detail:  changedDetail{URL: p.URL, Status: resp.Status, Before: base.Fingerprint, After: fp, At: at},
	}), nil
}

// unmet lists, as pending notes, the expectations resp does not meet; nil
// means every one holds. A nil Expect wants any 2xx. broken says the body
// failed extraction: json_path found no JSON, or nothing at the path.
func (e *Expect) unmet(resp sdk.FetchResponse) (out []string, broken bool) {
	var x Expect
	if e != nil {
		x = *e
	}
	switch {
	case x.Status == 0 && (resp.Status < 200 || resp.Status > 299):
		out = append(out, fmt.Sprintf("answered %d, waiting for a 2xx", resp.Status))
	case x.Status != 0 && resp.Status != x.Status:
		out = append(out, fmt.Sprintf("answered %d, waiting for %d", resp.Status, x.Status))
	}
	if x.BodyContains != "" && !bytes.Contains(resp.Body, []byte(x.BodyContains)) {
		out = append(out, "body does not contain "+note.Clip(x.BodyContains))
	}
	if jp := x.JSONPath; jp != nil {
		if msg, failed := jp.unmet(resp.Body); msg != "" {
			out = append(out, msg)
			broken = failed
		}
	}
	return out, broken
}

// unmet says why body does not hold the wanted value at the path, or ""
// when it does; extraction says the body failed extraction (no JSON, or
// nothing at the path), as opposed to holding another value there.
func (jp *JSONPath) unmet(body []byte) (msg string, extraction bool) {
	doc, err := decodeJSON(body)
	if err != nil {
		return "body is not JSON", true
	}
	segs, err := splitPath(jp.Path)
	if err != nil {
		return err.Error(), false // admit refused this; kept for a hand-made call
	}
	got, ok := lookup(doc, segs)
	if !ok {
		return jp.Path + " is absent", true
	}
	want, err := decodeJSON(jp.Equals)
	if err != nil {
		return "equals is not JSON", false
	}
	if !equal(got, want) {
		g, _ := json.Marshal(got)
		return fmt.Sprintf("%s is %s, waiting for %s", jp.Path, note.Clip(string(g)), note.Clip(string(jp.Equals))), false
	}
	return "", false
}
