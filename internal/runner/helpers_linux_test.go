package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigilhq/vigil/sdk/abi"
)

// Test grace and margins. The margin is generous: a bound that holds
// passes by seconds, one that does not fails by tens of seconds (the
// commands sleep 30 s).
const (
	testGrace   = 300 * time.Millisecond
	testTimeout = 300 * time.Millisecond
	testMargin  = 3 * time.Second
)

// programs resolves paths or skips the test when one is missing here.
func programs(t *testing.T, list ...string) []string {
	t.Helper()
	ps, err := ResolvePrograms(list)
	if err != nil {
		t.Skipf("needs %v: %v", list, err)
	}
	return ps
}

func newTestRunner(cfg Config) *Runner {
	if cfg.Grace == 0 {
		cfg.Grace = testGrace
	}
	return New(cfg)
}

// run runs req and reports how long Run took.
func run(t *testing.T, r *Runner, g Grant, dir string, req abi.ExecRequest) (abi.ExecResponse, time.Duration) {
	t.Helper()
	start := time.Now()
	resp := r.Run(context.Background(), g, dir, req)
	return resp, time.Since(start)
}

// pids reads the decimal pids printed one per line at the start of out,
// and kills each at test cleanup, so a failing test leaves nothing behind.
func pids(t *testing.T, out string, n int) []int {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < n {
		t.Fatalf("want %d pids in stdout, got %q", n, out)
	}
	var ps []int
	for _, l := range lines[:n] {
		pid, err := strconv.Atoi(strings.TrimSpace(l))
		if err != nil || pid <= 1 {
			t.Fatalf("stdout line %q is not a pid (stdout %q)", l, out)
		}
		ps = append(ps, pid)
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	}
	return ps
}

// procState is the state letter of pid from /proc/<pid>/stat and its
// process group, or ok false when there is no such process.
func procState(pid int) (state byte, pgrp int, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // comm may contain spaces
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 {
		return 0, 0, false
	}
	pgrp, _ = strconv.Atoi(f[2])
	return f[0][0], pgrp, true
}

// gone: no such process (kill(pid, 0) answers ESRCH), or only its zombie
// is left for whoever reaps orphans here.
func gone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	state, _, ok := procState(pid)
	return !ok || state == 'Z' || state == 'X'
}

// groupMembers are the live (not zombie) processes in process group pgid.
func groupMembers(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if state, pgrp, ok := procState(pid); ok && pgrp == pgid && state != 'Z' && state != 'X' {
			out = append(out, pid)
		}
	}
	return out
}

// within polls cond until it holds or the deadline passes. It is for a
// process the runner has already SIGKILLed: the kernel finishes its exit
// asynchronously, and an orphan is reparented before it is reaped.
func within(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func assertGone(t *testing.T, pid int, what string) {
	t.Helper()
	if !within(2*time.Second, func() bool { return gone(pid) }) {
		t.Errorf("%s (pid %d) survived", what, pid)
	}
}

func assertGroupGone(t *testing.T, pgid int) {
	t.Helper()
	var left []int
	if !within(2*time.Second, func() bool { left = groupMembers(pgid); return len(left) == 0 }) {
		t.Errorf("process group %d still has %v", pgid, left)
	}
}
