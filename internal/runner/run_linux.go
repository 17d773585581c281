package runner

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/vigilhq/vigil/sdk/abi"
)

// supported: this platform has process groups and waitid(WNOWAIT).
const supported = true

// errTimedOut is the cause of a run context the request's timeout ended,
// which tells it apart from the caller's context ending.
var errTimedOut = errors.New("the command's timeout expired")

// run starts program in its own process group and answers once the group
// is gone and the output read. The group is terminated (SIGTERM, then
// SIGKILL after the grace) when the timeout or ctx ends first, and
// SIGKILLed when the command's own process exits, so nothing the command
// started outlives it.
func (r *Runner) run(ctx context.Context, program string, env []string, dir string, req abi.ExecRequest, timeout time.Duration) abi.ExecResponse {
	runCtx, cancel := context.WithTimeoutCause(ctx, timeout, errTimedOut)
	defer cancel()

	stdout, stderr := &capped{max: r.outputCap}, &capped{max: r.outputCap}
	cmd := exec.CommandContext(runCtx, program)
	cmd.Args = append([]string(nil), req.Argv...) // a vector: no shell joins it
	cmd.Dir = dir
	cmd.Env = env // never nil: nil would inherit the host's environment
	if req.Stdin != "" {
		cmd.Stdin = strings.NewReader(req.Stdin)
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	// exited is set once the leader has exited; terminated once Cancel
	// signalled a group whose leader was still running.
	var exited, terminated atomic.Bool
	cmd.Cancel = func() error {
		if exited.Load() {
			return os.ErrProcessDone
		}
		terminated.Store(true)
		return signalGroup(cmd.Process.Pid, syscall.SIGTERM)
	}
	// After Cancel, WaitDelay SIGKILLs the leader if it is still running,
	// and closes the output pipes if they are still held open; after a
	// normal exit it bounds the wait for those pipes. Either way Wait
	// returns within the grace.
	cmd.WaitDelay = r.grace

	begin := time.Now()
	if err := cmd.Start(); err != nil {
		if runCtx.Err() != nil {
			return r.ended(runCtx, abi.ExecResponse{ExitCode: -1})
		}
		return r.refuse(abi.ExecStartFailed, err.Error())
	}
	pid := cmd.Process.Pid

	// Wait for the leader to exit without reaping it: while it is an
	// unreaped zombie its pid cannot be reused, so the group id still names
	// this command's group and nothing else. Then kill whatever is left in
	// the group (background children, a grandchild holding stdout), and
	// only then reap and join the readers.
	swept := false
	if waitExited(pid) == nil {
		exited.Store(true)
		_ = signalGroup(pid, syscall.SIGKILL)
		swept = true
	}
	err := cmd.Wait()
	if !swept {
		_ = signalGroup(pid, syscall.SIGKILL)
	}

	resp := abi.ExecResponse{
		ExitCode:  cmd.ProcessState.ExitCode(),
		Stdout:    stdout.String(),
		Stderr:    stderr.String(),
		Truncated: stdout.over || stderr.over,
	}
	if errors.Is(err, exec.ErrWaitDelay) {
		r.log.Warn("exec: a process outside the command's group held its output open; stopped reading after the grace",
			"program", program, "grace", r.grace)
	}
	if terminated.Load() {
		resp = r.ended(runCtx, resp)
	}
	r.log.Debug("exec", "program", program, "argc", len(req.Argv), "exit_code", resp.ExitCode,
		"timed_out", resp.TimedOut, "truncated", resp.Truncated, "elapsed", time.Since(begin))
	return resp
}

// ended marks resp for a command runCtx ended: timed out when the
// request's timeout did it, unavailable when the caller's context did.
func (r *Runner) ended(runCtx context.Context, resp abi.ExecResponse) abi.ExecResponse {
	if errors.Is(context.Cause(runCtx), errTimedOut) {
		resp.TimedOut = true
		return resp
	}
	resp.Failure = &abi.FetchFailure{Reason: abi.ExecUnavailable, Message: "the call ended before the command did; its process group was terminated"}
	return resp
}

// signalGroup sends sig to the process group pgid. It refuses a pgid of 1
// or less: kill(0) is the caller's own group and kill(-1) every process it
// may signal.
func signalGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 1 {
		return errors.New("runner: refusing to signal process group <= 1")
	}
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// pPID is waitid's P_PID idtype.
const pPID = 1

// waitExited blocks until the child pid has exited, leaving it unreaped
// (WNOWAIT), as os does before its own wait.
func waitExited(pid int) error {
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		switch errno {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		default:
			return errno
		}
	}
}
