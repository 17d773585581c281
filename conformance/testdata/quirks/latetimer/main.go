// Command latetimer is the timer one author wrote first: it fires once
// the input's now reaches params.at, gives admit the instant itself as the
// natural deadline, and answers pending with no next_check, with a
// cadence of one minute. Every answer is on the contract, so it passes
// every required check; but a watch probed a minute apart finds its next
// probe past the deadline, is probed once more at the deadline, and
// expires there instead of firing. Target: the advisory
// observe.deadline-reachable, which warns.
package main

import (
	"time"

	"github.com/vigilhq/vigil/sdk"
)

// Params name the instant.
type Params struct {
	At time.Time `json:"at"`
}

const schema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {"at": {"type": "string", "format": "date-time"}},
  "required": ["at"],
  "additionalProperties": false
}`

func init() {
	sdk.Register(sdk.Plugin[Params]{
		Kind:         "quirk.latetimer",
		Version:      "1.0.0",
		Summary:      "a test plugin: a timer whose deadline is its instant and whose pending answer has no next_check",
		DefaultEvery: time.Minute,
		Schema:       schema,
		Example:      Params{At: time.Date(2030, 1, 1, 14, 0, 0, 0, time.UTC)},
		Deadline:     func(p Params) time.Time { return p.At }, // no grace after the instant
		Observe: func(p Params, in sdk.Input) (sdk.Result, error) {
			if in.Now.Before(p.At) {
				return sdk.Pending("not yet"), nil // the trap: no CheckAt(p.At)
			}
			return sdk.Settled(sdk.Outcome{Result: "fired", Summary: "it is " + p.At.Format(time.RFC3339)}), nil
		},
	})
}

func main() {}
