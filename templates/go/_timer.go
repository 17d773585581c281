package main

import (
	"time"

	"github.com/vigilhq/vigil/sdk"
)

// Kind is the kind this plugin serves; the host routes calls by it.
const Kind = "template.timer"

// Params waits until At.
type Params struct {
	At time.Time `json:"at"`
}

// Schema is the params' JSON Schema: the host validates every watch's
// params against it, and names the failing field, before admit.
const Schema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "at": {"type": "string", "format": "date-time", "description": "the instant to fire at, RFC 3339"}
  },
  "required": ["at"],
  "additionalProperties": false
}`

// Plugin is the kind.
var Plugin = sdk.Plugin[Params]{
	Kind:         Kind,
	Version:      "1.0.0",
	Summary:      "fires once the host's clock reaches an instant",
	DefaultEvery: time.Minute,
	Schema:       Schema,
	Example:      Params{At: time.Date(2030, 1, 1, 14, 0, 0, 0, time.UTC)},
	Admit:        admit,
	Observe:      observe,
	// The natural deadline is the instant plus a minute: without it the
	// host gives the watch its open-ended default, and a long timer would
	// expire instead of fire.
	Deadline: func(p Params) time.Time { return p.At.Add(time.Minute) },
	// The first check is the instant: the host arms the watch there
	// instead of probing it at registration. None before the Unix epoch,
	// which the host refuses (such a timer is long past, probed at once).
	FirstCheck: func(p Params) time.Time {
		if p.At.Unix() < 0 {
			return time.Time{}
		}
		return p.At
	},
}

// lastAt is the last instant a timer may name: its deadline, a minute on,
// is the last that RFC 3339 (and so the contract's JSON) can write.
var lastAt = time.Date(9999, 12, 31, 23, 58, 59, 999999999, time.UTC)

// admit checks configuration only (the params), never the network.
func admit(p Params, _ sdk.Grants) error {
	if p.At.IsZero() {
		return sdk.InvalidParams("at", "required")
	}
	if p.At.After(lastAt) {
		return sdk.InvalidParams("at", "beyond %s, the last instant a timer can name (its deadline, a minute on, must fit the years 0000-9999 of RFC 3339)",
			lastAt.Format(time.RFC3339))
	}
	return nil
}

// observe answers from in.Now alone. Pending carries At as the next check,
// so a timer an hour away is probed once more, at its instant.
func observe(p Params, in sdk.Input) (sdk.Result, error) {
	if in.Now.Before(p.At) {
		return sdk.Pending("not yet").CheckAt(p.At), nil
	}
	at := p.At.UTC().Format(time.RFC3339)
	return sdk.Settled(sdk.Outcome{
		Result:  "fired",
		Summary: "reached " + at,
		Detail:  map[string]string{"at": at},
	}), nil
}
