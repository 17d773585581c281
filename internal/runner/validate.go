package runner

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/vigilhq/vigil/sdk/abi"
)

// validate screens req against g from the request alone, touching neither
// the filesystem nor any process: the program it names must be granted,
// every argument free of NUL, the timeout within bounds and the input
// within stdinCap. It answers the granted path to run and the timeout to
// run it with, or the refusal.
func validate(g Grant, req abi.ExecRequest, stdinCap int) (program string, timeout time.Duration, fail *abi.FetchFailure) {
	invalid := func(format string, args ...any) (string, time.Duration, *abi.FetchFailure) {
		return "", 0, &abi.FetchFailure{Reason: abi.ExecInvalidRequest, Message: fmt.Sprintf(format, args...)}
	}
	if len(req.Argv) == 0 {
		return invalid("argv is empty: it names the program and its arguments")
	}
	if req.Argv[0] == "" {
		return invalid("argv[0], the program, is empty")
	}
	for i, a := range req.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return invalid("argv[%d] contains a NUL byte", i)
		}
	}
	program, fail = grantedProgram(g.Programs, req.Argv[0])
	if fail != nil {
		return "", 0, fail
	}
	if g.MaxTimeout <= 0 {
		return "", 0, &abi.FetchFailure{Reason: abi.ExecNotGranted, Message: "the exec grant names no maximum timeout (exec.max_timeout)"}
	}
	secs := req.TimeoutSeconds
	switch {
	case math.IsNaN(secs) || math.IsInf(secs, 0):
		return invalid("timeout_seconds is not a finite number")
	case secs < 0:
		return invalid("timeout_seconds %g is negative", secs)
	case secs == 0:
		timeout = g.MaxTimeout
	case secs > g.MaxTimeout.Seconds():
		return invalid("timeout_seconds %g is over the grant's maximum of %s (exec.max_timeout)", secs, g.MaxTimeout)
	default:
		timeout = min(time.Duration(secs*float64(time.Second)), g.MaxTimeout)
		if timeout < MinTimeout {
			return invalid("timeout_seconds %g is under %s", secs, MinTimeout)
		}
	}
	if len(req.Stdin) > stdinCap {
		return invalid("stdin is %d bytes, over the limit of %d", len(req.Stdin), stdinCap)
	}
	return program, timeout, nil
}

// grantedProgram is the granted path argv0 names: an absolute argv0 equal
// to a granted path, or a bare name equal to the base name of exactly one
// granted path. Anything else is not_granted: a path not on the list (no
// cleaning, no symlinks followed: "/bin/./sh" is not "/bin/sh"), a relative
// path, a bare name no granted program or more than one has. A granted
// entry that is not a clean absolute path (not ResolvePrograms output)
// never matches.
func grantedProgram(programs []string, argv0 string) (string, *abi.FetchFailure) {
	refuse := func(format string, args ...any) (string, *abi.FetchFailure) {
		return "", &abi.FetchFailure{Reason: abi.ExecNotGranted, Message: fmt.Sprintf(format, args...) + " (exec.programs)"}
	}
	if filepath.IsAbs(argv0) {
		for _, p := range programs {
			if p == argv0 && usable(p) {
				return p, nil
			}
		}
		return refuse("%s is not a granted program", quote(argv0))
	}
	if strings.ContainsRune(argv0, '/') {
		return refuse("%s is a relative path; a program is named by a granted absolute path or its bare name", quote(argv0))
	}
	match := ""
	for _, p := range programs {
		if !usable(p) || filepath.Base(p) != argv0 || p == match {
			continue
		}
		if match != "" {
			return refuse("%s names more than one granted program (%s and %s); use the absolute path", quote(argv0), match, p)
		}
		match = p
	}
	if match == "" {
		return refuse("%s is not a granted program", quote(argv0))
	}
	return match, nil
}

// usable: p is a clean absolute path, the form ResolvePrograms answers.
func usable(p string) bool { return filepath.IsAbs(p) && filepath.Clean(p) == p }
