package runner

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vigilhq/vigil/sdk/abi"
)

// Defaults for the zero Config.
const (
	DefaultGrace     = 2 * time.Second
	DefaultOutputCap = 64 << 10
	DefaultStdinCap  = 64 << 10
)

// unsupportedMessage is the unavailable answer where supported is false.
const unsupportedMessage = "this host runs no commands: vigil_exec needs Linux process groups"

// MinTimeout is the shortest timeout a request may ask for; a positive
// timeout_seconds under it is refused rather than rounded to nothing.
const MinTimeout = time.Millisecond

// Grant is one kind's exec grant, as the operator wrote it and resolved at
// load.
type Grant struct {
	// Programs are absolute paths (ResolvePrograms output). An entry that
	// is not absolute never matches.
	Programs []string
	// Env names the variables passed from the host's environment; nothing
	// else is inherited.
	Env []string
	// MaxTimeout bounds a command's timeout and is the timeout of a request
	// that names none. A grant without one runs nothing.
	MaxTimeout time.Duration
}

// Config configures a Runner. The zero value is usable.
type Config struct {
	// Grace is how long the process group has between SIGTERM and
	// SIGKILL, and how long the output readers are awaited once the
	// command has ended. Default DefaultGrace.
	Grace time.Duration
	// OutputCap is the bytes kept of each of stdout and stderr. Default
	// DefaultOutputCap.
	OutputCap int
	// StdinCap is the largest standard input a request may carry. Default
	// DefaultStdinCap.
	StdinCap int
	// Environ looks up a granted variable in the host's environment.
	// Default os.LookupEnv.
	Environ func(string) (string, bool)
	// Logger receives one line per command. Default: discarded.
	Logger *slog.Logger
}

// Runner runs commands for vigil_exec. It is immutable after New and safe
// for concurrent use.
type Runner struct {
	grace     time.Duration
	outputCap int
	stdinCap  int
	environ   func(string) (string, bool)
	log       *slog.Logger
}

// New returns a Runner for cfg, its zero fields set to their defaults.
func New(cfg Config) *Runner {
	r := &Runner{grace: cfg.Grace, outputCap: cfg.OutputCap, stdinCap: cfg.StdinCap, environ: cfg.Environ, log: cfg.Logger}
	if r.grace <= 0 {
		r.grace = DefaultGrace
	}
	if r.outputCap <= 0 {
		r.outputCap = DefaultOutputCap
	}
	if r.stdinCap <= 0 {
		r.stdinCap = DefaultStdinCap
	}
	if r.environ == nil {
		r.environ = os.LookupEnv
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	r.log = r.log.With("component", "runner")
	return r
}

// Run runs req in dir (an absolute path to an existing directory) under
// grant g, bounded by ctx and the request's timeout, and answers what
// vigil_exec returns to the plugin. A refusal (Failure set) means nothing
// ran; see the package documentation for the order of the checks and what
// each answer means.
func (r *Runner) Run(ctx context.Context, g Grant, dir string, req abi.ExecRequest) abi.ExecResponse {
	if !supported {
		return r.refuse(abi.ExecUnavailable, unsupportedMessage)
	}
	program, timeout, fail := validate(g, req, r.stdinCap)
	if fail != nil {
		return r.refuse(fail.Reason, fail.Message)
	}
	if fail := checkWorkspace(dir); fail != nil {
		return r.refuse(fail.Reason, fail.Message)
	}
	if err := ctx.Err(); err != nil {
		return r.refuse(abi.ExecUnavailable, "the call ended before the command started: "+err.Error())
	}
	return r.run(ctx, program, r.environment(g.Env), dir, req, timeout)
}

// environment is exactly the granted names that are set in the host's
// environment, as NAME=value, and never nil: a nil exec.Cmd.Env would
// inherit everything.
func (r *Runner) environment(names []string) []string {
	env := make([]string, 0, len(names))
	for i, name := range names {
		if name == "" || strings.ContainsAny(name, "=\x00") || indexOf(names[:i], name) >= 0 {
			continue
		}
		if v, ok := r.environ(name); ok && !strings.Contains(v, "\x00") {
			env = append(env, name+"="+v)
		}
	}
	return env
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// refuse is the answer for a command that did not run. Its ExitCode is -1,
// so a plugin that forgets to read Failure does not see a success.
func (r *Runner) refuse(reason, message string) abi.ExecResponse {
	r.log.Info("exec refused", "reason", reason, "message", message)
	return abi.ExecResponse{ExitCode: -1, Failure: &abi.FetchFailure{Reason: reason, Message: message}}
}

// checkWorkspace refuses a dir that is empty, relative, missing or not a
// directory, as no_workspace.
func checkWorkspace(dir string) *abi.FetchFailure {
	fail := func(format string, args ...any) *abi.FetchFailure {
		return &abi.FetchFailure{Reason: abi.ExecNoWorkspace, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case dir == "":
		return fail("the recipient declares no workspace directory")
	case strings.IndexByte(dir, 0) >= 0:
		return fail("workspace %s contains a NUL byte", quote(dir))
	case !filepath.IsAbs(dir):
		return fail("workspace %s is not an absolute path", quote(dir))
	}
	fi, err := os.Stat(dir)
	switch {
	case os.IsNotExist(err):
		return fail("workspace %s does not exist", quote(dir))
	case err != nil:
		return fail("workspace %s: %v", quote(dir), err)
	case !fi.IsDir():
		return fail("workspace %s is not a directory", quote(dir))
	}
	return nil
}

// quote is s quoted for a message, cut to 120 bytes.
func quote(s string) string {
	const max = 120
	if len(s) > max {
		return fmt.Sprintf("%q…", s[:max])
	}
	return fmt.Sprintf("%q", s)
}
