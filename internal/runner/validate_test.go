package runner

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/sdk/abi"
)

func TestValidate(t *testing.T) {
	grant := Grant{Programs: []string{"/bin/sh", "/usr/bin/env", "/opt/a/tool", "/opt/b/tool"}, MaxTimeout: 30 * time.Second}
	cases := []struct {
		name    string
		grant   *Grant
		req     abi.ExecRequest
		reason  string // "" when accepted
		program string
		timeout time.Duration
	}{
		{name: "absolute", req: abi.ExecRequest{Argv: []string{"/bin/sh", "-c", "x"}}, program: "/bin/sh", timeout: 30 * time.Second},
		{name: "bare name", req: abi.ExecRequest{Argv: []string{"env"}, TimeoutSeconds: 1.5}, program: "/usr/bin/env", timeout: 1500 * time.Millisecond},
		{name: "the maximum", req: abi.ExecRequest{Argv: []string{"sh"}, TimeoutSeconds: 30}, program: "/bin/sh", timeout: 30 * time.Second},
		{name: "a millisecond", req: abi.ExecRequest{Argv: []string{"sh"}, TimeoutSeconds: 0.001}, program: "/bin/sh", timeout: time.Millisecond},
		{name: "stdin at the cap", req: abi.ExecRequest{Argv: []string{"sh"}, Stdin: strings.Repeat("x", 16)}, program: "/bin/sh", timeout: 30 * time.Second},
		{name: "empty arguments are arguments", req: abi.ExecRequest{Argv: []string{"sh", "", ""}}, program: "/bin/sh", timeout: 30 * time.Second},

		{name: "empty argv", req: abi.ExecRequest{}, reason: abi.ExecInvalidRequest},
		{name: "empty program", req: abi.ExecRequest{Argv: []string{""}}, reason: abi.ExecInvalidRequest},
		{name: "NUL in the program", req: abi.ExecRequest{Argv: []string{"/bin/sh\x00x"}}, reason: abi.ExecInvalidRequest},
		{name: "NUL in an argument", req: abi.ExecRequest{Argv: []string{"sh", "-c", "a\x00b"}}, reason: abi.ExecInvalidRequest},
		{name: "negative timeout", req: abi.ExecRequest{Argv: []string{"sh"}, TimeoutSeconds: -1}, reason: abi.ExecInvalidRequest},
		{name: "NaN timeout", req: abi.ExecRequest{Argv: []string{"sh"}, TimeoutSeconds: math.NaN()}, reason: abi.ExecInvalidRequest},
		{name: "infinite timeout", req: abi.ExecRequest{Argv: []string{"sh"}, TimeoutSeconds: math.Inf(1)}, reason: abi.ExecInvalidRequest},
		{name: "minus infinite timeout", req: abi.ExecRequest{Argv: []string{"sh"}, TimeoutSeconds: math.Inf(-1)}, reason: abi.ExecInvalidRequest},
		{name: "over the maximum", req: abi.ExecRequest{Argv: []string{"sh"}, TimeoutSeconds: 30.001}, reason: abi.ExecInvalidRequest},
		{name: "huge timeout", req: abi.ExecRequest{Argv: []string{"sh"}, TimeoutSeconds: 1e300}, reason: abi.ExecInvalidRequest},
		{name: "under a millisecond", req: abi.ExecRequest{Argv: []string{"sh"}, TimeoutSeconds: 1e-9}, reason: abi.ExecInvalidRequest},
		{name: "stdin over the cap", req: abi.ExecRequest{Argv: []string{"sh"}, Stdin: strings.Repeat("x", 17)}, reason: abi.ExecInvalidRequest},

		{name: "not granted", req: abi.ExecRequest{Argv: []string{"/bin/bash"}}, reason: abi.ExecNotGranted},
		{name: "not granted by name", req: abi.ExecRequest{Argv: []string{"bash"}}, reason: abi.ExecNotGranted},
		{name: "relative", req: abi.ExecRequest{Argv: []string{"bin/sh"}}, reason: abi.ExecNotGranted},
		{name: "dot slash", req: abi.ExecRequest{Argv: []string{"./sh"}}, reason: abi.ExecNotGranted},
		{name: "not clean", req: abi.ExecRequest{Argv: []string{"/bin//sh"}}, reason: abi.ExecNotGranted},
		{name: "granted entry not clean", grant: &Grant{Programs: []string{"/opt/x/../sh", "/opt/y/"}, MaxTimeout: time.Second}, req: abi.ExecRequest{Argv: []string{"sh"}}, reason: abi.ExecNotGranted},
		{name: "ambiguous name", req: abi.ExecRequest{Argv: []string{"tool"}}, reason: abi.ExecNotGranted},
		{name: "dot", req: abi.ExecRequest{Argv: []string{"."}}, reason: abi.ExecNotGranted},
		{name: "no max timeout", grant: &Grant{Programs: []string{"/bin/sh"}}, req: abi.ExecRequest{Argv: []string{"sh"}}, reason: abi.ExecNotGranted},
		{name: "no programs", grant: &Grant{MaxTimeout: time.Second}, req: abi.ExecRequest{Argv: []string{"/bin/sh"}}, reason: abi.ExecNotGranted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := grant
			if tc.grant != nil {
				g = *tc.grant
			}
			program, timeout, fail := validate(g, tc.req, 16)
			if tc.reason == "" {
				if fail != nil {
					t.Fatalf("refused: %+v", fail)
				}
				if program != tc.program || timeout != tc.timeout {
					t.Errorf("got %q %s, want %q %s", program, timeout, tc.program, tc.timeout)
				}
				return
			}
			if fail == nil || fail.Reason != tc.reason {
				t.Fatalf("got %q %s %+v, want %s", program, timeout, fail, tc.reason)
			}
			if fail.Message == "" {
				t.Error("empty message")
			}
		})
	}
}

// FuzzValidate: validate never panics; what it accepts runs a granted
// absolute path that argv[0] names exactly or by its unique base name,
// with NUL-free arguments, a timeout in [MinTimeout, MaxTimeout] and stdin
// within its cap; what it refuses is invalid_request or not_granted.
func FuzzValidate(f *testing.F) {
	f.Add("/bin/sh", "-c", "echo hi", float64(0), "", "/bin/sh", "/usr/bin/env", int64(30e9))
	f.Add("sh", "a; rm -rf /", "$(x)", float64(1.5), "in", "/bin/sh", "/opt/sh", int64(30e9))
	f.Add("env", "", "", float64(-1), "", "/usr/bin/env", "env", int64(1e9))
	f.Add("/bin/../bin/sh", "x\x00y", "", math.NaN(), "", "/bin/sh", "", int64(0))
	f.Add("tool", "", "", math.Inf(1), "", "/a/tool", "/b/tool", int64(-5))
	f.Add("./sh", "", "", float64(1e-9), "xxxxxxxxxxxxxxxxxxxxxx", "/bin/sh", "sh", int64(1e9))
	f.Add("/", "", "", float64(30.0000001), "", "/", "/x/", int64(30e9))
	f.Fuzz(func(t *testing.T, argv0, a1, a2 string, secs float64, stdin, p1, p2 string, maxNs int64) {
		g := Grant{Programs: []string{p1, p2}, MaxTimeout: time.Duration(maxNs)}
		req := abi.ExecRequest{Argv: []string{argv0, a1, a2}, TimeoutSeconds: secs, Stdin: stdin}
		const stdinCap = 16
		program, timeout, fail := validate(g, req, stdinCap)
		if fail != nil {
			if fail.Reason != abi.ExecInvalidRequest && fail.Reason != abi.ExecNotGranted {
				t.Fatalf("refusal reason %q", fail.Reason)
			}
			if fail.Message == "" {
				t.Fatal("empty message")
			}
			return
		}
		if program != p1 && program != p2 {
			t.Fatalf("ran %q, granted %q and %q", program, p1, p2)
		}
		if !filepath.IsAbs(program) || filepath.Clean(program) != program {
			t.Fatalf("ran %q, not a clean absolute path", program)
		}
		switch {
		case argv0 == program:
		case !strings.Contains(argv0, "/") && filepath.Base(program) == argv0:
			other := p1
			if program == p1 {
				other = p2
			}
			if other != program && filepath.IsAbs(other) && filepath.Clean(other) == other && filepath.Base(other) == argv0 {
				t.Fatalf("bare %q accepted though %q and %q both have it as base name", argv0, p1, p2)
			}
		default:
			t.Fatalf("argv[0] %q ran %q", argv0, program)
		}
		for _, a := range req.Argv {
			if strings.Contains(a, "\x00") {
				t.Fatalf("NUL accepted in %q", a)
			}
		}
		if timeout < MinTimeout || timeout > g.MaxTimeout {
			t.Fatalf("timeout %s outside [%s, %s] for %g", timeout, MinTimeout, g.MaxTimeout, secs)
		}
		if len(stdin) > stdinCap {
			t.Fatalf("stdin of %d accepted", len(stdin))
		}
	})
}
