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
			if err := t.Prefetch(kIdem(idem.Principal, idem.Key), kWork(id)); err != nil {
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
