package main

import (
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/vigilhq/vigil/sdk"
	"github.com/vigilhq/vigil/sdk/abi"
)

// Kind is the predicate's name.
const Kind = "command"

// Params say what to run and what success looks like.
type Params struct {
	// Argv is the program and its arguments, passed as a vector.
	Argv []string `json:"argv"`
	// ExpectExit is the exit status that counts as success (default 0).
	ExpectExit *int `json:"expect_exit,omitempty"`
	// OutputContains, when set, must also appear in stdout or stderr.
	OutputContains string `json:"output_contains,omitempty"`
	// Timeout bounds one run ("30s"; default the grant's maximum).
	Timeout string `json:"timeout,omitempty"`
}

const schema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "argv": {"type": "array", "items": {"type": "string", "maxLength": 4096}, "minItems": 1, "maxItems": 256,
             "description": "the program (a granted absolute path, or its base name) and its arguments; no shell"},
    "expect_exit": {"type": "integer", "minimum": 0, "maximum": 255, "description": "the exit status that counts as success (default 0)"},
    "output_contains": {"type": "string", "maxLength": 4096, "description": "a string that must also appear in stdout or stderr"},
    "timeout": {"type": "string", "maxLength": 32, "description": "how long one run may take, such as 30s (default: the grant's maximum)"}
  },
  "required": ["argv"],
  "additionalProperties": false
}`

// tailBytes bounds each stream's tail in an outcome.
const tailBytes = 2048

// Plugin is the command kind.
var Plugin = sdk.Plugin[Params]{
	Kind:         Kind,
	Version:      "1.0.0",
	Summary:      "settles once a granted command exits as expected, run in the recipient's workspace",
	DefaultEvery: 30 * time.Second,
	Schema:       schema,
	Capabilities: []string{abi.CapabilityExec},
	Example:      Params{Argv: []string{"true"}},
	Admit:        admit,
	Observe:      observe,
}

// admit checks the grant only: the program is on the list, the timeout
// within the maximum. It runs nothing.
func admit(p Params, g sdk.Grants) error {
	if len(p.Argv) == 0 || p.Argv[0] == "" {
		return sdk.InvalidParams("argv", "name the program to run")
	}
	for i, a := range p.Argv {
		if strings.ContainsRune(a, 0) {
			return sdk.InvalidParams(fmt.Sprintf("argv[%d]", i), "holds a NUL byte")
		}
	}
	if len(g.Programs) == 0 {
		return sdk.Unobservable("kinds.command.exec", "this host grants the command kind no programs")
	}
	if !granted(g.Programs, p.Argv[0]) {
		return sdk.Unobservable("kinds.command.exec.programs", "program %q is not granted (granted: %s)", p.Argv[0], strings.Join(g.Programs, ", "))
	}
	max, err := time.ParseDuration(g.ExecMaxTimeout)
	if err != nil || max <= 0 {
		return sdk.Unobservable("kinds.command.exec.max_timeout", "the exec grant names no usable maximum timeout")
	}
	if p.Timeout != "" {
		d, err := time.ParseDuration(p.Timeout)
		switch {
		case err != nil || d <= 0:
			return sdk.InvalidParams("timeout", "%q: want a positive duration such as 30s", p.Timeout)
		case d > max:
			return sdk.InvalidParams("timeout", "%s is over the grant's maximum of %s", d, max)
		}
	}
	if p.ExpectExit != nil && (*p.ExpectExit < 0 || *p.ExpectExit > 255) {
		return sdk.InvalidParams("expect_exit", "want 0 to 255")
	}
	return nil
}

// granted reports whether program is one of the granted ones: the same
// absolute path, or a bare name that is the base name of exactly one.
func granted(programs []string, program string) bool {
	if strings.Contains(program, "/") {
		for _, g := range programs {
			if g == program {
				return true
			}
		}
		return false
	}
	n := 0
	for _, g := range programs {
		if path.Base(g) == program {
			n++
		}
	}
	return n == 1
}

// observe runs the command once. Anything short of the expected exit (and
// output) is pending: not yet, or could not tell.
func observe(p Params, in sdk.Input) (sdk.Result, error) {
	req := sdk.ExecRequest{Argv: p.Argv}
	if p.Timeout != "" {
		d, err := time.ParseDuration(p.Timeout)
		if err != nil {
			return sdk.Pending("timeout " + p.Timeout + " does not parse"), nil
		}
		req.TimeoutSeconds = d.Seconds()
	}
	r, err := in.Exec(req)
	if err != nil {
		return sdk.Pending("could not run: " + err.Error()), nil
	}
	if r.TimedOut {
		return sdk.Pending("timed out: could not tell"), nil
	}
	want := 0
	if p.ExpectExit != nil {
		want = *p.ExpectExit
	}
	if r.ExitCode != want {
		return sdk.Pending(fmt.Sprintf("exit %d, waiting for %d%s", r.ExitCode, want, lastLine(r.Stderr, r.Stdout))), nil
	}
	if p.OutputContains != "" && !strings.Contains(r.Stdout, p.OutputContains) && !strings.Contains(r.Stderr, p.OutputContains) {
		return sdk.Pending(fmt.Sprintf("exit %d, but the output does not contain %q yet", r.ExitCode, p.OutputContains)), nil
	}
	return sdk.Settled(sdk.Outcome{
		Result:  "succeeded",
		Summary: fmt.Sprintf("%s exited %d", path.Base(p.Argv[0]), r.ExitCode),
		Detail: map[string]any{
			"exit_code": r.ExitCode, "stdout_tail": tail(r.Stdout), "stderr_tail": tail(r.Stderr), "truncated": r.Truncated,
		},
	}), nil
}

// tail is the last tailBytes of s, cut on a line or rune boundary.
func tail(s string) string {
	if len(s) <= tailBytes {
		return s
	}
	s = s[len(s)-tailBytes:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
		return s[i+1:]
	}
	for i := 0; i < len(s) && i < 4; i++ {
		if s[i]&0xC0 != 0x80 {
			return s[i:]
		}
	}
	return s
}

// lastLine is ": " and the last non-empty line of the first stream that
// has one, for a pending note; "" when both are empty.
func lastLine(streams ...string) string {
	for _, s := range streams {
		lines := strings.Split(strings.TrimSpace(s), "\n")
		if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
			if len(l) > 200 {
				l = l[:200]
			}
			return ": " + l
		}
	}
	return ""
}
