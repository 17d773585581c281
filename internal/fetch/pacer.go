package fetch

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Raised intervals after a 429 or 503: 2 s, then 4 s, then 8 s.
const (
	firstStep = 2 * time.Second
	maxStep   = 8 * time.Second
)

// pacer decides, per origin (scheme://host:port), how long a request must
// wait before it goes. It is pure: every decision takes now, nothing reads
// a clock or sleeps, and it is not safe for concurrent use (the issuer
// holds a lock around it).
//
// Each origin has a next slot, the earliest instant its next request may
// go. A request reserves the slot and moves it on by the interval in
// force: the minimum, or the raised step after a 429 or 503. A
// Retry-After pushes the slot further when it asks for more. The step
// falls back to the minimum once quiet has passed since the last 429 or
// 503.
type pacer struct {
	min, quiet time.Duration
	hosts      map[string]*pace
	swept      time.Time
}

type pace struct {
	next      time.Time     // earliest instant the next request may go
	step      time.Duration // raised interval; zero when not raised
	refusedAt time.Time     // last 429 or 503
}

func newPacer(min, quiet time.Duration) *pacer {
	return &pacer{min: min, quiet: quiet, hosts: make(map[string]*pace)}
}

// interval is the interval in force for h at now.
func (p *pacer) interval(h *pace, now time.Time) time.Duration {
	if h.step > 0 && now.Sub(h.refusedAt) >= p.quiet {
		h.step = 0
	}
	return max(p.min, h.step)
}

// reserve returns how long a request to origin made at now must wait. When
// the wait is more than budget it reserves nothing and ok is false: the
// request is not made, and takes no slot from the ones that are.
func (p *pacer) reserve(origin string, now time.Time, budget time.Duration) (wait time.Duration, ok bool) {
	p.sweep(now)
	h := p.hosts[origin]
	if h == nil {
		h = &pace{}
		p.hosts[origin] = h
	}
	slot := now
	if h.next.After(now) {
		slot = h.next
	}
	wait = slot.Sub(now)
	if wait > budget {
		return wait, false
	}
	h.next = slot.Add(p.interval(h, slot))
	return wait, true
}

// refused records a 429 or 503 from origin at now: the interval steps up
// (2 s, 4 s, 8 s) and the next slot moves to now plus the larger of the
// step and retryAfter. retryAfter is capped at the quiet period, so an
// origin cannot park itself for longer than it takes to forgive it.
func (p *pacer) refused(origin string, now time.Time, retryAfter time.Duration) {
	h := p.hosts[origin]
	if h == nil {
		h = &pace{}
		p.hosts[origin] = h
	}
	p.interval(h, now) // forget an old step first
	switch {
	case h.step == 0:
		h.step = firstStep
	default:
		h.step = min(2*h.step, maxStep)
	}
	h.refusedAt = now
	wait := max(p.min, h.step, min(retryAfter, p.quiet))
	if next := now.Add(wait); next.After(h.next) {
		h.next = next
	}
}

// sweep drops, at most once per ten minimum intervals, the origins whose
// state is the same as having none: the next slot has passed and no
// raised step is in force. The map therefore holds only origins asked
// recently or refusing recently.
func (p *pacer) sweep(now time.Time) {
	if now.Sub(p.swept) < 10*p.min {
		return
	}
	p.swept = now
	for origin, h := range p.hosts {
		if !h.next.After(now) && p.interval(h, now) == p.min {
			delete(p.hosts, origin)
		}
	}
}

// retryAfter reads a Retry-After header: delay-seconds or an HTTP-date,
// relative to now. Anything else, or a time already past, is zero.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
