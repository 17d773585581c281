package natsstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vigilhq/vigil/store"
)

// Key layout of Work.
//
//	wk.<id>                         a Work
//	wi.<id>.<n>                     its input n (8 hex digits)
//	wo.<tok thread>                 the thread's owner (16 bytes of id)
//	wsc.<tok scope>.<state>.<id>    scope index
//	rt.<tok router>                 a router's cursor (8 bytes)
func workKey(id store.ID) string { return "wk." + id.String() }
func workInputKey(id store.ID, n int) string {
	return fmt.Sprintf("wi.%s.%08x", id.String(), uint32(n))
}
func workOwnerKey(thread string) string { return "wo." + tok(thread) }
func workScopeKey(scope string, st store.WorkState, id store.ID) string {
	return "wsc." + tok(scope) + "." + string(st) + "." + id.String()
}
func routerKey(name string) string { return "rt." + tok(name) }

// maxRouteBatch is package store's bound on the steps of one commit.
const maxRouteBatch = 32

type storedWork struct {
	V int `json:"v"`
	store.Work
}

type storedInput struct {
	V int `json:"v"`
	store.WorkInput
}

func getWork(t *txn, id store.ID) (store.Work, error) {
	e, err := t.get(workKey(id))
	if err != nil {
		return store.Work{}, err
	}
	if !e.exists {
		return store.Work{}, fmt.Errorf("%w: work %s", store.ErrNotFound, id)
	}
	var sw storedWork
	if err := json.Unmarshal(e.val, &sw); err != nil || sw.V != rowVersion || !sw.State.Valid() {
		return store.Work{}, fmt.Errorf("%w: work %s is held aside (unreadable by this build)", store.ErrNotFound, id)
	}
	return sw.Work, nil
}

func putWork(t *txn, w store.Work, prev *store.Work) error {
	b, err := json.Marshal(storedWork{V: rowVersion, Work: w})
	if err != nil {
		return err
	}
	t.put(workKey(w.ID), b)
	if prev != nil && prev.State != w.State {
		t.del(workScopeKey(prev.Scope, prev.State, prev.ID))
	}
	t.put(workScopeKey(w.Scope, w.State, w.ID), nil)
	return nil
}

func putInput(t *txn, id store.ID, in store.WorkInput) error {
	b, err := json.Marshal(storedInput{V: rowVersion, WorkInput: in})
	if err != nil {
		return err
	}
	t.put(workInputKey(id, in.N), b)
	return nil
}

// RouterCursor is the last event seq the named router has routed.
func (s *Store) RouterCursor(ctx context.Context, name string) (uint64, error) {
	var seq uint64
	err := s.view(ctx, func(t *txn) error {
		var err error
		seq, err = lastSeq(t, routerKey(name))
		return err
	})
	return seq, err
}

// RouteBatch applies steps in order (see store.RouteStep), up to
// maxRouteBatch of them and the cursor per commit, each commit fenced on
// the cursor's revision: two routers replaying one stream route nothing
// twice.
func (s *Store) RouteBatch(ctx context.Context, steps []store.RouteStep) ([]store.Routed, error) {
	if err := store.CheckRouteSteps(steps); err != nil {
		return nil, err
	}
	out := make([]store.Routed, 0, len(steps))
	for len(steps) > 0 {
		n := min(len(steps), maxRouteBatch)
		var batch []store.Routed
		err := s.update(ctx, "route", func(t *txn) error {
			batch = batch[:0]
			for _, st := range steps[:n] {
				r, err := routeStep(t, st)
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

func routeStep(t *txn, st store.RouteStep) (store.Routed, error) {
	cur, err := lastSeq(t, routerKey(st.Cursor))
	if err != nil {
		return store.Routed{}, err
	}
	if st.Seq <= cur {
		return store.Routed{Action: store.RouteDone}, nil
	}
	t.put(routerKey(st.Cursor), binary.BigEndian.AppendUint64(nil, st.Seq))
	if st.Drop {
		return store.Routed{Action: store.RouteDropped}, nil
	}
	oe, err := t.get(workOwnerKey(st.ThreadKey))
	if err != nil {
		return store.Routed{}, err
	}
	if !oe.exists {
		w := st.New
		w.ThreadKey, w.State, w.Inputs = st.ThreadKey, store.WorkOpen, 1
		in := st.Input
		in.N = 1
		if err := putWork(t, w, nil); err != nil {
			return store.Routed{}, err
		}
		if err := putInput(t, w.ID, in); err != nil {
			return store.Routed{}, err
		}
		t.put(workOwnerKey(st.ThreadKey), w.ID[:])
		return store.Routed{Action: store.RouteCreated, Work: w}, nil
	}
	if len(oe.val) != 16 {
		return store.Routed{}, fmt.Errorf("%w: owner of %q", store.ErrCorrupt, st.ThreadKey)
	}
	w, err := getWork(t, store.ID(oe.val))
	if err != nil || w.Kind != st.OwnerKind || w.State != store.WorkOpen {
		return store.Routed{Action: store.RouteSkipped}, nil
	}
	prev := w
	w.Inputs++
	in := st.Input
	in.N = w.Inputs
	if err := putInput(t, w.ID, in); err != nil {
		return store.Routed{}, err
	}
	return store.Routed{Action: store.RouteAppended, Work: w}, putWork(t, w, &prev)
}

// GetWork reads a Work item.
func (s *Store) GetWork(ctx context.Context, id store.ID) (store.Work, error) {
	var w store.Work
	err := s.view(ctx, func(t *txn) error {
		var err error
		w, err = getWork(t, id)
		return err
	})
	return w, err
}

// WorkInputs returns the Work's inputs numbered after after, in order.
func (s *Store) WorkInputs(ctx context.Context, id store.ID, after int) ([]store.WorkInput, error) {
	var out []store.WorkInput
	err := s.view(ctx, func(t *txn) error {
		w, err := getWork(t, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		for n := after + 1; n <= w.Inputs; n++ {
			e, err := t.get(workInputKey(id, n))
			if err != nil {
				return err
			}
			var si storedInput
			if !e.exists || json.Unmarshal(e.val, &si) != nil || si.V != rowVersion {
				continue
			}
			out = append(out, si.WorkInput)
		}
		return nil
	})
	return out, err
}

// ListWork returns the scope's Work in state st (every state when st is
// ""), oldest first.
func (s *Store) ListWork(ctx context.Context, scope string, st store.WorkState) ([]store.Work, error) {
	pattern := "wsc." + tok(scope) + ".>"
	if st != "" {
		pattern = "wsc." + tok(scope) + "." + string(st) + ".>"
	}
	keys, err := s.scan(ctx, pattern, true)
	if err != nil {
		return nil, err
	}
	t := s.newTxn(ctx)
	var out []store.Work
	for _, k := range keys {
		id, ok := idOf(k.key)
		if !ok {
			continue
		}
		w, err := getWork(t, id)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			return nil, err
		}
		if w.Scope != scope || (st != "" && w.State != st) || !strings.HasSuffix(k.key, "."+string(w.State)+"."+id.String()) {
			continue // a stale index entry
		}
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b store.Work) int { return bytes.Compare(a.ID[:], b.ID[:]) })
	return out, nil
}

func (s *Store) transitionWork(ctx context.Context, id store.ID, f func(w *store.Work) error) (store.Work, error) {
	return s.transitionWorkKeyed(ctx, nil, id, f)
}

// transitionWorkKeyed is transitionWork honouring idem, the idempotency
// key of the request it answers (nil: none).
func (s *Store) transitionWorkKeyed(ctx context.Context, idem *store.Idem, id store.ID, f func(w *store.Work) error) (store.Work, error) {
	var out store.Work
	err := s.update(ctx, "work", func(t *txn) error {
		if idem != nil {
			if err := t.prefetch(append(idemKeyOf(idem), workKey(id))...); err != nil {
				return err
			}
		}
		if err := checkIdem(t, idem); err != nil {
			return err
		}
		w, err := getWork(t, id)
		if err != nil {
			return err
		}
		prev := w
		if err := f(&w); err != nil {
			return err
		}
		out = w
		if err := putWork(t, w, &prev); err != nil {
			return err
		}
		return keepIdem(t, idem, w)
	})
	if err == nil {
		s.noteIdem(idem)
	}
	return out, err
}

// ClaimWork gives an open Work to recipient; by another, or of a
// completed Work, store.ErrWorkConflict.
func (s *Store) ClaimWork(ctx context.Context, id store.ID, recipient string, now time.Time) (store.Work, error) {
	return s.transitionWorkKeyed(ctx, store.IdemOf(ctx), id, func(w *store.Work) error {
		switch {
		case w.State != store.WorkOpen:
			return fmt.Errorf("%w: work %s is %s", store.ErrWorkConflict, id, w.State)
		case w.ClaimedBy != "" && w.ClaimedBy != recipient:
			return fmt.Errorf("%w: work %s is claimed by %s", store.ErrWorkConflict, id, w.ClaimedBy)
		}
		w.Claim(recipient, now)
		return nil
	})
}

// CompleteWork makes an open Work completed; twice is
// store.ErrWorkConflict.
func (s *Store) CompleteWork(ctx context.Context, id store.ID, now time.Time) (store.Work, error) {
	return s.completeWork(ctx, id, now, nil)
}

// CompleteWorkAs is CompleteWork on the condition that the Work is still
// claimed by claimedBy ("": still unclaimed).
func (s *Store) CompleteWorkAs(ctx context.Context, id store.ID, now time.Time, claimedBy string) (store.Work, error) {
	return s.completeWork(ctx, id, now, &claimedBy)
}

// completeWork honours the request's idempotency key when it is
// CompleteWorkAs (claimedBy set), the route's write.
func (s *Store) completeWork(ctx context.Context, id store.ID, now time.Time, claimedBy *string) (store.Work, error) {
	var idem *store.Idem
	if claimedBy != nil {
		idem = store.IdemOf(ctx)
	}
	return s.transitionWorkKeyed(ctx, idem, id, func(w *store.Work) error {
		if w.State != store.WorkOpen {
			return fmt.Errorf("%w: work %s is already %s", store.ErrWorkConflict, id, w.State)
		}
		if claimedBy != nil && w.ClaimedBy != *claimedBy {
			return fmt.Errorf("%w: work %s was claimed by %q meanwhile", store.ErrWorkConflict, id, w.ClaimedBy)
		}
		ts := now.UTC()
		w.State, w.CompletedAt = store.WorkCompleted, &ts
		return nil
	})
}

// ConsumeWork records that recipient has been given the Work's inputs up
// to n (store.Work.Consume); neither Consumed nor a cursor moves back.
func (s *Store) ConsumeWork(ctx context.Context, id store.ID, recipient string, n int) (store.Work, error) {
	return s.transitionWork(ctx, id, func(w *store.Work) error {
		w.Consume(recipient, n)
		return nil
	})
}
