package observe

import (
	"context"
	"errors"
	"fmt"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/store"
)

// ListWork lists a configured scope's Work, by state ("" for every state).
func (ob *Observer) ListWork(ctx context.Context, scope string, st store.WorkState) ([]store.Work, error) {
	if !ob.cfg.Load().scope(scope) {
		return nil, fmt.Errorf("%w %q", ErrUnknownScope, scope)
	}
	if st != "" && !st.Valid() {
		return nil, &api.Error{Code: api.CodeInvalidField, Field: "state", Message: "want open or completed"}
	}
	return ob.o.Store.ListWork(ctx, scope, st)
}

// GetWork returns a Work and its inputs in order.
func (ob *Observer) GetWork(ctx context.Context, id store.ID) (store.Work, []store.WorkInput, error) {
	w, err := ob.o.Store.GetWork(ctx, id)
	if err != nil {
		return w, nil, err
	}
	in, err := ob.o.Store.WorkInputs(ctx, id, 0)
	return w, in, err
}

// ClaimWork gives the Work to recipient, who is given every input so far.
// A recipient that is paused or stopped claims nothing: a 409
// recipient_not_running, as it takes no new watch; one not yet known may
// claim (its first watch creates it running). The record is read before
// the claim's own transaction, so a pause landing between the two leaves
// what a pause after the claim leaves: claimed Work whose claimer is
// paused.
func (ob *Observer) ClaimWork(ctx context.Context, id store.ID, recipient string) (store.Work, []store.WorkInput, error) {
	rec, err := ob.o.Store.GetRecipient(ctx, recipient)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return store.Work{}, nil, err
	case rec.Status != store.StatusRunning:
		return store.Work{}, nil, &api.Error{Code: api.CodeRecipientNotRunning, Field: "recipient.id",
			Message: fmt.Sprintf("recipient %s is %s; a recipient that is not running claims no Work", recipient, rec.Status)}
	}
	w, err := ob.o.Store.ClaimWork(ctx, id, recipient, ob.o.Clock.Now())
	if err != nil {
		return w, nil, workError(err)
	}
	in, err := ob.o.Store.WorkInputs(ctx, id, 0)
	return w, in, err
}

// CompleteWorkAs completes the Work on the condition that it is still
// claimed by claimedBy ("": still unclaimed), as it was when the caller
// was allowed to complete it; otherwise a work_conflict. Later items of
// its thread start nothing, and a watch parked on it is woken to say so.
func (ob *Observer) CompleteWorkAs(ctx context.Context, id store.ID, claimedBy string) (store.Work, error) {
	w, err := ob.o.Store.CompleteWorkAs(ctx, id, ob.o.Clock.Now(), claimedBy)
	if err != nil {
		return w, workError(err)
	}
	ob.poke(ctx, id)
	return w, nil
}

func workError(err error) error {
	if errors.Is(err, store.ErrWorkConflict) {
		return &api.Error{Code: api.CodeWorkConflict, Message: err.Error()}
	}
	return err
}
