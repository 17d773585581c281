package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// WorkState is where a Work item is in its life.
type WorkState string

// Work states. A Work is open until someone completes it; completed is
// final.
const (
	WorkOpen      WorkState = "open"
	WorkCompleted WorkState = "completed"
)

// Valid reports whether s is a known Work state.
func (s WorkState) Valid() bool { return s == WorkOpen || s == WorkCompleted }

// ErrWorkConflict is a Work transition its current state forbids: claiming
// a completed Work or one another recipient holds, completing it twice.
var ErrWorkConflict = errors.New("store: the work item's state forbids this")

// Work is a durable work item: one per observed thread. It owns its thread
// key, so later items of the thread become its inputs.
type Work struct {
	ID        ID        `json:"id"`
	Scope     string    `json:"scope"`
	Kind      string    `json:"kind"`
	Title     string    `json:"title"`
	ThreadKey string    `json:"thread_key"`
	State     WorkState `json:"state"`
	// Inputs counts the inputs, numbered from 1.
	Inputs int `json:"inputs"`
	// Consumed is the last input the Work's claimer has been given: every
	// input so far by its claim, then each wake to the claimer that
	// carried more. A wake to any other recipient leaves it alone.
	Consumed int `json:"consumed"`
	// Cursors are, for each other recipient a wake carried inputs to, the
	// last input that recipient has been given (at most MaxWorkCursors of
	// them). Each recipient waits from its own cursor, so no wait another
	// recipient reads moves what a recipient's next wait carries.
	Cursors     map[string]int `json:"cursors,omitempty"`
	ClaimedBy   string         `json:"claimed_by,omitempty"`
	CreatedAt   time.Time      `json:"created_at"`
	ClaimedAt   *time.Time     `json:"claimed_at,omitempty"`
	CompletedAt *time.Time     `json:"completed_at,omitempty"`
}

// MaxWorkCursors bounds a Work's Cursors. A wake to one more recipient
// drops the cursor furthest behind: that recipient's next wait starts
// from the first input again, a repeat, never a loss.
const MaxWorkCursors = 64

// ConsumedBy is the last input recipient has been given: the claimer's
// Consumed, another recipient's cursor, or 0 for a recipient never given
// any. A wait that names no after starts there.
func (w Work) ConsumedBy(recipient string) int {
	if recipient != "" && recipient == w.ClaimedBy {
		return w.Consumed
	}
	return w.Cursors[recipient]
}

// Consume records that recipient has been given the inputs up to n (no
// further than Inputs): the claimer's Consumed, or recipient's own
// cursor. Neither moves back.
func (w *Work) Consume(recipient string, n int) {
	n = min(n, w.Inputs)
	if recipient == "" || n <= w.ConsumedBy(recipient) {
		return
	}
	if recipient == w.ClaimedBy {
		w.Consumed = n
		return
	}
	if _, ok := w.Cursors[recipient]; !ok && len(w.Cursors) >= MaxWorkCursors {
		behind := ""
		for r, c := range w.Cursors {
			if behind == "" || c < w.Cursors[behind] || c == w.Cursors[behind] && r < behind {
				behind = r
			}
		}
		delete(w.Cursors, behind)
	}
	if w.Cursors == nil {
		w.Cursors = map[string]int{}
	}
	w.Cursors[recipient] = n
}

// Claim gives the Work to recipient at now, who is given every input so
// far: Consumed moves to Inputs, and recipient's cursor, now Consumed,
// goes. The caller has checked that the Work is open and not another's.
func (w *Work) Claim(recipient string, now time.Time) {
	if w.ClaimedBy == "" {
		t := now.UTC()
		w.ClaimedAt = &t
	}
	w.ClaimedBy, w.Consumed = recipient, w.Inputs
	delete(w.Cursors, recipient)
	if len(w.Cursors) == 0 {
		w.Cursors = nil
	}
}

// WorkInput is one item routed to a Work, in order from 1.
type WorkInput struct {
	N          int       `json:"n"`
	EventSeq   uint64    `json:"event_seq"`
	EventKey   string    `json:"event_key"`
	Source     string    `json:"source"`
	Item       string    `json:"item"`
	Revision   string    `json:"revision,omitempty"`
	Thread     string    `json:"thread"`
	Text       string    `json:"text"`
	Reporter   string    `json:"reporter,omitempty"`
	RecordedAt time.Time `json:"recorded_at"`
}

// RouteAction is what routing an item did.
type RouteAction string

// Route actions.
const (
	RouteCreated  RouteAction = "created"  // a new Work owns the thread
	RouteAppended RouteAction = "appended" // the item is the owner's next input
	RouteSkipped  RouteAction = "skipped"  // the owner takes no input (another kind, or completed)
	RouteDropped  RouteAction = "dropped"  // the step asked to drop it (its source is gone)
	RouteDone     RouteAction = "done"     // the cursor was already past it
)

// RouteStep routes one event to the Work owning its thread, and advances
// the router's cursor. With nobody owning the thread key it creates New
// with Input as its first input; with an open Work of OwnerKind owning it,
// it appends Input; otherwise it skips the item. A step at or before the
// cursor does nothing (RouteDone), so replaying the stream after a crash
// routes nothing twice.
type RouteStep struct {
	Cursor string // the router's name
	Seq    uint64 // the event's sequence in its stream
	// Drop advances the cursor and changes no Work.
	Drop      bool
	ThreadKey string
	// OwnerKind is the only kind of Work that takes the item as input.
	OwnerKind string
	// New is the Work to create when nobody owns the thread; its ID,
	// Scope, Kind, Title and CreatedAt are used.
	New   Work
	Input WorkInput
}

const maxThreadKey = 1024

type storedWork struct {
	V int `json:"v"`
	Work
}

type storedInput struct {
	V int `json:"v"`
	WorkInput
}

// Routed is what one step of a batch did.
type Routed struct {
	Action RouteAction
	Work   Work
}

// maxRouteBatch bounds the steps of one transaction. A step writes an input
// of at most about 17 KiB (16 KiB of text and its fields) and a Work row,
// so a batch stays near 600 KiB, well inside the 2.4 MiB badger allows a
// transaction with Open's 16 MiB memtables.
const maxRouteBatch = 32

// CheckRouteSteps is what every backend's RouteBatch asks of its steps
// before it writes any: each names a cursor, and each that is not a drop
// a thread key of 1 to 1024 bytes.
func CheckRouteSteps(steps []RouteStep) error {
	for _, st := range steps {
		if st.Cursor == "" {
			return errors.New("store: route step without a cursor")
		}
		if !st.Drop && (st.ThreadKey == "" || len(st.ThreadKey) > maxThreadKey) {
			return fmt.Errorf("store: thread key: want 1-%d bytes", maxThreadKey)
		}
	}
	return nil
}

func (t tx) getWork(id ID) (Work, error) {
	v, ok, err := t.Get(kWork(id))
	if err != nil {
		return Work{}, err
	}
	if !ok {
		return Work{}, fmt.Errorf("%w: work %s", ErrNotFound, id)
	}
	var sw storedWork
	if err := json.Unmarshal(v, &sw); err != nil || sw.V != rowVersion || !sw.State.Valid() {
		return Work{}, fmt.Errorf("%w: work %s is held aside (unreadable by this build)", ErrNotFound, id)
	}
	return sw.Work, nil
}

// putWork writes w and moves its scope index entry from prev's state.
func (t tx) putWork(w Work, prev *Work) error {
	b, err := json.Marshal(storedWork{V: rowVersion, Work: w})
	if err != nil {
		return err
	}
	t.Put(kWork(w.ID), b)
	if prev != nil && prev.State != w.State {
		t.Delete(kWorkScope(prev.Scope, prev.State, prev.ID))
	}
	t.Put(kWorkScope(w.Scope, w.State, w.ID), nil)
	return nil
}

func (t tx) putInput(id ID, in WorkInput) error {
	b, err := json.Marshal(storedInput{V: rowVersion, WorkInput: in})
	if err != nil {
		return err
	}
	t.Put(kWorkInput(id, in.N), b)
	return nil
}

// RouterCursor is the last event seq the named router has routed (0 for
// none).
func (s *Store) RouterCursor(ctx context.Context, name string) (uint64, error) {
	var seq uint64
	err := s.view(ctx, func(t tx) error {
		var err error
		seq, _, err = t.seqOf(kRouter(name))
		return err
	})
	return seq, err
}

// RouteBatch applies steps in order (see RouteStep), committing up to
// maxRouteBatch of them and the cursor per transaction (the cursor read
// and written in each, so two routers replaying one stream route nothing
// twice): the router's throughput is bounded by commits per batch, not
// per item. It returns what each step did and the Work it reached (zero
// for skipped, dropped and done). A step sees the Work earlier steps of
// its batch created or fed. On an error the results of the batches
// already committed are returned with it.
func (s *Store) RouteBatch(ctx context.Context, steps []RouteStep) ([]Routed, error) {
	if err := CheckRouteSteps(steps); err != nil {
		return nil, err
	}
	out := make([]Routed, 0, len(steps))
	for len(steps) > 0 {
		n := min(len(steps), maxRouteBatch)
		var batch []Routed
		err := s.update(ctx, TxOptions{Name: "route"}, func(t tx) error {
			batch = batch[:0]
			for _, st := range steps[:n] {
				r, err := t.routeStep(st)
				if err != nil {
					return err
				}
				batch = append(batch, r)
			}
			return nil
		})
		if err != nil {
			return out, err
		}
		out = append(out, batch...)
		steps = steps[n:]
	}
	return out, nil
}

// routeStep is one step inside a transaction.
func (t tx) routeStep(st RouteStep) (Routed, error) {
	cur, _, err := t.seqOf(kRouter(st.Cursor))
	if err != nil {
		return Routed{}, err
	}
	if st.Seq <= cur {
		return Routed{Action: RouteDone}, nil
	}
	t.Put(kRouter(st.Cursor), seqBytes(st.Seq))
	if st.Drop {
		return Routed{Action: RouteDropped}, nil
	}
	v, owned, err := t.Get(kWorkOwner(st.ThreadKey))
	if err != nil {
		return Routed{}, err
	}
	if !owned {
		w := st.New
		w.ThreadKey, w.State, w.Inputs = st.ThreadKey, WorkOpen, 1
		in := st.Input
		in.N = 1
		if err := t.putWork(w, nil); err != nil {
			return Routed{}, err
		}
		if err := t.putInput(w.ID, in); err != nil {
			return Routed{}, err
		}
		t.Put(kWorkOwner(st.ThreadKey), bytes.Clone(w.ID[:]))
		return Routed{Action: RouteCreated, Work: w}, nil
	}
	if len(v) != len(ID{}) {
		return Routed{}, fmt.Errorf("%w: owner of %q", ErrCorrupt, st.ThreadKey)
	}
	w, err := t.getWork(ID(v))
	if err != nil || w.Kind != st.OwnerKind || w.State != WorkOpen {
		return Routed{Action: RouteSkipped}, nil
	}
	prev := w
	w.Inputs++
	in := st.Input
	in.N = w.Inputs
	if err := t.putInput(w.ID, in); err != nil {
		return Routed{}, err
	}
	return Routed{Action: RouteAppended, Work: w}, t.putWork(w, &prev)
}

// GetWork reads a Work item.
func (s *Store) GetWork(ctx context.Context, id ID) (Work, error) {
	var w Work
	err := s.view(ctx, func(t tx) error {
		var err error
		w, err = t.getWork(id)
		return err
	})
	return w, err
}

// WorkInputs returns the Work's inputs numbered after after, in order.
func (s *Store) WorkInputs(ctx context.Context, id ID, after int) ([]WorkInput, error) {
	var out []WorkInput
	err := s.view(ctx, func(t tx) error {
		out = out[:0]
		add := func(v []byte) {
			var si storedInput
			if json.Unmarshal(v, &si) == nil && si.V == rowVersion {
				out = append(out, si.WorkInput)
			}
		}
		if !s.plan.Remote {
			r := Range{Prefix: kWorkInput(id, 0), Fixed: 1}
			return t.Scan(r.FromKey(kWorkInput(id, after+1)), func(_ Key, v []byte) (bool, error) {
				if err := ctx.Err(); err != nil {
					return false, err
				}
				add(v)
				return true, nil
			})
		}
		// Remote: the Work says how many there are; read them by key.
		w, err := t.getWork(id)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		for n := after + 1; n <= w.Inputs; n++ {
			v, ok, err := t.Get(kWorkInput(id, n))
			if err != nil {
				return err
			}
			if ok {
				add(v)
			}
		}
		return nil
	})
	return out, err
}

// ListWork returns the scope's Work in state st (every state when st is
// ""), oldest first.
func (s *Store) ListWork(ctx context.Context, scope string, st WorkState) ([]Work, error) {
	var out []Work
	err := s.view(ctx, func(t tx) error {
		out = out[:0]
		r := Range{Prefix: kWorkScope(scope, st, ID{}), Fixed: 1, KeysOnly: true}
		if st != "" {
			r.Fixed = 2
		}
		return t.Scan(r, func(k Key, _ []byte) (bool, error) {
			if err := ctx.Err(); err != nil {
				return false, err
			}
			w, err := t.getWork(k.ID)
			if errors.Is(err, ErrNotFound) {
				return true, nil // held aside
			}
			if err != nil {
				return false, err
			}
			if w.Scope == scope && string(w.State) == k.Sub {
				out = append(out, w) // else a stale entry
			}
			return true, nil
		})
	})
	if err == nil && st == "" {
		// The index orders by state first; order by age across states.
		slices.SortFunc(out, func(a, b Work) int { return bytes.Compare(a.ID[:], b.ID[:]) })
	}
	return out, err
}

// transitionWork applies f to the Work in one transaction, honouring
// idem, the idempotency key of the request it answers (nil: none).
func (s *Store) transitionWork(ctx context.Context, idem *Idem, id ID, f func(w *Work) error) (Work, error) {
	var out Work
	err := s.update(ctx, TxOptions{Name: "work"}, func(t tx) error {
		if idem != nil {
			if err := t.prefetch(kIdem(idem.Principal, idem.Key), kWork(id)); err != nil {
				return err
			}
		}
		if err := t.checkIdem(idem); err != nil {
			return err
		}
		w, err := t.getWork(id)
		if err != nil {
			return err
		}
		prev := w
		if err := f(&w); err != nil {
			return err
		}
		out = w
		if err := t.putWork(w, &prev); err != nil {
			return err
		}
		return t.keepIdem(idem, w)
	})
	if err == nil {
		s.noteIdem(idem)
	}
	return out, err
}

// ClaimWork gives an open Work to recipient, who is then given every input
// so far (Work.Claim: Consumed moves to Inputs). Claiming again by the same
// recipient is allowed; by another, or of a completed Work, is
// ErrWorkConflict.
func (s *Store) ClaimWork(ctx context.Context, id ID, recipient string, now time.Time) (Work, error) {
	return s.transitionWork(ctx, IdemOf(ctx), id, func(w *Work) error {
		switch {
		case w.State != WorkOpen:
			return fmt.Errorf("%w: work %s is %s", ErrWorkConflict, id, w.State)
		case w.ClaimedBy != "" && w.ClaimedBy != recipient:
			return fmt.Errorf("%w: work %s is claimed by %s", ErrWorkConflict, id, w.ClaimedBy)
		}
		w.Claim(recipient, now)
		return nil
	})
}

// CompleteWork makes an open Work completed: later items of its thread
// start nothing. Completing a completed Work is ErrWorkConflict.
func (s *Store) CompleteWork(ctx context.Context, id ID, now time.Time) (Work, error) {
	return s.completeWork(ctx, id, now, nil)
}

// CompleteWorkAs is CompleteWork on the condition, checked in the same
// transaction, that the Work is still claimed by claimedBy ("": still
// unclaimed), as it was when the caller was authorized to complete it;
// otherwise ErrWorkConflict.
func (s *Store) CompleteWorkAs(ctx context.Context, id ID, now time.Time, claimedBy string) (Work, error) {
	return s.completeWork(ctx, id, now, &claimedBy)
}

// completeWork honours the request's idempotency key when it is
// CompleteWorkAs (claimedBy set), the route's write.
func (s *Store) completeWork(ctx context.Context, id ID, now time.Time, claimedBy *string) (Work, error) {
	var idem *Idem
	if claimedBy != nil {
		idem = IdemOf(ctx)
	}
	return s.transitionWork(ctx, idem, id, func(w *Work) error {
		if w.State != WorkOpen {
			return fmt.Errorf("%w: work %s is already %s", ErrWorkConflict, id, w.State)
		}
		if claimedBy != nil && w.ClaimedBy != *claimedBy {
			return fmt.Errorf("%w: work %s was claimed by %q meanwhile", ErrWorkConflict, id, w.ClaimedBy)
		}
		ts := now.UTC()
		w.State, w.CompletedAt = WorkCompleted, &ts
		return nil
	})
}

// ConsumeWork records that recipient has been given the Work's inputs up
// to n (Work.Consume): the claimer's Consumed, or recipient's own cursor.
// Neither moves back.
func (s *Store) ConsumeWork(ctx context.Context, id ID, recipient string, n int) (Work, error) {
	return s.transitionWork(ctx, nil, id, func(w *Work) error {
		w.Consume(recipient, n)
		return nil
	})
}
