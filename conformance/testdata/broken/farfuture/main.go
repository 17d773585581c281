// Command farfuture is broken one way: it settles once the guest's wall
// clock (time.Now) has passed params.at, instead of the input's now, and
// its example's instant lies far in the future, after every clock a
// suite that moved the guest's clock only a little would try, so only a
// guest clock past the instant tells the answers apart. Target:
// observe.no-wall-clock.
package main

import (
	"time"

	"github.com/vigilhq/vigil/conformance/testdata/base"
	"github.com/vigilhq/vigil/sdk"
	"github.com/vigilhq/vigil/sdk/abi"
)

const kind = "broken.farfuture"

// farFuture is the earliest instant a watch of the kind may name.
var farFuture = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)

// Params name a resource and an instant.
type Params struct {
	URL string `json:"url"`
	// At is when the watch settles.
	At time.Time `json:"at"`
}

const schema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "url": {"type": "string", "format": "uri", "maxLength": 512},
    "at": {"type": "string", "format": "date-time"}
  },
  "required": ["url", "at"],
  "additionalProperties": false
}`

func init() {
	sdk.Register(sdk.Plugin[Params]{
		Kind:         kind,
		Version:      "1.0.0",
		Summary:      "a test plugin: settles once a URL answers 200 after an instant",
		DefaultEvery: 30 * time.Second,
		Schema:       schema,
		Capabilities: []string{abi.CapabilityFetch},
		Example:      Params{URL: "https://forge.example.com/api/status", At: time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)},
		Admit: func(p Params, g sdk.Grants) error {
			// Only instants far in the future, so no generated params
			// closer to now gives the bug away: only a guest clock past
			// the instant does.
			if p.At.Before(farFuture) {
				return sdk.InvalidParams("at", "want an instant from %s", farFuture.Format(time.RFC3339))
			}
			return base.Admit(kind, base.Params{URL: p.URL}, g)
		},
		Destinations: func(p Params) []sdk.Destination { return []sdk.Destination{{Target: p.URL, Field: "url"}} },
		Observe: func(p Params, in sdk.Input) (sdk.Result, error) {
			bp := base.Params{URL: p.URL}
			resp, note := base.Fetch(bp, in)
			if note != "" {
				return sdk.Pending(note), nil
			}
			if time.Now().Before(p.At) { // the bug: in.Now is the time
				return sdk.Pending("not yet"), nil
			}
			return sdk.Settled(base.Ok(bp, in, base.Fingerprint(resp))), nil
		},
	})
}

func main() {}
