package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/authz"
	"github.com/vigilhq/vigil/internal/observe"
	"github.com/vigilhq/vigil/store"
)

// observing is the observe routes' middleware: a server built without an
// observer has none of them.
func (s *server) observing(c *fiber.Ctx) error {
	if s.d.Observe == nil {
		return &api.Error{Code: api.CodeNotFound, Message: "this server observes no sources"}
	}
	return c.Next()
}

func scopeParam(c *fiber.Ctx) (string, error) {
	scope, ok := param(c, "scope")
	if !ok || len(scope) == 0 || len(scope) > 64 {
		return "", &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no scope %q", scope)}
	}
	return scope, nil
}

// recordable is what an observer may also say: whether a scope has the
// record operation at all (observe.Observer.Recordable), asked before the
// body is read, so a scope whose last observe entry is gone answers so
// whatever is sent. Without it, Record says the same after decoding.
type recordable interface {
	Recordable(scope string) error
}

func (s *server) recordObserved(c *fiber.Ctx) error {
	scope, err := scopeParam(c)
	if err != nil {
		return err
	}
	if r, ok := s.d.Observe.(recordable); ok {
		if err := r.Recordable(scope); err != nil {
			return err
		}
	}
	rec, err := observe.DecodeRecord(c.Body())
	if err != nil {
		return err
	}
	got, err := s.d.Observe.Record(c.UserContext(), Principal(c), scope, rec)
	if err != nil { // rate_limited's Retry-After is set by the error handler
		return err
	}
	if !got.Duplicate {
		a, err := recordAnswer(c.UserContext(), got.Event)
		if err != nil {
			return err
		}
		return send(c, a)
	}
	return c.Status(fiber.StatusOK).JSON(toObserveResult(got.Event, got.Duplicate, got.ThreadKey))
}

// toObserveResult is a record's answer: its event (the first one again
// for a duplicate), and its thread's key.
func toObserveResult(e store.Event, duplicate bool, threadKey string) api.ObserveResult {
	var item observe.ItemV1
	_ = json.Unmarshal(e.Payload, &item)
	return api.ObserveResult{Duplicate: duplicate, ThreadKey: threadKey, Event: api.ObservedEvent{
		Seq: e.Seq, Key: e.Key, Type: e.Type, Source: item.Source, Reporter: e.Actor, Run: e.Run, OccurredAt: e.OccurredAt,
	}}
}

func (s *server) listWork(c *fiber.Ctx) error {
	scope, err := scopeParam(c)
	if err != nil {
		return err
	}
	if err := s.allow(c, authz.Action{Verb: authz.ReadScope, Scope: scope}); err != nil {
		return err
	}
	st := store.WorkState(c.Query("state"))
	if st != "" && !st.Valid() {
		return &api.Error{Code: api.CodeInvalidField, Field: "state", Message: "want open or completed"}
	}
	ws, err := s.d.Observe.ListWork(c.UserContext(), scope, st)
	if err != nil {
		return err
	}
	out := api.WorkList{Work: make([]api.Work, 0, len(ws))}
	for _, w := range ws {
		out.Work = append(out.Work, toWork(w, nil))
	}
	return c.JSON(out)
}

// workFor reads the Work item the route's :id names, as the principal may
// see it: an unknown id, a malformed one and one it may not see all answer
// the same 404.
func (s *server) workFor(c *fiber.Ctx) (store.Work, []store.WorkInput, error) {
	v, _ := param(c, "id")
	notFound := observe.NoWork(v) // as an observe.thread watch's admission answers it
	id, err := store.ParseID(v)
	if err != nil {
		return store.Work{}, nil, notFound
	}
	w, in, err := s.d.Observe.GetWork(c.UserContext(), id)
	if errors.Is(err, store.ErrNotFound) {
		return w, nil, notFound
	}
	if err != nil {
		return w, nil, err
	}
	return w, in, s.visible(c, authz.Action{Verb: authz.SeeWork, Scope: w.Scope, Recipient: w.ClaimedBy, ID: w.ID.String()}, notFound)
}

func (s *server) getWork(c *fiber.Ctx) error {
	w, in, err := s.workFor(c)
	if err != nil {
		return err
	}
	return c.JSON(toWork(w, in))
}

func (s *server) claimWork(c *fiber.Ctx) error {
	w, _, err := s.workFor(c)
	if err != nil {
		return err
	}
	var req api.ClaimRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if !store.ValidRecipientID(req.Recipient.ID) {
		return &api.Error{Code: api.CodeInvalidRecipient, Field: "recipient.id", Message: store.RecipientIDGrammar}
	}
	if err := s.allow(c, authz.Action{Verb: authz.WorkScope, Scope: w.Scope}); err != nil {
		return err
	}
	if err := s.allow(c, authz.Action{Verb: authz.ActFor, Recipient: req.Recipient.ID}); err != nil {
		return err
	}
	w, in, err := s.d.Observe.ClaimWork(c.UserContext(), w.ID, req.Recipient.ID)
	if err != nil {
		return err
	}
	a, err := claimed(w, in)
	if err != nil {
		return err
	}
	return send(c, a)
}

// completeWork completes a Work item: one claimed, by a principal that
// acts for its claimer; one not claimed, by one that works its scope.
func (s *server) completeWork(c *fiber.Ctx) error {
	w, _, err := s.workFor(c)
	if err != nil {
		return err
	}
	need := authz.Action{Verb: authz.WorkScope, Scope: w.Scope}
	if w.ClaimedBy != "" {
		need = authz.Action{Verb: authz.ActFor, Recipient: w.ClaimedBy}
	}
	if err := s.allow(c, need); err != nil {
		return err
	}
	w, err = s.d.Observe.CompleteWorkAs(c.UserContext(), w.ID, w.ClaimedBy)
	if err != nil {
		return err
	}
	a, err := completeAnswer(c.UserContext(), w)
	if err != nil {
		return err
	}
	return send(c, a)
}

func toWork(w store.Work, inputs []store.WorkInput) api.Work {
	out := api.Work{
		ID: w.ID.String(), Scope: w.Scope, Kind: w.Kind, Title: w.Title, ThreadKey: w.ThreadKey, State: string(w.State),
		InputCount: w.Inputs, Consumed: w.Consumed, ClaimedBy: w.ClaimedBy, CreatedAt: w.CreatedAt, ClaimedAt: w.ClaimedAt, CompletedAt: w.CompletedAt,
	}
	if inputs != nil {
		out.Inputs = make([]api.WorkInput, 0, len(inputs))
		for _, in := range inputs {
			out.Inputs = append(out.Inputs, api.WorkInput{N: in.N, Source: in.Source, Item: in.Item, Revision: in.Revision, Thread: in.Thread, Text: in.Text, Reporter: in.Reporter, RecordedAt: in.RecordedAt})
		}
	}
	return out
}
