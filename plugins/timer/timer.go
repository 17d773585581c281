package main

import (
	"time"

	"github.com/vigilhq/vigil/sdk"
)

// Params waits until At.
type Params struct {
	At time.Time `json:"at"`
}

// UnmarshalParams decodes params without encoding/json on observe's hot
// path; it agrees with the json tags above (TestUnmarshalParamsAgrees).
func (p *Params) UnmarshalParams(data []byte) error {
	return sdk.DecodeFields(data, func(key string, v sdk.Value) error {
		if key != "at" {
			return sdk.ErrUnknownField
		}
		t, err := v.Time()
		p.At = t
		return err
	})
}

const schema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "at": {"type": "string", "format": "date-time", "description": "the instant to fire at, RFC 3339"}
  },
  "required": ["at"],
  "additionalProperties": false
}`

// Plugin is the timer kind.
var Plugin = sdk.Plugin[Params]{
	Kind:         "timer",
	Version:      "1.0.0",
	Summary:      "fires once the host's clock reaches an instant",
	DefaultEvery: time.Minute,
	Schema:       schema,
	Example:      Params{At: time.Date(2030, 1, 1, 14, 0, 0, 0, time.UTC)},
	Admit:        admit,
	Observe:      observe,
	// A timer's deadline is its instant plus a minute: capping it at the
	// host's open-ended default would make every long timer expire
	// instead of fire.
	Deadline: func(p Params) time.Time { return p.At.Add(time.Minute) },
	// The first probe worth making is at the instant: the host arms the
	// watch there instead of probing it at registration to hear "not
	// yet". No lead: a probe whose now is at the instant fires, as the
	// next_check observe answers does.
	FirstCheck: firstCheck,
}

// firstCheck is the instant, or none for one before the Unix epoch (long
// past, so probed at once, where the host takes no first check).
func firstCheck(p Params) time.Time {
	if p.At.Unix() < 0 {
		return time.Time{}
	}
	return p.At
}

// lastAt is the last instant a timer may name: its deadline, a minute
// on, is the last that RFC 3339 (and so the contract's JSON) can write.
var lastAt = time.Date(9999, 12, 31, 23, 58, 59, 999999999, time.UTC)

func admit(p Params, _ sdk.Grants) error {
	if p.At.IsZero() {
		return sdk.InvalidParams("at", "required")
	}
	if p.At.After(lastAt) {
		// A year RFC 3339 cannot write: refused here, so it is the
		// caller's 422 and never an answer the host cannot read.
		return sdk.InvalidParams("at", "%s is beyond the last instant a timer can name, %s (the deadline, a minute on, must fit the years 0000-9999 of RFC 3339)",
			p.At.Format(time.RFC3339Nano), lastAt.Format(time.RFC3339))
	}
	return nil
}

// observe answers from in.Now alone, so a timer an hour away is probed once:
// the pending answer carries At as the next check (and so the note need not
// repeat it).
func observe(p Params, in sdk.Input) (sdk.Result, error) {
	if in.Now.Before(p.At) {
		return sdk.Pending("not yet").CheckAt(p.At), nil
	}
	return sdk.Settled(sdk.Outcome{
		Result:  "fired",
		Summary: "reached " + p.At.UTC().Format(time.RFC3339),
		Detail:  map[string]string{"at": p.At.UTC().Format(time.RFC3339)},
	}), nil
}
