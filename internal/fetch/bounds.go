package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/sdk/abi"
)

// The causes a fetch's request context is cancelled with when a bound
// passes; classify tells them apart with errors.Is.
var (
	// errOperationTimeout: one operation (the resolve, the connect, the
	// wait for the headers, a read of the body) took longer than the
	// command's timeout.
	errOperationTimeout = errors.New("an operation of the fetch outlasted its timeout")
	// errFetchTimeout: the whole fetch took longer than MaxFetchTime.
	errFetchTimeout = errors.New("the fetch outlasted its whole-fetch bound")
)

// watchdog bounds each operation of one fetch: armed for d at each sign of
// progress, it cancels the fetch when d passes without one. It is paused
// while the issuer itself waits (pacing), which the time left bounds.
type watchdog struct {
	clock clock.Clock
	d     time.Duration
	fire  func()

	mu      sync.Mutex // guards t and stopped
	t       clock.Timer
	stopped bool
}

func newWatchdog(c clock.Clock, d time.Duration, fire func()) *watchdog {
	w := &watchdog{clock: c, d: d, fire: fire}
	w.progress()
	return w
}

// progress starts a new operation: d from now.
func (w *watchdog) progress() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	w.disarm()
	w.t = w.clock.AfterFunc(w.d, w.fire)
}

// pause disarms the watchdog until the next progress.
func (w *watchdog) pause() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.disarm()
}

// stop disarms it for good.
func (w *watchdog) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.disarm()
}

// disarm stops the timer, if one is armed. w.mu is held.
func (w *watchdog) disarm() {
	if w.t != nil {
		w.t.Stop()
		w.t = nil
	}
}

// trace reports the request's progress to w: a connection asked for and
// had (the connect, TLS included), the request written, the answer's
// first byte.
func (w *watchdog) trace(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GetConn:              func(string) { w.progress() },
		GotConn:              func(httptrace.GotConnInfo) { w.progress() },
		WroteRequest:         func(httptrace.WroteRequestInfo) { w.progress() },
		GotFirstResponseByte: func() { w.progress() },
	})
}

// progressReader is a body whose every read that returns bytes is
// progress: each read is one operation.
type progressReader struct {
	r io.Reader
	w *watchdog
}

func (p progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.w.progress()
	}
	return n, err
}

// bounded places err in the taxonomy, telling a bound that cancelled ctx
// (an operation's timeout, the whole fetch's) from the rest.
func bounded(ctx context.Context, err error, op, whole time.Duration) *Error {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errOperationTimeout):
		return &Error{Reason: abi.FetchTimeout, Err: cause,
			Message: fmt.Sprintf("no progress within the fetch's timeout of %s (the connect, the wait for an answer, or a read)", op)}
	case errors.Is(cause, errFetchTimeout):
		return &Error{Reason: abi.FetchTimeout, Err: cause,
			Message: fmt.Sprintf("the fetch took longer than the host's whole-fetch bound of %s (setting: fetch.max_fetch_time)", whole)}
	}
	return classify(err)
}
