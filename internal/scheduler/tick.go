package scheduler

import (
	"bytes"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// readBatch is how many due entries a worker reads (and files under their
// kind and recipient) at a time.
const readBatch = 32

// lookahead is how many read entries, per worker, may wait filed before a
// worker probes rather than reads: enough for the fairness rules to see
// past a run of one kind, few enough that a backlog's first probe does not
// wait for every due row to be read. A worker that finds no job it may
// take (every filed kind at its cap) reads on regardless, to find one.
const lookahead = 4 * readBatch

// maxFaults caps the backoff's exponent; MaxBackoff caps the delay long
// before it.
const maxFaults = 30

// Tick is the deterministic entry point for tests: it moves every watch
// due at or before now into the ready queue and drains it on
// Config.Workers workers, exactly as Run's workers would (the same
// fairness and caps), probing at now; it returns when every one of them
// has been probed, and how many there were. A watch re-armed meanwhile,
// even due at once, waits for the next Tick. Tick must not run beside
// Run.
func (s *Scheduler) Tick(ctx context.Context, now time.Time) int {
	s.mu.Lock()
	load := s.loadDue(now.UnixNano())
	s.mu.Unlock()
	if load {
		// The loader's read, on Tick's own goroutine: what Run's loader
		// would have read by now.
		if _, err := s.load(ctx, false); err != nil {
			s.log.Error("loading the next window of due watches", "err", err)
		}
	}
	s.mu.Lock()
	n := s.promote(now.UnixNano())
	s.mu.Unlock()
	if n == 0 {
		return 0
	}
	var wg sync.WaitGroup
	for range min(s.cfg.Workers, n) {
		wg.Go(func() { s.worker(ctx, true, now) })
	}
	wg.Wait()
	return n
}

// Run runs the schedule until ctx ends: one loop over the heap that moves
// what is due into the ready queue, sleeping on the wake channel and on
// at most one timer (armed for the earliest due watch; with nothing
// pending there is no timer), and Config.Workers long-lived workers that
// drain the ready queue. When ctx ends the workers finish the probes in
// flight, what was due and not taken goes back in the heap, and Run
// returns nil. Run once: a second Run returns ErrRunning.
func (s *Scheduler) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	var workers sync.WaitGroup
	for range s.cfg.Workers {
		workers.Go(func() { s.worker(ctx, false, time.Time{}) })
	}
	workers.Go(func() { s.loader(ctx) })
	s.loop(ctx)
	s.mu.Lock()
	s.work.Broadcast() // the workers see ctx has ended
	s.mu.Unlock()
	workers.Wait()
	s.mu.Lock()
	s.requeue()
	s.mu.Unlock()
	return nil
}

// ErrRunning: Run was called on a scheduler that runs already.
var ErrRunning = errors.New("scheduler: already running")

// loop is the heap's one goroutine.
func (s *Scheduler) loop(ctx context.Context) {
	var timer clock.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		s.mu.Lock()
		now := s.cfg.Clock.Now().UnixNano()
		s.promote(now)
		if s.loadDue(now) {
			s.askLoad()
		}
		at, armed := s.nextTimer(now)
		var wait time.Duration
		if armed {
			wait = time.Duration(at - s.cfg.Clock.Now().UnixNano())
		}
		s.mu.Unlock()
		if armed && wait <= 0 {
			continue
		}
		var fire <-chan time.Time
		if armed {
			if timer == nil {
				timer = s.cfg.Clock.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// nextTimer is when the loop's one timer fires: the earliest of the
// heap's minimum and the loader's turn (Lead before the window's edge);
// false for no timer, when neither is (nothing pending). The caller
// holds mu.
func (s *Scheduler) nextTimer(now int64) (int64, bool) {
	at, armed := s.loadAt()
	if armed && at <= now {
		armed = false // asked already, or waiting for room in the heap
	}
	if len(s.h) > 0 && (!armed || s.h[0].due < at) {
		at, armed = s.h[0].due, true
	}
	return at, armed
}

// promote moves every entry due at or before now from the heap to the
// ready queue, in due order, and wakes the workers. It returns how many.
// The caller holds mu.
func (s *Scheduler) promote(now int64) int {
	n := 0
	for len(s.h) > 0 && s.h[0].due <= now {
		s.ready.push(heap.Pop(&s.h).(*entry))
		n++
	}
	if n > 0 {
		s.cfg.Metrics.Ready(s.ready.len())
		s.work.Broadcast()
	}
	return n
}

// requeue puts everything due and not taken back in the heap, at its due
// time, unprobed. The caller holds mu.
func (s *Scheduler) requeue() {
	s.ready.drain(func(e *entry) {
		if s.byID[e.id] == e {
			heap.Push(&s.h, e)
		}
	})
	s.cfg.Metrics.Ready(0)
}

// worker is one of the pool: it reads due entries and probes them until ctx ends,
// or, for Tick (untilEmpty), until the ready queue is empty. at, when set,
// is the time every probe happens at (Tick's now); else the clock's.
func (s *Scheduler) worker(ctx context.Context, untilEmpty bool, at time.Time) {
	for {
		batch, j := s.next(ctx, untilEmpty)
		switch {
		case batch != nil:
			s.read(ctx, batch, at)
		case j != nil:
			s.run(ctx, j, at)
		default:
			return
		}
	}
}

// next waits for work: a batch of due entries to read, else the job the
// fairness rules pick. Both nil: stop.
func (s *Scheduler) next(ctx context.Context, untilEmpty bool) ([]*entry, *job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	limit := max(s.cfg.Workers-1, 1)
	for {
		if ctx.Err() != nil {
			if untilEmpty {
				s.requeue() // Tick's: Run's loop requeues once its workers are gone
			}
			return nil, nil
		}
		if s.ready.filed() < lookahead*s.cfg.Workers {
			if b := s.ready.unread(readBatch); len(b) > 0 {
				s.reading++
				return b, nil
			}
		}
		if j := s.ready.take(limit); j != nil {
			s.cfg.Metrics.Ready(s.ready.len())
			if s.byID[j.e.id] != j.e {
				s.ready.done(j) // cancelled while it waited
				continue
			}
			j.e.index = inFlight
			return nil, j
		}
		if b := s.ready.unread(readBatch); len(b) > 0 { // nothing it may take: look further
			s.reading++
			return b, nil
		}
		if untilEmpty && s.ready.len() == 0 && s.reading == 0 {
			return nil, nil
		}
		s.parked++
		s.work.Wait()
		s.parked--
	}
}

// read reads the rows of a batch of due entries, outside the lock, and
// files each pending one under its kind and recipient.
func (s *Scheduler) read(ctx context.Context, batch []*entry, at time.Time) {
	rows := make([]store.Watch, len(batch))
	errs := make([]error, len(batch))
	for i, e := range batch {
		rows[i], errs[i] = s.cfg.Store.Get(ctx, e.id)
	}
	now := s.now(at)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reading--
	for i, e := range batch {
		if s.byID[e.id] != e {
			continue // cancelled while it was read
		}
		switch w, err := rows[i], errs[i]; {
		case ctx.Err() != nil:
			heap.Push(&s.h, e) // shutting down: unprobed, at its due time
		case err == nil && w.State == store.Pending:
			s.ready.file(e, w)
		case err != nil && !errors.Is(err, store.ErrNotFound):
			s.log.Error("reading a due watch", "watch", e.id, "err", err)
			s.arm(e, now.Add(s.storeRetry(e)), time.Time{})
		case s.cfg.Ownership != nil && now.Sub(e.id.Time()) < unseenGrace:
			// On a cluster another node's registration is told before a
			// read on the servers is sure to see its row (JetStream after
			// a leader change answers a read before it has applied all it
			// acknowledged): a young row not found is looked for again,
			// never forgotten at the first miss.
			s.arm(e, now.Add(s.storeRetry(e)), time.Time{})
		default:
			// Gone, held aside, or settled behind our back: stop
			// scheduling it.
			delete(s.byID, e.id)
			delete(s.pokedAt, e.id)
		}
	}
	s.cfg.Metrics.Ready(s.ready.len())
	s.work.Broadcast()
}

// run probes a job a worker took, then uncounts it from its lanes.
func (s *Scheduler) run(ctx context.Context, j *job, at time.Time) {
	start := s.now(at)
	s.cfg.Metrics.Lag(j.w.Kind, start.Sub(time.Unix(0, j.e.due)))
	s.probe(ctx, j.e, j.w, start, at)
	s.mu.Lock()
	s.ready.done(j)
	s.work.Broadcast()
	s.mu.Unlock()
	// After the probe's write and its re-arm: a waiter woken here reads
	// the row and the attempt count as this probe left them.
	s.changed(j.e.id)
}

// now is at, else the clock.
func (s *Scheduler) now(at time.Time) time.Time {
	if !at.IsZero() {
		return at
	}
	return s.cfg.Clock.Now()
}

// probe makes one observation of a due watch, at now, and acts on the
// answer. At or past its deadline the observation is the final one: a
// settled answer fires, anything else expires with the observation's
// note.
func (s *Scheduler) probe(ctx context.Context, e *entry, w store.Watch, now, at time.Time) {
	attempts := e.attempts() + 1 // in flight: only this worker writes it
	final := e.deadline != 0 && now.UnixNano() >= e.deadline
	// The recipient and the registering principal ride on the context,
	// for a host function that acts on their behalf (vigil_exec runs in
	// the workspace of kind.WorkspaceOwner), and so does the cadence, for
	// vigil_fetch (a result younger than it serves this watch without a
	// read).
	pctx := kind.WithCadence(kind.WithRegistrant(kind.WithRecipient(ctx, w.Recipient.ID), w.RegisteredBy), s.probeCadence(e.id, w, now))
	if !s.owns(e.id) {
		s.drop(e) // its partition moved to another node while it was due
		return
	}
	obs, err := s.cfg.Plugins.Observe(pctx, abi.ObserveRequest{
		Kind: w.Kind, WatchID: w.ID.String(), Params: w.Params, Now: now.UTC(), Attempt: attempts, Baseline: w.Baseline,
	})
	if !s.owns(e.id) {
		// The partition moved while the plugin answered: the new owner
		// probes it again, and nothing of this probe is written.
		s.drop(e)
		return
	}
	switch {
	case errors.Is(err, kind.ErrUnknownKind):
		s.cfg.Metrics.Probe(w.Kind, "unwatchable")
		s.settle(ctx, e, w, store.Unwatchable, store.MessageUnwatchable, store.Outcome{
			Result: "unwatchable", Summary: fmt.Sprintf("no plugin serves kind %q any more", w.Kind),
		}, s.now(at), attempts, "unwatchable", nil)
		return
	case ctx.Err() != nil:
		s.rearm(e, now, time.Time{})
		return
	}
	end := s.now(at)
	note := obs.Note
	if err != nil {
		note = "plugin error: " + err.Error()
	}
	fault := faultOf(obs, err)
	if final && (err != nil || obs.Status == abi.StatusPending) {
		s.cfg.Metrics.Probe(w.Kind, "expired")
		s.settle(ctx, e, w, store.Expired, store.MessageExpired, expiry(note), end, attempts, note, fault)
		return
	}
	s.cfg.Metrics.Probe(w.Kind, probeResult(obs, err))
	if fault != nil {
		if err != nil {
			// The plugin raised (a call for the wrong kind is a routing
			// bug): loud, and the watch waits, backing off, rather than
			// settle on a guess.
			s.log.Error("plugin error", "watch", e.id, "kind", w.Kind, "err", err)
		} else {
			s.log.Warn("plugin fault", "watch", e.id, "kind", w.Kind, "reason", obs.Fault.Reason)
		}
		// The note stays what the last answer said; the fault says why
		// this probe gave none. The next check is left as it was.
		if s.record(ctx, e, w, attempts, w.LastNote, fault, w.NextCheck) {
			s.backoff(e, now, end)
		}
		return
	}
	switch obs.Status {
	case abi.StatusSettled:
		s.settle(ctx, e, w, store.Fired, store.MessageFired, toOutcome(obs.Outcome), end, attempts, obs.Note, nil)
	case abi.StatusChanged:
		s.carry(ctx, e, w, obs, now, end, attempts, true)
	default: // pending
		// A baseline to record silently: a standing watch's first check,
		// or what any kind needs to remember between probes (the http
		// kind's first fingerprint). Written only when it moved, so a
		// pending answer that repeats it rewrites nothing.
		if len(obs.Baseline) > 0 && !bytes.Equal(obs.Baseline, w.Baseline) {
			s.carry(ctx, e, w, obs, now, end, attempts, false)
			return
		}
		if s.record(ctx, e, w, attempts, obs.Note, nil, s.durableNext(e, now, end, obs.NextCheck)) {
			s.rearm(e, s.nextDue(e, end, obs.NextCheck), now)
		}
	}
}

// unseenGrace is how long after its registration a watch's row not found
// is read again, on a cluster, rather than forgotten.
const unseenGrace = 10 * time.Second

// storeRetry is how soon a watch is tried again after the store did not
// answer its read or its settlement: the least interval (MinEvery), or
// its cadence when that is shorter. A store that does not answer is not
// the kind's "not yet": on JetStream an election makes it routine for
// seconds, and waiting out a timer's minute-long cadence would fire the
// timer at its deadline instead of its instant.
func (s *Scheduler) storeRetry(e *entry) time.Duration { return min(e.interval(), s.cfg.MinEvery) }

// faultOf is the fault of a probe that gave no answer: the kind's fault,
// or the error a plugin raised; nil for an answer.
func faultOf(obs kind.Observation, err error) *store.Fault {
	var ce *kind.CallError
	switch {
	case err != nil && errors.As(err, &ce):
		return &store.Fault{Reason: ce.Reason, Message: errText(ce.Err)}
	case err != nil:
		return &store.Fault{Reason: "error", Message: err.Error()}
	case obs.Fault != nil:
		return &store.Fault{Reason: obs.Fault.Reason, Message: errText(obs.Fault.Err)}
	}
	return nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// durableNext is the next check a pending answer makes durable: the
// kind's hint, unless it is none or only the cadence (now + every, for
// any now from the probe's start to its end); zero otherwise. Prime arms
// a watch there after a restart.
func (s *Scheduler) durableNext(e *entry, start, end, hint time.Time) time.Time {
	every := e.interval()
	if hint.IsZero() || !hint.Before(start.Add(every)) && !hint.After(end.Add(every)) {
		return time.Time{}
	}
	return hint.UTC()
}

// record persists what a pending watch's probe saw, when it differs from
// its row (read when it came due): the note, the fault or the durable
// next check, and on its first probe the fact that it was probed. A probe
// that repeats the last answer writes nothing; one whose only news is a
// next check rewrites the pending index entry alone. The scheduler's lock
// is not held. It reports false, having dropped the watch, if the watch
// is no longer pending (a cancel committed first).
func (s *Scheduler) record(ctx context.Context, e *entry, w store.Watch, attempts int, note string, fault *store.Fault, next time.Time) bool {
	var err error
	wrote := true
	switch {
	case note != w.LastNote || !fault.Equal(w.LastFault) || w.Attempts == 0:
		err = s.cfg.Store.RecordProbe(ctx, e.id, store.Probe{Attempts: attempts, Note: note, Fault: fault, NextCheck: next})
	case !next.Equal(w.NextCheck):
		err = s.cfg.Store.SetNextCheck(ctx, e.id, next)
	default:
		wrote = false
	}
	switch {
	case errors.Is(err, store.ErrNotPending), errors.Is(err, store.ErrNotOwner):
		s.drop(e)
		return false
	case err != nil && ctx.Err() == nil:
		// The schedule in memory is still right; only a restart would
		// miss what this probe saw.
		s.storeFailed("recording a probe", e.id, err)
	case err == nil && wrote:
		s.storeWrote()
	}
	return true
}

// storeFailed logs a write of the scheduler's that the store did not
// take. One refused for a full disk (store.ErrStorageFull) is said once,
// until a write is taken again (storeWrote): every watch whose
// outcome waits is tried again each second, and a line per watch per
// attempt would bury the store's own line, which says how much space is
// missing and where. Any other failure is said per watch.
func (s *Scheduler) storeFailed(what string, id store.ID, err error) {
	if !errors.Is(err, store.ErrStorageFull) {
		s.log.Error(what, "watch", id, "err", err)
		return
	}
	if s.diskFull.CompareAndSwap(false, true) {
		s.log.Warn(what+" was refused: the store's disk is full. Each watch waiting on it is tried again every second, and settles and mails once space is freed; this is not said again until the scheduler writes again",
			"watch", id, "err", err)
	}
}

// storeWrote notes a write the store took (a settlement, a baseline, a
// probe's record): after a full disk, it says once that the scheduler
// writes again.
func (s *Scheduler) storeWrote() {
	if s.diskFull.CompareAndSwap(true, false) {
		s.log.Info("the store takes the scheduler's writes again")
	}
}

// expiry is the outcome of a watch whose final observation was still
// pending: the summary carries that observation's note, so the recipient
// learns what was last seen ("CI run 7 still in progress", "plugin fault:
// timeout: …").
func expiry(note string) store.Outcome {
	const summary = "the deadline passed before the condition settled"
	if note == "" {
		return store.Outcome{Result: "expired", Summary: summary}
	}
	return store.Outcome{Result: "expired", Summary: summary + "; last observed: " + note}
}

func toOutcome(o *abi.Outcome) store.Outcome {
	if o == nil {
		return store.Outcome{}
	}
	return store.Outcome{Result: o.Result, Summary: o.Summary, Detail: o.Detail}
}

// nextDue is when to probe again: the plugin's hint within [now + the
// minimum interval, the deadline], else now + every, never past the
// deadline (so the final observation is on time).
func (s *Scheduler) nextDue(e *entry, now, hint time.Time) time.Time {
	next := now.Add(e.interval())
	if !hint.IsZero() {
		next = hint
		if floor := now.Add(s.cfg.MinEvery); next.Before(floor) {
			next = floor
		}
	}
	return e.clamp(next)
}

// clamp keeps next at or before e's deadline.
func (e *entry) clamp(next time.Time) time.Time {
	if e.deadline != 0 && next.UnixNano() > e.deadline {
		return time.Unix(0, e.deadline)
	}
	return next
}

// backoffDelay is how long a watch waits after faults in a row: its cadence
// doubled once per fault, capped at MaxBackoff, never below the cadence.
func (s *Scheduler) backoffDelay(every time.Duration, faults uint8) time.Duration {
	limit := max(every, s.cfg.MaxBackoff)
	d := every
	for range faults {
		if d >= limit/2 {
			return limit
		}
		d *= 2
	}
	return d
}

// backoff re-arms e after a fault or a plugin error: end (when the probe
// came back) plus its cadence doubled once per fault in a row, capped,
// never past its deadline, so the final observation is still on time.
// start is when the probe began.
func (s *Scheduler) backoff(e *entry, start, end time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID[e.id] != e {
		return // cancelled while it was being probed
	}
	faults := min(e.faults()+1, maxFaults)
	e.setTries(e.attempts()+1, faults)
	if s.armOrLeave(e, e.clamp(end.Add(s.backoffDelay(e.interval(), faults))), start) {
		s.mu.Unlock()
		s.leave(context.Background(), e)
		s.mu.Lock()
	}
}

// rearm puts e back in the heap at next, unless it was cancelled
// meanwhile; probed, when set, is when the probe that answered began (it
// counts as an attempt, and the faults in a row end).
func (s *Scheduler) rearm(e *entry, next, probed time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID[e.id] != e {
		return // cancelled while it was being probed
	}
	if !probed.IsZero() {
		e.setTries(e.attempts()+1, 0)
	}
	if s.armOrLeave(e, next, probed) {
		s.mu.Unlock()
		s.leave(context.Background(), e)
		s.mu.Lock()
	}
}

// arm pushes e into the heap at next (at once, if it was poked while in
// flight) and wakes the loop when e is the new earliest; probed, when
// set, is when e was just probed. The caller holds mu.
func (s *Scheduler) arm(e *entry, next, probed time.Time) {
	due := next.UnixNano()
	if e.index == pokedWhileProbed {
		due = min(due, s.cfg.Clock.Now().UnixNano())
	}
	e.setDue(due)
	if !probed.IsZero() {
		e.probedAt(probed)
	}
	heap.Push(&s.h, e)
	if e.index == 0 {
		s.signal()
	}
}

// drop forgets an in-flight entry whose row is no longer pending.
func (s *Scheduler) drop(e *entry) {
	s.mu.Lock()
	if s.byID[e.id] == e {
		delete(s.byID, e.id)
		delete(s.pokedAt, e.id)
	}
	s.mu.Unlock()
}

// settle persists a final state and mails it, in one transaction
// (Deliver.Settle: settle-if-still-pending with the mailbox append). The
// store decides against a cancel: if the cancel committed first, nothing
// is written and nothing is mailed.
func (s *Scheduler) settle(ctx context.Context, e *entry, w store.Watch, state store.State, typ store.MessageType, out store.Outcome, now time.Time, attempts int, note string, fault *store.Fault) {
	settled, err := s.cfg.Deliver.Settle(ctx, e.id, store.Settlement{
		State: state, Outcome: &out, SettledAt: now, Attempts: attempts, LastNote: note, LastFault: fault,
	}, store.Message{Kind: w.Kind, Type: typ, Outcome: out})
	if errors.Is(err, store.ErrNotPending) || errors.Is(err, store.ErrNotOwner) {
		// Settled by someone else, or the partition has another owner
		// now: nothing was written, and this node has no more to do.
		s.drop(e)
		return
	}
	if err != nil {
		// Neither persisted nor mailed: try again soon.
		s.storeFailed("persisting an outcome", e.id, err)
		s.rearm(e, now.Add(s.storeRetry(e)), time.Time{})
		return
	}
	s.storeWrote()
	s.drop(e)
	s.cfg.Plugins.Settled(ctx, settled)
}

// carry persists a standing watch's new baseline and (for a change) mails
// it, in one transaction (Deliver.Carry), conditional on the watch still
// pending: a cancel that committed first wins, and nothing is written or
// mailed. The watch stays pending whatever the delivery's fate: only its
// recipient's lifecycle ends it.
func (s *Scheduler) carry(ctx context.Context, e *entry, w store.Watch, obs kind.Observation, start, now time.Time, attempts int, mail bool) {
	var change *store.Message
	if mail {
		change = &store.Message{Kind: w.Kind, Type: store.MessageChanged, Outcome: toOutcome(obs.Outcome)}
		if obs.Type != "" {
			change.Type = obs.Type // a host kind's own notice (the reminder)
		}
	}
	mailed, err := s.cfg.Deliver.Carry(ctx, e.id, obs.Baseline, attempts, obs.Note, change)
	if err != nil {
		if errors.Is(err, store.ErrNotPending) || errors.Is(err, store.ErrNotOwner) {
			s.drop(e)
			return
		}
		// Neither persisted nor mailed: look again at the next interval.
		s.storeFailed("persisting a baseline", e.id, err)
	} else {
		s.storeWrote()
		if next := s.durableNext(e, start, now, obs.NextCheck); !next.Equal(w.NextCheck) {
			// The baseline keeps the row's next check; a new one is
			// written beside it.
			if !s.record(ctx, e, store.Watch{Attempts: attempts, LastNote: obs.Note, NextCheck: w.NextCheck}, attempts, obs.Note, nil, next) {
				return
			}
		}
	}
	s.mu.Lock()
	live := s.byID[e.id] == e
	out := false
	if live {
		e.setTries(attempts, 0)
		out = s.armOrLeave(e, s.nextDue(e, now, obs.NextCheck), start)
	}
	s.mu.Unlock()
	if out {
		s.leave(ctx, e)
	}
	if live && mail && err == nil && !mailed {
		s.log.Warn("a standing watch's change was not mailed: its recipient is not running", "watch", e.id)
	}
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
