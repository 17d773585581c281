package crashtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/servetest"

	"github.com/vigilhq/vigil/internal/wasmbuild"
)

// buildVigil builds cmd/vigil into dir, or returns VIGIL_CRASH_BIN when it
// is set (a binary built elsewhere, such as a deliberately broken copy).
func buildVigil(t *testing.T, dir string) string {
	t.Helper()
	if bin := os.Getenv("VIGIL_CRASH_BIN"); bin != "" {
		return bin
	}
	bin, err := servetest.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// freeAddr is a loopback address nothing listens on at the moment.
func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := servetest.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// proc is one vigil serve process. Its one Wait runs in the background;
// exited closes when it returns.
type proc struct {
	cmd     *exec.Cmd
	log     string
	exited  chan struct{}
	waitErr error
}

// kill sends SIGKILL and waits for the process to be gone. It is safe to
// call more than once.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// hostSpec is how every start of the host under test is made: the same
// binary, address, data directory and flags each time.
type hostSpec struct {
	bin    string
	addr   string
	data   string
	config string
	logDir string
}

func (h hostSpec) base() string { return "http://" + h.addr }

// start runs vigil serve and returns once GET /healthz answers, with the
// instant it first did; the test's end kills the process.
func (h hostSpec) start(t *testing.T, n int) (*proc, time.Time) {
	t.Helper()
	logPath := filepath.Join(h.logDir, fmt.Sprintf("serve-%04d.log", n))
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(h.bin, "serve",
		"--listen", h.addr,
		"--data", h.data,
		"--config", h.config,
		"--plugin-cache", wasmbuild.CacheDir(),
		"--webhook-allow", "127.0.0.0/8")
	cmd.Stdout = f
	cmd.Stderr = f
	p := &proc{cmd: cmd, log: logPath, exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start vigil serve: %v", err)
	}
	go func() { p.waitErr = cmd.Wait(); close(p.exited) }()
	t.Cleanup(p.kill)

	ready, err := servetest.WaitHealthy(h.base(), p.exited, servetest.ReadyBound)
	if errors.Is(err, servetest.ErrExited) {
		t.Fatalf("start %d: %v: %v\n%s", n, err, p.waitErr, tail(p.log))
	}
	if err != nil {
		t.Fatalf("start %d: %v\n%s", n, err, tail(p.log))
	}
	return p, ready
}

// tail is the end of a log file, for a failure message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	const max = 6000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return path + ":\n" + string(b)
}
