package scheduler

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/sdk/abi"

	"github.com/vigilhq/vigil/store"
)

// Registration is a request for a new watch. Every and ExpiresAt are
// optional: nil means the predicate's default, resolved here.
type Registration struct {
	Kind      string
	Params    json.RawMessage
	Recipient store.Recipient
	// RegisteredBy is the principal registering the watch ("" for the
	// host's own, such as the standing watches it reconciles).
	RegisteredBy string
	// Caller is RegisteredBy's grant, as admission asks of it: a kind
	// whose params name a record of the host admits only one Caller may
	// read. The host's own registrations pass kind.HostCaller; nil reads
	// nothing.
	Caller    kind.Caller
	Every     *time.Duration
	ExpiresAt *time.Time
	// Token is the capability token of a watch whose kind answers to one
	// (kind.Info.Capability), made by the caller (internal/captoken), who
	// shows it once; the row keeps its hash. Required for such a kind,
	// refused for any other.
	Token string
	// Bounded holds the registration to Config.MaxPending, in the
	// transaction that writes it: a client's registration (the API's), not
	// the host's own standing watches.
	Bounded bool
}

// Register admits, resolves and stores a new watch, then arms it to be
// probed at once. The row is committed before Register returns. A refusal
// is a *api.Error from the kind (the kind or params) or of its own (the deadline,
// cadence or recipient).
func (s *Scheduler) Register(ctx context.Context, r Registration) (store.Watch, error) {
	now := s.cfg.Clock.Now().UTC()
	if !store.ValidRecipientID(r.Recipient.ID) {
		return store.Watch{}, &api.Error{Code: api.CodeInvalidRecipient, Field: "recipient.id",
			Message: store.RecipientIDGrammar}
	}
	// A cluster node refused for its plugin set writes nothing, not even
	// the recipient a first registration would create.
	if err := s.admits(); err != nil {
		return store.Watch{}, err
	}
	// The request's own bounds, before anything is written or any kind
	// sees it: a kind name of the grammar (never echoed at any length),
	// params within the host's size and depth.
	if !abi.ValidKind(r.Kind) {
		return store.Watch{}, &api.Error{Code: api.CodeInvalidField, Field: "kind",
			Message: fmt.Sprintf("want 1-%d of a-z 0-9 . _ -", abi.MaxKindLen)}
	}
	if err := kind.CheckParams(r.Params); err != nil {
		return store.Watch{}, err
	}
	if r.Every != nil {
		if err := s.checkEvery(*r.Every); err != nil {
			return store.Watch{}, err
		}
	}
	// Admission comes before the recipient is made: a refused watch (a
	// Work its caller may not read among them) writes nothing at all.
	adm, err := s.cfg.Plugins.Admit(ctx, r.Kind, kind.AdmitRequest{Params: r.Params, Recipient: r.Recipient.ID, Caller: r.Caller})
	if err != nil {
		return store.Watch{}, err
	}
	var rec store.RecipientRecord
	if s.cfg.Recipients != nil {
		var err error
		rec, err = s.cfg.Recipients.EnsureRecipient(ctx, r.Recipient.ID, now)
		if err != nil {
			return store.Watch{}, fmt.Errorf("scheduler: recipient %q: %w", r.Recipient.ID, err)
		}
		if rec.Status != store.StatusRunning {
			return store.Watch{}, &api.Error{Code: api.CodeRecipientNotRunning, Field: "recipient.id",
				Message: fmt.Sprintf("recipient %s is %s; a watch belongs to a running recipient", rec.ID, rec.Status)}
		}
	}
	info, ok := s.cfg.Plugins.Lookup(r.Kind)
	if !ok { // removed between admit and now
		return store.Watch{}, fmt.Errorf("scheduler: kind %q vanished during registration", r.Kind)
	}
	if err := s.checkWorkspace(ctx, info, r, rec); err != nil {
		return store.Watch{}, err
	}
	switch {
	case info.Capability && r.Token == "":
		return store.Watch{}, fmt.Errorf("scheduler: kind %s answers to a capability token and the registration carries none", r.Kind)
	case !info.Capability && r.Token != "":
		return store.Watch{}, fmt.Errorf("scheduler: kind %s answers to no capability token", r.Kind)
	}

	every := info.DefaultEvery
	if every <= 0 {
		every = s.cfg.DefaultEvery
	}
	if f, ok := s.fallbackOf(r.Kind); ok {
		every = f // a hook brings the look forward
	}
	if r.Every != nil {
		every = *r.Every
	}
	if info.Pushed {
		// Woken by Poke when its subject changes, probed once now and
		// otherwise only at its deadline.
		if r.Every != nil {
			return store.Watch{}, &api.Error{Code: api.CodeInvalidField, Field: "every",
				Message: fmt.Sprintf("kind %s is woken when its subject changes, never probed on a cadence; leave every out", r.Kind)}
		}
		every = s.cfg.MaxDeadline
	}
	// A kind's default is held to the longest deadline, as a cadence the
	// caller names is (checkEvery).
	every = min(every, s.cfg.MaxDeadline)
	if err := s.checkEvery(every); err != nil {
		return store.Watch{}, err
	}

	var expires *time.Time
	switch {
	case info.Standing:
		if r.ExpiresAt != nil {
			return store.Watch{}, &api.Error{Code: api.CodeInvalidField, Field: "expires_at",
				Message: "a standing kind has no deadline: it lives as long as its recipient runs"}
		}
	default:
		d := now.Add(s.cfg.DefaultDeadline)
		natural := !adm.Deadline.IsZero()
		if natural {
			d = adm.Deadline.UTC()
			// A natural deadline already past (a timer whose instant has
			// gone by) is not refused: the watch is probed at once, and
			// that observation is its final one, so a timer fires.
			if d.Before(now) {
				d = now
			}
		}
		if r.ExpiresAt != nil {
			x := r.ExpiresAt.UTC()
			if !x.After(now) {
				return store.Watch{}, &api.Error{Code: api.CodeInvalidField, Field: "expires_at", Message: "the deadline has passed"}
			}
			// A deadline before the subject's own (a timer's instant plus
			// a minute) ends the wait before the subject can settle: the
			// watch could only expire.
			if natural && x.Before(d) {
				return store.Watch{}, &api.Error{Code: api.CodeInvalidField, Field: "expires_at",
					Message: fmt.Sprintf("%s is before the kind's natural deadline %s (for a timer, its instant plus a minute), so the watch could only expire; leave expires_at out, or set it at or after that",
						x.Format(time.RFC3339), d.Format(time.RFC3339))}
			}
			d = x
		}
		if limit := now.Add(s.cfg.MaxDeadline); d.After(limit) {
			return store.Watch{}, &api.Error{Code: api.CodeDeadlineTooFar, Field: "expires_at",
				Message: fmt.Sprintf("deadline %s is beyond the maximum of %s from now (%s); there is no waiting forever",
					d.Format(time.RFC3339), s.cfg.MaxDeadline, limit.Format(time.RFC3339))}
		}
		expires = &d
	}

	id, err := s.newID(now, adm.PartitionKey)
	if err != nil {
		return store.Watch{}, err
	}
	params := r.Params
	if adm.Params != nil {
		params = adm.Params
	}
	w := store.Watch{
		ID: id, Kind: r.Kind, Params: params, Recipient: r.Recipient, RegisteredBy: r.RegisteredBy,
		State: store.Pending, Receipt: store.ReceiptNone, Every: store.Duration(every),
		Standing: info.Standing, CreatedAt: now, ExpiresAt: expires, Subject: adm.Subject,
		PartitionKey: adm.PartitionKey,
	}
	if r.Token != "" {
		w.Token = store.HashToken(r.Token)
	}
	first := firstCheck(now, adm.NextCheck, expires)
	if first.After(now) {
		// Durable from the start, so a restart arms the watch there too,
		// not at its registration.
		w.NextCheck = first
	}
	if err := s.create(ctx, w, r.Bounded); err != nil {
		return store.Watch{}, err
	}
	e := &entry{id: id, due: first.UnixNano(), every: everyMillis(every)}
	if expires != nil {
		e.deadline = expires.UnixNano()
	}
	if !s.owns(id) {
		// Another node's partition: its scheduler hears of the row from
		// the backend and probes it (Adopt).
		return w, nil
	}
	s.mu.Lock()
	switch _, held := s.byID[id]; {
	case held:
		// The loader read it from the index first.
	case e.due <= s.windowEnd(now.UnixNano()):
		heap.Push(&s.h, e)
		s.byID[id] = e
	default:
		// Beyond the window: the due index holds it (its first check is
		// the row's durable next check), and the loader reads it when
		// the window reaches it.
		s.markBeyond()
	}
	s.mu.Unlock()
	s.signal()
	s.changed(id)
	return w, nil
}

// checkEvery refuses a cadence below the least interval (MinEvery) or
// above the longest deadline (MaxDeadline): a watch probed less often
// than that would never be probed before it expired, and a standing one
// would wait longer than any watch may.
func (s *Scheduler) checkEvery(every time.Duration) error {
	switch {
	case every < s.cfg.MinEvery:
		return &api.Error{Code: api.CodeInvalidField, Field: "every",
			Message: fmt.Sprintf("%s is below the minimum interval %s", every, s.cfg.MinEvery)}
	case every > s.cfg.MaxDeadline:
		return &api.Error{Code: api.CodeInvalidField, Field: "every",
			Message: fmt.Sprintf("%s is above the longest interval %s, the longest deadline this host allows", every, s.cfg.MaxDeadline)}
	}
	return nil
}

// newID is a new watch's id: in the slot of its partition key when admit
// named one, so every watch on one resource shares a partition.
func (s *Scheduler) newID(now time.Time, key string) (store.ID, error) {
	if key == "" {
		return store.NewID(now, s.cfg.IDs)
	}
	return store.NewIDInSlot(now, s.cfg.IDs, store.SlotOf(key))
}

// create writes the row; with Recipients, only if the recipient is running
// in the same transaction, so a pause that lands after the check above
// leaves no live watch behind, and, bounded, only while the recipient
// holds fewer than MaxPending pending watches in that transaction too (a
// *store.TooManyPendingError otherwise).
func (s *Scheduler) create(ctx context.Context, w store.Watch, bounded bool) error {
	if s.cfg.Recipients == nil {
		if err := s.cfg.Store.Create(ctx, w); err != nil {
			return fmt.Errorf("scheduler: register: %w", err)
		}
		return nil
	}
	maxPending := 0
	if bounded {
		maxPending = s.cfg.MaxPending
	}
	err := s.cfg.Recipients.CreateIfRunning(ctx, w, maxPending)
	var nr *store.NotRunningError
	switch {
	case errors.As(err, &nr):
		status := string(nr.Status)
		if status == "" {
			status = "gone"
		}
		return &api.Error{Code: api.CodeRecipientNotRunning, Field: "recipient.id",
			Message: fmt.Sprintf("recipient %s is %s; a watch belongs to a running recipient", nr.Recipient, status)}
	case err != nil:
		return fmt.Errorf("scheduler: register: %w", err)
	}
	return nil
}

// Poke makes every pending watch on subject due now, so a pushed kind's
// watches learn of a change to what they wait on (a new item routed to a
// Work) at once, without a cadence. A watch being probed at that moment is
// probed again as soon as its probe ends. It returns how many it woke.
func (s *Scheduler) Poke(ctx context.Context, subject string) (int, error) {
	ids, err := s.cfg.Store.PendingBySubject(ctx, subject)
	if err != nil {
		return 0, fmt.Errorf("scheduler: poke %s: %w", subject, err)
	}
	return s.pokeIDs(ctx, ids, false), nil
}

// pokeIDs makes the pending watches ids this scheduler owns due now,
// coalesced: one in the ready queue already is not queued again, and one
// being probed is probed once more when its probe ends, however many
// pokes came meanwhile. fresh marks each woken watch's next probe as
// one that must read anew (markPoked). It returns how many it woke.
func (s *Scheduler) pokeIDs(ctx context.Context, ids []store.ID, fresh bool) int {
	now := s.cfg.Clock.Now().UnixNano()
	// A watch of the subject not in memory (due beyond the window) is
	// read from the store and held, due now.
	var absent []store.Schedule
	s.mu.Lock()
	for _, id := range ids {
		if s.byID[id] == nil && s.owns(id) {
			absent = append(absent, store.Schedule{ID: id})
		}
	}
	s.mu.Unlock()
	for i, sc := range absent {
		w, err := s.cfg.Store.Get(ctx, sc.ID)
		if err != nil || w.State != store.Pending {
			absent[i].ID = store.ID{} // gone, or settled meanwhile
			continue
		}
		absent[i] = scheduleOf(w)
	}
	n := 0
	s.mu.Lock()
	for _, sc := range absent {
		if sc.ID == (store.ID{}) || s.byID[sc.ID] != nil {
			continue
		}
		e := s.recovered(sc, now)
		e.setDue(now)
		heap.Push(&s.h, e)
	}
	for _, id := range ids {
		e := s.byID[id]
		switch {
		case e == nil:
			continue
		case e.index >= 0:
			e.setDue(min(e.due, now))
			heap.Fix(&s.h, int(e.index))
		case e.index == inReady:
			// Due already: its probe is still to come.
		default:
			e.index = pokedWhileProbed
		}
		if fresh {
			s.markPoked(id, now)
		}
		n++
	}
	s.mu.Unlock()
	if n > 0 {
		s.signal()
	}
	return n
}

// Cancel settles a pending watch as cancelled; nothing is mailed. reason
// becomes the row's last note, beside its attempt count, so a cancelled
// row keeps its diagnostics. A watch that has already settled is an
// *Error with CodeAlreadySettled.
func (s *Scheduler) Cancel(ctx context.Context, id store.ID, reason string) (store.Watch, error) {
	now := s.cfg.Clock.Now()
	s.mu.Lock()
	var attempts int
	e := s.byID[id]
	if e != nil {
		attempts = e.attempts()
	}
	s.mu.Unlock()
	if e == nil {
		attempts = s.othersAttempts(ctx, id)
	}
	// The store decides: cancel-if-still-pending. A probe's settlement
	// that committed first makes this a conflict; one that commits after
	// finds the row cancelled and writes and sends nothing.
	w, err := s.cfg.Store.Settle(ctx, id, store.Settlement{
		State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: now, Attempts: attempts, LastNote: reason,
	})
	return s.settledOutside(ctx, e, id, w, err)
}

// settledOutside ends a settlement made from outside the probes (a
// cancel, a signal's answer): a watch no longer pending is answered as
// it is now, with a *api.Error of CodeAlreadySettled; a settled one
// leaves memory and is told as changed.
func (s *Scheduler) settledOutside(ctx context.Context, e *entry, id store.ID, w store.Watch, err error) (store.Watch, error) {
	if errors.Is(err, store.ErrNotPending) {
		if cur, gerr := s.cfg.Store.Get(ctx, id); gerr == nil {
			return cur, alreadySettled(cur)
		}
		return store.Watch{}, &api.Error{Code: api.CodeAlreadySettled, Message: fmt.Sprintf("watch %s is no longer pending", id)}
	}
	if err != nil {
		return store.Watch{}, err
	}
	s.mu.Lock()
	s.forget(e)
	s.mu.Unlock()
	s.signal()
	s.changed(id)
	return w, nil
}

// Answerer is a Deliverer that settles an outcome given from outside on
// any node, not fenced on the watch's owner (*delivery.Delivery is one).
type Answerer interface {
	Answer(ctx context.Context, id store.ID, st store.Settlement, m store.Message) (store.Watch, error)
}

// Complete settles a pending watch fired with out, from outside (a
// signal's POST): through the Deliverer's settle-and-mail (its Answer,
// when it is an Answerer, so any node of a cluster takes it), one
// transaction, as a probe's settlement is. The store decides against a
// probe's expiry or a cancel: the first to commit wins, and a watch no
// longer pending is answered as it is, with a *api.Error of
// CodeAlreadySettled.
func (s *Scheduler) Complete(ctx context.Context, id store.ID, out store.Outcome, note string) (store.Watch, error) {
	now := s.cfg.Clock.Now()
	s.mu.Lock()
	var attempts int
	e := s.byID[id]
	if e != nil {
		attempts = e.attempts()
	}
	s.mu.Unlock()
	cur, err := s.cfg.Store.Get(ctx, id)
	if err != nil {
		return store.Watch{}, err
	}
	if cur.State != store.Pending {
		return cur, alreadySettled(cur)
	}
	attempts = max(attempts, cur.Attempts)
	settle := s.cfg.Deliver.Settle
	if a, ok := s.cfg.Deliver.(Answerer); ok {
		settle = a.Answer // on any node: not fenced on the owner
	}
	w, err := settle(ctx, id, store.Settlement{
		State: store.Fired, Outcome: &out, SettledAt: now, Attempts: attempts, LastNote: note,
	}, store.Message{Kind: cur.Kind, Type: store.MessageFired, Outcome: out})
	if w, err = s.settledOutside(ctx, e, id, w, err); err != nil {
		return w, err
	}
	s.cfg.Plugins.Settled(ctx, w)
	return w, nil
}

func alreadySettled(w store.Watch) *api.Error {
	return &api.Error{Code: api.CodeAlreadySettled, Message: fmt.Sprintf("watch %s is already %s", w.ID, w.State)}
}

// othersAttempts is the probe count to keep on a watch this scheduler
// does not hold (another node's, on a cluster) when it cancels it: its
// owner's (Config.OwnerSeen), else the row's, never less than the row's.
func (s *Scheduler) othersAttempts(ctx context.Context, id store.ID) int {
	var n int
	if w, err := s.cfg.Store.Get(ctx, id); err == nil {
		n = w.Attempts
	}
	if s.cfg.OwnerSeen != nil {
		if seen, ok := s.cfg.OwnerSeen(ctx, id); ok {
			n = max(n, seen.Attempts)
		}
	}
	return n
}

// forget drops e from the schedule, if it is still e's; the caller holds
// mu. An entry in the ready queue is left there and skipped when a worker
// comes to it; one in flight is dropped when its probe ends.
func (s *Scheduler) forget(e *entry) {
	if e == nil || s.byID[e.id] != e {
		return
	}
	if e.index >= 0 {
		heap.Remove(&s.h, int(e.index))
	}
	delete(s.byID, e.id)
	delete(s.pokedAt, e.id)
}

// checkWorkspace refuses a watch of a kind that runs commands when the
// recipient whose workspace they would run in (kind.WorkspaceOwner: the
// registering principal's, else the watch's recipient's) declares none:
// every probe would fail, so the agent must not halt on it.
func (s *Scheduler) checkWorkspace(ctx context.Context, info kind.Info, r Registration, rec store.RecipientRecord) error {
	if s.cfg.Recipients == nil || !slices.Contains(info.Capabilities, abi.CapabilityExec) {
		return nil
	}
	owner := kind.WorkspaceOwner(r.Recipient.ID, r.RegisteredBy)
	if owner != r.Recipient.ID {
		var err error
		rec, err = s.cfg.Recipients.GetRecipient(ctx, owner)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("scheduler: recipient %q: %w", owner, err)
		}
	}
	if rec.Workspace != "" {
		return nil
	}
	who := "the watch's recipient"
	if owner != r.Recipient.ID {
		who = "the recipient named like the principal that registers the watch"
	}
	return &api.Error{Code: api.CodeWatchUnobservable, Setting: "recipients." + owner + ".workspace",
		Message: fmt.Sprintf("kind %s runs its command in the workspace of %s, %s, which declares none (vigil recipient set %s --workspace DIR)", r.Kind, who, owner, owner)}
}

// scheduleOf is the schedule of a pending row.
func scheduleOf(w store.Watch) store.Schedule {
	sc := store.Schedule{ID: w.ID, Every: time.Duration(w.Every), Attempts: w.Attempts, Next: w.NextCheck}
	if w.ExpiresAt != nil {
		sc.Expires = *w.ExpiresAt
	}
	return sc
}
