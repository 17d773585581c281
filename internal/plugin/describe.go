package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/vigilhq/vigil/sdk/abi"
)

// Bounds on a plugin's default re-check interval.
const (
	minEvery = time.Second
	maxEvery = 24 * time.Hour
)

// describeRule is one failed describe check: the rule id and why.
type describeRule struct {
	rule string
	err  error
}

// validateDescribe checks a describe output against the contract. It
// returns the parsed describe, the compiled schema, the default interval,
// and the first rule broken.
func validateDescribe(out []byte) (abi.Describe, *paramsSchema, time.Duration, *describeRule) {
	var d abi.Describe
	if err := json.Unmarshal(out, &d); err != nil {
		return d, nil, 0, &describeRule{"describe.json", err}
	}
	if d.ABI != abi.Version {
		return d, nil, 0, &describeRule{"describe.abi", fmt.Errorf("abi %q: this host speaks %q", d.ABI, abi.Version)}
	}
	if err := abi.CheckKind(d.Kind); err != nil {
		return d, nil, 0, &describeRule{"describe.kind", err}
	}
	if !abi.ValidSemver(d.Version) {
		return d, nil, 0, &describeRule{"describe.version", fmt.Errorf("version %q is not a semantic version", d.Version)}
	}
	if len(d.ParamsSchema) == 0 {
		return d, nil, 0, &describeRule{"describe.params_schema", errors.New("params_schema is missing")}
	}
	schema, err := compileSchema(d.ParamsSchema)
	if err != nil {
		return d, nil, 0, &describeRule{"describe.params_schema", err}
	}
	known := abi.KnownCapabilities()
	for i, c := range d.Capabilities {
		if !slices.Contains(known, c) {
			return d, nil, 0, &describeRule{"describe.capabilities", fmt.Errorf("unknown capability %q", c)}
		}
		if slices.Contains(d.Capabilities[:i], c) {
			return d, nil, 0, &describeRule{"describe.capabilities", fmt.Errorf("capability %q listed twice", c)}
		}
	}
	var every time.Duration
	if d.DefaultEvery != "" {
		every, err = time.ParseDuration(d.DefaultEvery)
		if err != nil {
			return d, nil, 0, &describeRule{"describe.default_every", err}
		}
		if every < minEvery || every > maxEvery {
			return d, nil, 0, &describeRule{"describe.default_every", fmt.Errorf("%s: want between %s and %s", every, minEvery, maxEvery)}
		}
	}
	return d, schema, every, nil
}
