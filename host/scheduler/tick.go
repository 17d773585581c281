package scheduler

import (
	"bytes"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigilhq/vigil/api/abi"
	"github.com/vigilhq/vigil/host/kind"
	"github.com/vigilhq/vigil/store"
)

// Tick probes every watch due at or before now, on the worker pool, and
// returns when they are done. It returns how many it probed.
func (s *Scheduler) Tick(ctx context.Context, now time.Time) int {
	nowN := now.UnixNano()
	s.mu.Lock()
	var due []*entry
	for len(s.h) > 0 && s.h[0].due <= nowN {
		due = append(due, heap.Pop(&s.h).(*entry))
	}
	s.mu.Unlock()
	if len(due) == 0 {
		return 0
	}
	workers := min(s.cfg.Workers, len(due))
	if workers == 1 {
		for _, e := range due {
			s.probeOrDefer(ctx, e, now)
		}
		return len(due)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(due) {
					return
				}
				s.probeOrDefer(ctx, due[i], now)
			}
		}()
	}
	wg.Wait()
	return len(due)
}

// probeOrDefer probes e, unless ctx has ended: then e goes back in the heap
// unprobed, so a shutdown does not wait on the rest of a large batch.
func (s *Scheduler) probeOrDefer(ctx context.Context, e *entry, now time.Time) {
	if ctx.Err() != nil {
		s.rearm(e, now, false)
		return
	}
	s.probe(ctx, e, now)
}

// probe makes one observation of a due watch and acts on the answer.
func (s *Scheduler) probe(ctx context.Context, e *entry, now time.Time) {
	w, err := s.cfg.Store.Get(ctx, e.id)
	if err != nil || w.State != store.Pending {
		// Gone, held aside, or settled behind our back: stop scheduling it.
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			s.log.Error("reading a due watch", "watch", e.id, "err", err)
			s.rearm(e, now.Add(time.Duration(e.every)), false)
			return
		}
		s.mu.Lock()
		if s.byID[e.id] == e {
			delete(s.byID, e.id)
		}
		s.mu.Unlock()
		return
	}
	attempts := int(e.attempts) + 1
	if e.deadline != 0 && now.UnixNano() >= e.deadline {
		s.cfg.Metrics.Probe(w.Kind, "expired")
		s.settle(ctx, e, w, store.Expired, store.MessageExpired, store.Outcome{
			Result: "expired", Summary: "the deadline passed before the condition settled",
		}, now, attempts, "expired")
		return
	}
	// The recipient rides on the context, for a host function that acts on
	// its behalf (vigil_exec runs in the recipient's workspace).
	obs, err := s.cfg.Plugins.Observe(kind.WithRecipient(ctx, w.Recipient.ID), abi.ObserveRequest{
		Kind: w.Kind, WatchID: w.ID.String(), Params: w.Params, Now: now.UTC(), Attempt: attempts, Baseline: w.Baseline,
	})
	s.cfg.Metrics.Probe(w.Kind, probeResult(obs, err))
	switch {
	case errors.Is(err, kind.ErrUnknownKind):
		s.settle(ctx, e, w, store.Unwatchable, store.MessageUnwatchable, store.Outcome{
			Result: "unwatchable", Summary: fmt.Sprintf("no plugin serves kind %q any more", w.Kind),
		}, now, attempts, "unwatchable")
		return
	case ctx.Err() != nil:
		s.rearm(e, now, false)
		return
	case err != nil:
		// The plugin raised (a call for the wrong kind is a routing bug):
		// loud, and the watch waits rather than settle on a guess.
		s.log.Error("plugin error", "watch", e.id, "kind", w.Kind, "err", err)
		s.rearm(e, s.nextDue(e, now, time.Time{}), true)
		return
	}
	if obs.Fault != nil {
		s.log.Warn("plugin fault", "watch", e.id, "kind", w.Kind, "reason", obs.Fault.Reason)
	}
	switch obs.Status {
	case abi.StatusSettled:
		s.settle(ctx, e, w, store.Fired, store.MessageFired, toOutcome(obs.Outcome), now, attempts, obs.Note)
	case abi.StatusChanged:
		s.carry(ctx, e, w, obs, now, attempts, true)
	default: // pending
		// A baseline to record silently: a standing watch's first check,
		// or what any kind needs to remember between probes (the http
		// kind's first fingerprint). Written only when it moved, so a
		// pending answer that repeats it rewrites nothing.
		if len(obs.Baseline) > 0 && !bytes.Equal(obs.Baseline, w.Baseline) {
			s.carry(ctx, e, w, obs, now, attempts, false)
			return
		}
		s.rearm(e, s.nextDue(e, now, obs.NextCheck), true)
	}
}

func toOutcome(o *abi.Outcome) store.Outcome {
	if o == nil {
		return store.Outcome{}
	}
	return store.Outcome{Result: o.Result, Summary: o.Summary, Detail: o.Detail}
}

// nextDue is when to probe again: the plugin's hint within [now + the
// minimum interval, the deadline], else now + every, never past the
// deadline (so the expiry is on time).
func (s *Scheduler) nextDue(e *entry, now, hint time.Time) time.Time {
	next := now.Add(time.Duration(e.every))
	if !hint.IsZero() {
		next = hint
		if floor := now.Add(s.cfg.MinEvery); next.Before(floor) {
			next = floor
		}
	}
	if e.deadline != 0 {
		if d := time.Unix(0, e.deadline); next.After(d) {
			next = d
		}
	}
	return next
}

// rearm puts e back in the heap at next, unless it was cancelled
// meanwhile; probed says whether this pass counted as an attempt.
func (s *Scheduler) rearm(e *entry, next time.Time, probed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID[e.id] != e {
		return // cancelled while it was being probed
	}
	if probed {
		e.attempts++
	}
	e.due = next.UnixNano()
	if e.index == pokedWhileProbed {
		e.due = min(e.due, s.cfg.Clock.Now().UnixNano())
	}
	heap.Push(&s.h, e)
}

// settle persists a final state and mails it, in one transaction
// (Deliver.Settle). A cancel that won is respected: nothing is written and
// nothing is mailed.
func (s *Scheduler) settle(ctx context.Context, e *entry, w store.Watch, state store.State, typ store.MessageType, out store.Outcome, now time.Time, attempts int, note string) {
	s.mu.Lock()
	if s.byID[e.id] != e {
		s.mu.Unlock()
		return
	}
	settled, err := s.cfg.Deliver.Settle(ctx, e.id, store.Settlement{
		State: state, Outcome: &out, SettledAt: now, Attempts: attempts, LastNote: note,
	}, store.Message{Kind: w.Kind, Type: typ, Outcome: out})
	if err != nil {
		if errors.Is(err, store.ErrNotPending) {
			delete(s.byID, e.id)
		} else {
			// Neither persisted nor mailed: try again at the next interval.
			s.log.Error("persisting an outcome", "watch", e.id, "err", err)
			e.due = now.Add(time.Duration(e.every)).UnixNano()
			heap.Push(&s.h, e)
		}
		s.mu.Unlock()
		return
	}
	delete(s.byID, e.id)
	s.mu.Unlock()
	s.cfg.Plugins.Settled(ctx, settled)
}

// carry persists a standing watch's new baseline and (for a change) mails
// it, in one transaction (Deliver.Carry). The watch stays pending whatever
// the delivery's fate: only its recipient's lifecycle ends it.
func (s *Scheduler) carry(ctx context.Context, e *entry, w store.Watch, obs kind.Observation, now time.Time, attempts int, mail bool) {
	s.mu.Lock()
	if s.byID[e.id] != e {
		s.mu.Unlock()
		return
	}
	var change *store.Message
	if mail {
		change = &store.Message{Kind: w.Kind, Type: store.MessageChanged, Outcome: toOutcome(obs.Outcome)}
	}
	mailed, err := s.cfg.Deliver.Carry(ctx, e.id, obs.Baseline, attempts, obs.Note, change)
	if err != nil {
		if errors.Is(err, store.ErrNotPending) {
			delete(s.byID, e.id)
			s.mu.Unlock()
			return
		}
		// Neither persisted nor mailed: look again at the next interval.
		s.log.Error("persisting a baseline", "watch", e.id, "err", err)
	}
	e.attempts = int32(attempts)
	e.due = s.nextDue(e, now, obs.NextCheck).UnixNano()
	heap.Push(&s.h, e)
	s.mu.Unlock()
	if mail && err == nil && !mailed {
		s.log.Warn("a standing watch's change was not mailed: its recipient is not running", "watch", e.id)
	}
}

// Start runs the loop until ctx ends, then waits for the probes in flight.
// It sleeps on the wake channel and on at most one timer, armed for the
// earliest due watch; with nothing pending there is no timer. Start may be
// called once.
func (s *Scheduler) Start(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	if !s.running.CompareAndSwap(false, true) {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		for {
			if ctx.Err() != nil {
				return
			}
			s.Tick(ctx, s.cfg.Clock.Now())
			var timer *time.Timer
			var fire <-chan time.Time
			if next, ok := s.NextWake(); ok {
				d := next.Sub(s.cfg.Clock.Now())
				if d <= 0 {
					continue
				}
				timer = time.NewTimer(d)
				fire = timer.C
			}
			select {
			case <-ctx.Done():
			case <-s.wake:
			case <-fire:
			}
			if timer != nil {
				timer.Stop()
			}
		}
	}()
	return done
}

// probeResult names a probe's result for the metrics.
func probeResult(obs kind.Observation, err error) string {
	switch {
	case errors.Is(err, kind.ErrUnknownKind):
		return "unwatchable"
	case err != nil:
		return "error"
	case obs.Fault != nil:
		return "fault"
	}
	return obs.Status
}
