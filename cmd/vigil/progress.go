package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/vigilhq/vigil/api"
)

// terminal is a writer or reader that says whether it is a terminal
// itself (the tests' stand-in for one).
type terminal interface{ Terminal() bool }

// isTerminal reports whether w (a writer or a reader) is a terminal: one
// where a line can be redrawn in place, or a question asked.
func isTerminal(w any) bool {
	if t, ok := w.(terminal); ok {
		return t.Terminal()
	}
	f, ok := w.(interface{ Fd() uintptr })
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// progress is the one line a wait redraws in place on a terminal: the
// watch's state, probes, last note and time to its deadline, redrawn on
// each change and once a second for the countdown. On anything but a
// terminal it writes nothing.
type progress struct {
	w   io.Writer // nil: not a terminal
	now func() time.Time
	// mu guards cur, drawn and stopped, and serialises the writes.
	mu      sync.Mutex
	cur     *api.Watch
	drawn   bool
	stopped bool
	quit    chan struct{}
	wg      sync.WaitGroup
}

func newProgress(w io.Writer) *progress {
	if !isTerminal(w) {
		return &progress{}
	}
	p := &progress{w: w, now: time.Now, quit: make(chan struct{})}
	p.wg.Go(p.countdown)
	return p
}

// countdown redraws the line once a second until stop.
func (p *progress) countdown() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-p.quit:
			return
		case <-t.C:
			p.mu.Lock()
			p.draw()
			p.mu.Unlock()
		}
	}
}

// show redraws the line for w.
func (p *progress) show(w api.Watch) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cur = &w
	p.draw()
}

// draw writes the line over the last one; the caller holds mu.
func (p *progress) draw() {
	if p.cur == nil || p.stopped {
		return
	}
	fmt.Fprint(p.w, "\r\x1b[K"+progressLine(*p.cur, p.now()))
	p.drawn = true
}

// stop ends the countdown and the line, so what follows starts on a line
// of its own. It may be called more than once.
func (p *progress) stop() {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.stopped = true
	if p.drawn {
		fmt.Fprintln(p.w)
	}
	close(p.quit)
	p.mu.Unlock()
	p.wg.Wait()
}

// progressLine is one watch's progress at now: "watch ID pending · 3
// probes · run 7 in progress · 12m30s to the deadline".
func progressLine(w api.Watch, now time.Time) string {
	line := fmt.Sprintf("watch %s %s · %d probe%s", w.ID, w.State, w.Attempts, plural(w.Attempts))
	if w.LastNote != "" {
		line += " · " + clip(w.LastNote, 60)
	}
	if f := w.LastFault; f != nil {
		line += " · fault " + f.Reason
	}
	if w.State == "pending" && w.ExpiresAt != nil {
		left := w.ExpiresAt.Sub(now).Round(time.Second)
		if left < 0 {
			left = 0
		}
		line += " · " + left.String() + " to the deadline"
	}
	return line
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// clip shortens s to at most n runes.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
