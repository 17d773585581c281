package servetest

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/vigilhq/vigil/internal/wasmbuild"
)

// ReadyBound is how long a started vigil serve may take to answer. A first
// start compiles every bundled plugin; on a fresh machine whose cores are
// busy (a cold build cache, a parallel go test) that alone has taken
// minutes. A healthy server with the shared compilation cache answers in
// well under a second.
const ReadyBound = 5 * time.Minute

// Build builds cmd/vigil into dir and returns the binary's path.
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "vigil")
	out, err := exec.Command(wasmbuild.Go(), "build", "-o", bin, "github.com/vigilhq/vigil/cmd/vigil").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./cmd/vigil: %v\n%s", err, out)
	}
	return bin, nil
}

// FreeAddr is a loopback address nothing listens on at the moment.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// ErrExited is a server that exited before it answered.
var ErrExited = errors.New("vigil serve exited before answering GET /healthz")

// ErrNotReady is a server that did not answer within the bound.
var ErrNotReady = errors.New("vigil serve did not answer GET /healthz in time")

// WaitHealthy returns when GET base/healthz answers 200, with the instant
// it first did; ErrExited when exited closes first, ErrNotReady (naming
// the compilation cache a first start fills) once bound has passed.
func WaitHealthy(base string, exited <-chan struct{}, bound time.Duration) (time.Time, error) {
	client := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(bound); time.Now().Before(deadline); {
		if resp, err := client.Get(base + "/healthz"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Now(), nil
			}
		}
		select {
		case <-exited:
			return time.Time{}, ErrExited
		case <-time.After(20 * time.Millisecond):
		}
	}
	return time.Time{}, fmt.Errorf("%w: %s within %v (a first start compiles the plugins into %s)", ErrNotReady, base, bound, wasmbuild.CacheDir())
}
