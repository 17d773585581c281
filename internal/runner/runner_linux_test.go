package runner

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/sdk/abi"
)

// A command that sleeps past its timeout is terminated with its whole
// process group: the shell, its foreground sleep and a background sleep
// it started.
func TestTimeoutKillsProcessGroup(t *testing.T) {
	g := Grant{Programs: programs(t, "/bin/sh"), MaxTimeout: time.Minute}
	r := newTestRunner(Config{})
	resp, took := run(t, r, g, t.TempDir(), abi.ExecRequest{
		Argv:           []string{"sh", "-c", "echo $$; /bin/sleep 30 & echo $!; /bin/sleep 30"},
		TimeoutSeconds: testTimeout.Seconds(),
	})
	if resp.Failure != nil {
		t.Fatalf("failure %+v", resp.Failure)
	}
	if !resp.TimedOut || resp.ExitCode != -1 {
		t.Errorf("timed_out %v exit %d, want true and -1", resp.TimedOut, resp.ExitCode)
	}
	if took < testTimeout || took > testTimeout+testGrace+testMargin {
		t.Errorf("Run took %s, want between %s and %s", took, testTimeout, testTimeout+testGrace+testMargin)
	}
	ps := pids(t, resp.Stdout, 2)
	sh, bg := ps[0], ps[1]
	assertGone(t, sh, "the shell")
	assertGone(t, bg, "the background sleep")
	assertGroupGone(t, sh)
}

// A command that exits at once but leaves a grandchild holding its stdout
// does not hang Run, and the grandchild does not outlive it.
func TestGrandchildHoldingStdout(t *testing.T) {
	g := Grant{Programs: programs(t, "/bin/sh"), MaxTimeout: time.Minute}
	r := newTestRunner(Config{})
	resp, took := run(t, r, g, t.TempDir(), abi.ExecRequest{
		Argv:           []string{"sh", "-c", "echo $$; /bin/sleep 30 & echo $!"},
		TimeoutSeconds: 10,
	})
	if resp.Failure != nil || resp.TimedOut || resp.ExitCode != 0 {
		t.Fatalf("exit %d timed_out %v failure %+v, want a clean exit", resp.ExitCode, resp.TimedOut, resp.Failure)
	}
	if took > testGrace+testMargin {
		t.Errorf("Run took %s, want under %s", took, testGrace+testMargin)
	}
	ps := pids(t, resp.Stdout, 2)
	assertGone(t, ps[1], "the grandchild holding stdout")
	assertGroupGone(t, ps[0])
}

// A group that ignores SIGTERM gets the grace, then SIGKILL: Run returns
// after timeout + grace and not before, and nothing survives.
func TestTermIgnoredKilledAfterGrace(t *testing.T) {
	g := Grant{Programs: programs(t, "/bin/sh"), MaxTimeout: time.Minute}
	r := newTestRunner(Config{})
	resp, took := run(t, r, g, t.TempDir(), abi.ExecRequest{
		// SIG_IGN for TERM is inherited by both sleeps through exec.
		Argv:           []string{"sh", "-c", "trap '' TERM; echo $$; /bin/sleep 30 & echo $!; /bin/sleep 30"},
		TimeoutSeconds: testTimeout.Seconds(),
	})
	if !resp.TimedOut || resp.ExitCode != -1 || resp.Failure != nil {
		t.Errorf("timed_out %v exit %d failure %+v, want timed out, -1, no failure", resp.TimedOut, resp.ExitCode, resp.Failure)
	}
	if took < testTimeout+testGrace || took > testTimeout+testGrace+testMargin {
		t.Errorf("Run took %s, want between %s and %s", took, testTimeout+testGrace, testTimeout+testGrace+testMargin)
	}
	ps := pids(t, resp.Stdout, 2)
	assertGone(t, ps[1], "the background sleep")
	assertGroupGone(t, ps[0])
}

// A grandchild that leaves the group (setsid) is beyond the group kill,
// and it holds stdout open: the readers' join is still bounded by the
// grace. Its survival is the documented limit; the test kills it.
func TestEscapedGrandchildJoinBounded(t *testing.T) {
	setsid, err := exec.LookPath("setsid")
	if err != nil {
		t.Skip("needs setsid")
	}
	g := Grant{Programs: programs(t, "/bin/sh"), MaxTimeout: time.Minute}
	r := newTestRunner(Config{})
	// The shell exits only once the grandchild has left the group (it
	// writes its pid after setsid), so the sweep cannot catch it first.
	script := setsid + ` /bin/sh -c 'echo $$ > escaped; exec /bin/sleep 30' &
		while [ ! -s escaped ]; do /bin/sleep 0.01; done; read p < escaped; echo $p`
	resp, took := run(t, r, g, t.TempDir(), abi.ExecRequest{Argv: []string{"sh", "-c", script}, TimeoutSeconds: 10})
	escaped := pids(t, resp.Stdout, 1)[0] // killed at cleanup
	if resp.Failure != nil || resp.TimedOut || resp.ExitCode != 0 {
		t.Errorf("exit %d timed_out %v failure %+v, want a clean exit", resp.ExitCode, resp.TimedOut, resp.Failure)
	}
	if took < testGrace || took > testGrace+testMargin {
		t.Errorf("Run took %s, want between %s and %s", took, testGrace, testGrace+testMargin)
	}
	if gone(escaped) {
		t.Errorf("the escaped grandchild %d is gone: the test did not exercise an escape", escaped)
	}
}

// The caller's context ending terminates the group like a timeout, but is
// answered unavailable, not timed_out: the command did not run out its
// own time.
func TestCallerCancelTerminates(t *testing.T) {
	g := Grant{Programs: programs(t, "/bin/sh"), MaxTimeout: time.Minute}
	r := newTestRunner(Config{})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	start := time.Now()
	resp := r.Run(ctx, g, t.TempDir(), abi.ExecRequest{Argv: []string{"sh", "-c", "echo $$; /bin/sleep 30 & echo $!; /bin/sleep 30"}})
	took := time.Since(start)
	if resp.TimedOut || resp.Failure == nil || resp.Failure.Reason != abi.ExecUnavailable || resp.ExitCode != -1 {
		t.Errorf("timed_out %v exit %d failure %+v, want unavailable, -1", resp.TimedOut, resp.ExitCode, resp.Failure)
	}
	if took > testTimeout+testGrace+testMargin {
		t.Errorf("Run took %s", took)
	}
	ps := pids(t, resp.Stdout, 2)
	assertGone(t, ps[1], "the background sleep")
	assertGroupGone(t, ps[0])

	// A context already done runs nothing.
	dir := t.TempDir()
	resp = r.Run(ctx, g, dir, abi.ExecRequest{Argv: []string{"sh", "-c", "echo > ran"}})
	if resp.Failure == nil || resp.Failure.Reason != abi.ExecUnavailable {
		t.Errorf("done context: %+v", resp)
	}
	assertNoFile(t, filepath.Join(dir, "ran"))
}

// The default timeout is the grant's maximum.
func TestTimeoutDefaultsToGrantMax(t *testing.T) {
	g := Grant{Programs: programs(t, "/bin/sleep"), MaxTimeout: testTimeout}
	r := newTestRunner(Config{})
	resp, took := run(t, r, g, t.TempDir(), abi.ExecRequest{Argv: []string{"sleep", "30"}})
	if !resp.TimedOut || took < testTimeout || took > testTimeout+testGrace+testMargin {
		t.Errorf("timed_out %v after %s, want true after about %s", resp.TimedOut, took, testTimeout)
	}
}

func assertNoFile(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("%s exists (%v): the command ran", path, err)
	}
}

// A program off the allowlist is refused and nothing runs, however it is
// named.
func TestNotGrantedNothingRuns(t *testing.T) {
	only := programs(t, "/bin/true")
	programs(t, "/bin/sh")
	both := programs(t, "/bin/true", "/usr/bin/true")
	cases := []struct {
		name  string
		grant []string
		argv0 string
	}{
		{"absolute path not granted", only, "/bin/sh"},
		{"bare name not granted", only, "sh"},
		{"relative path", only, "./sh"},
		{"relative path to a granted base name", only, "bin/true"},
		{"uncleaned path to a granted program", only, "/bin/./true"},
		{"granted path's directory", only, "/bin/"},
		{"bare name of two granted programs", both, "true"},
		{"no programs granted", nil, "/bin/true"},
		{"granted entry not absolute", []string{"sh"}, "sh"},
	}
	r := newTestRunner(Config{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			resp, _ := run(t, r, Grant{Programs: tc.grant, MaxTimeout: time.Minute}, dir, abi.ExecRequest{
				Argv: []string{tc.argv0, "-c", "echo > ran"},
			})
			if resp.Failure == nil || resp.Failure.Reason != abi.ExecNotGranted || resp.ExitCode != -1 {
				t.Fatalf("got %+v, want not_granted", resp)
			}
			if !strings.Contains(resp.Failure.Message, "exec.programs") {
				t.Errorf("message %q does not name the setting", resp.Failure.Message)
			}
			assertNoFile(t, filepath.Join(dir, "ran"))
		})
	}
}

// Both ways of naming a granted program run it.
func TestGrantedByPathOrName(t *testing.T) {
	g := Grant{Programs: programs(t, "/bin/echo", "/bin/true"), MaxTimeout: time.Minute}
	r := newTestRunner(Config{})
	for _, argv0 := range []string{"/bin/echo", "echo"} {
		resp, _ := run(t, r, g, t.TempDir(), abi.ExecRequest{Argv: []string{argv0, "hi"}})
		if resp.Failure != nil || resp.Stdout != "hi\n" {
			t.Errorf("%s: %+v", argv0, resp)
		}
	}
}

// Arguments are a vector: shell metacharacters reach the program as
// literal bytes.
func TestShellMetacharacterNotInterpreted(t *testing.T) {
	g := Grant{Programs: programs(t, "/bin/echo"), Env: []string{"PATH"}, MaxTimeout: time.Minute}
	r := newTestRunner(Config{})
	dir := t.TempDir()
	args := []string{"a; touch MARKER", "$(touch MARKER2)", "`touch MARKER3`", "| touch MARKER4", "> MARKER5", "&& touch MARKER6", "$HOME", "*"}
	resp, _ := run(t, r, g, dir, abi.ExecRequest{Argv: append([]string{"echo"}, args...)})
	if resp.Failure != nil || resp.ExitCode != 0 {
		t.Fatalf("%+v", resp)
	}
	if want := strings.Join(args, " ") + "\n"; resp.Stdout != want {
		t.Errorf("stdout %q, want %q", resp.Stdout, want)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		t.Errorf("the workspace holds %s: an argument was interpreted", e.Name())
	}
}

// Only the granted variables reach the child; a secret in the host's
// environment does not.
func TestEnvironmentNotInherited(t *testing.T) {
	envProg := programs(t, "/usr/bin/env")
	t.Setenv("VIGIL_TEST_SECRET", "hunter2")
	t.Setenv("VIGIL_ALLOWED", "yes")
	r := newTestRunner(Config{})
	cases := []struct {
		name  string
		grant []string
		want  []string
	}{
		{"one granted", []string{"VIGIL_ALLOWED"}, []string{"VIGIL_ALLOWED=yes"}},
		{"none granted", nil, nil},
		{"granted but unset, bad names, a duplicate", []string{"VIGIL_UNSET_XYZ", "", "A=B", "VIGIL_ALLOWED", "VIGIL_ALLOWED"}, []string{"VIGIL_ALLOWED=yes"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := run(t, r, Grant{Programs: envProg, Env: tc.grant, MaxTimeout: time.Minute}, t.TempDir(), abi.ExecRequest{Argv: []string{"env"}})
			if resp.Failure != nil || resp.ExitCode != 0 {
				t.Fatalf("%+v", resp)
			}
			got := strings.Fields(resp.Stdout)
			if strings.Contains(resp.Stdout, "VIGIL_TEST_SECRET") || strings.Contains(resp.Stdout, "hunter2") {
				t.Errorf("the secret reached the child: %q", resp.Stdout)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("environment %q, want exactly %q", got, tc.want)
			}
		})
	}
}

// The command runs in the workspace directory.
func TestRunsInWorkspace(t *testing.T) {
	g := Grant{Programs: programs(t, "/bin/sh"), MaxTimeout: time.Minute}
	r := newTestRunner(Config{})
	dir := t.TempDir()
	resp, _ := run(t, r, g, dir, abi.ExecRequest{Argv: []string{"sh", "-c", "pwd -P"}})
	want, _ := filepath.EvalSymlinks(dir)
	if strings.TrimSpace(resp.Stdout) != want {
		t.Errorf("pwd %q, want %q", resp.Stdout, want)
	}
}

// Each stream keeps its first OutputCap bytes; the rest is drained (the
// child finishes writing a megabyte) and Truncated says so.
func TestOutputCaps(t *testing.T) {
	g := Grant{Programs: programs(t, "/bin/sh"), MaxTimeout: time.Minute}
	const limit = 1000
	r := newTestRunner(Config{OutputCap: limit})
	// 16384 lines of 64 bytes: a megabyte, far over a pipe's buffer.
	const mega = `l=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde; i=0; while [ $i -lt 16384 ]; do echo $l; i=$((i+1)); done`
	cases := []struct {
		name       string
		script     string
		out, err   int
		truncated  bool
		wantPrefix string
	}{
		{"stdout over the cap", mega + "; echo done >&2", limit, 5, true, "0123456789abcdef"},
		{"stderr over the cap", "(" + mega + ") >&2; echo done", 5, limit, true, "done"},
		{"both under", "echo out; echo err >&2", 4, 4, false, "out"},
		{"exactly the cap", "printf '%01000d' 0", limit, 0, false, "0000"},
		{"one over the cap", "printf '%01001d' 0", limit, 0, true, "0000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := run(t, r, g, t.TempDir(), abi.ExecRequest{Argv: []string{"sh", "-c", tc.script}, TimeoutSeconds: 30})
			if resp.Failure != nil || resp.TimedOut || resp.ExitCode != 0 {
				t.Fatalf("exit %d timed_out %v failure %+v", resp.ExitCode, resp.TimedOut, resp.Failure)
			}
			if len(resp.Stdout) != tc.out || len(resp.Stderr) != tc.err || resp.Truncated != tc.truncated {
				t.Errorf("stdout %d, stderr %d bytes, truncated %v; want %d, %d, %v", len(resp.Stdout), len(resp.Stderr), resp.Truncated, tc.out, tc.err, tc.truncated)
			}
			if !strings.HasPrefix(resp.Stdout, tc.wantPrefix) {
				t.Errorf("stdout %.40q…, want prefix %q", resp.Stdout, tc.wantPrefix)
			}
		})
	}
}

// ExitCode is the exit status, -1 when a signal ended the command.
func TestExitCodes(t *testing.T) {
	g := Grant{Programs: programs(t, "/bin/sh", "/bin/true"), MaxTimeout: time.Minute}
	r := newTestRunner(Config{})
	cases := []struct {
		name string
		argv []string
		want int
	}{
		{"success", []string{"true"}, 0},
		{"status 3", []string{"sh", "-c", "exit 3"}, 3},
		{"status 255", []string{"sh", "-c", "exit 255"}, 255},
		{"killed by a signal", []string{"sh", "-c", "kill -9 $$"}, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := run(t, r, g, t.TempDir(), abi.ExecRequest{Argv: tc.argv})
			if resp.Failure != nil || resp.TimedOut || resp.ExitCode != tc.want {
				t.Errorf("exit %d timed_out %v failure %+v, want exit %d", resp.ExitCode, resp.TimedOut, resp.Failure, tc.want)
			}
		})
	}
}

// Stdin reaches the child whole; a child that never reads it is not held
// up by it.
func TestStdinDelivered(t *testing.T) {
	g := Grant{Programs: programs(t, "/bin/sh"), MaxTimeout: time.Minute}
	r := newTestRunner(Config{})
	resp, _ := run(t, r, g, t.TempDir(), abi.ExecRequest{
		Argv:  []string{"sh", "-c", `while IFS= read -r l || [ -n "$l" ]; do echo "got:$l"; done`},
		Stdin: "one\ntwo; $(x)\nno newline",
	})
	if want := "got:one\ngot:two; $(x)\ngot:no newline\n"; resp.Stdout != want || resp.ExitCode != 0 {
		t.Errorf("stdout %q exit %d, want %q", resp.Stdout, resp.ExitCode, want)
	}

	resp, took := run(t, r, g, t.TempDir(), abi.ExecRequest{Argv: []string{"sh", "-c", "exit 0"}, Stdin: strings.Repeat("x", DefaultStdinCap)})
	if resp.ExitCode != 0 || resp.Failure != nil || took > testMargin {
		t.Errorf("unread stdin: exit %d failure %+v after %s", resp.ExitCode, resp.Failure, took)
	}

	// Without stdin the child reads end of file at once.
	resp, _ = run(t, r, g, t.TempDir(), abi.ExecRequest{Argv: []string{"sh", "-c", "read l; echo $?"}, TimeoutSeconds: 10})
	if resp.TimedOut || strings.TrimSpace(resp.Stdout) != "1" {
		t.Errorf("no stdin: %+v", resp)
	}
}

// A usable workspace is an absolute path to an existing directory.
func TestNoWorkspace(t *testing.T) {
	g := Grant{Programs: programs(t, "/bin/sh"), MaxTimeout: time.Minute}
	r := newTestRunner(Config{})
	base := t.TempDir()
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, dir string }{
		{"none declared", ""},
		{"relative", "relative/dir"},
		{"missing", filepath.Join(base, "missing")},
		{"a file", file},
		{"NUL", base + "\x00x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := run(t, r, g, tc.dir, abi.ExecRequest{Argv: []string{"sh", "-c", "echo > " + filepath.Join(base, "ran")}})
			if resp.Failure == nil || resp.Failure.Reason != abi.ExecNoWorkspace || resp.ExitCode != -1 {
				t.Errorf("got %+v, want no_workspace", resp)
			}
			assertNoFile(t, filepath.Join(base, "ran"))
		})
	}
}

// A granted file the kernel cannot execute is start_failed.
func TestStartFailed(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "not-a-program")
	if err := os.WriteFile(bad, []byte("\x00\x01\x02 not an executable"), 0o755); err != nil {
		t.Fatal(err)
	}
	g := Grant{Programs: []string{bad}, MaxTimeout: time.Minute}
	resp, _ := run(t, newTestRunner(Config{}), g, dir, abi.ExecRequest{Argv: []string{bad}})
	if resp.Failure == nil || resp.Failure.Reason != abi.ExecStartFailed || resp.ExitCode != -1 {
		t.Errorf("got %+v, want start_failed", resp)
	}
}

// Commands run side by side do not see each other's output or groups.
func TestConcurrentRuns(t *testing.T) {
	g := Grant{Programs: programs(t, "/bin/sh"), MaxTimeout: time.Minute}
	r := newTestRunner(Config{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			argv := []string{"sh", "-c", `/bin/sleep 30 & echo "$1"`, "sh", strings.Repeat("x", i+1)}
			resp := r.Run(context.Background(), g, t.TempDir(), abi.ExecRequest{Argv: argv})
			if want := strings.Repeat("x", i+1) + "\n"; resp.Stdout != want || resp.ExitCode != 0 {
				t.Errorf("run %d: %+v, want stdout %q", i, resp, want)
			}
		})
	}
	wg.Wait()
}
