package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/store"
)

// IdemReader reads a principal's idempotency record (*store.Store does):
// store.ErrNotFound when the key names nothing.
type IdemReader interface {
	GetIdem(ctx context.Context, principal, key string) (store.IdemRecord, error)
}

// answerer renders a creating route's answer from what its write wrote
// (the value the store's method returns): the one rendering of the
// route's success, used both inside the write's transaction, where the
// key's record keeps it, and for the answer sent, so the two are the same
// bytes.
type answerer func(ctx context.Context, written any) (store.Answer, error)

// idempotent is a creating route's middleware: with an Idempotency-Key
// header it reads the principal's record under the key first (the same
// request answered again as it was, byte for byte, with
// Idempotent-Replayed; another request under the key 422
// idempotency_key_reused), else hands the route's one write the key
// through the request's context (store.WithIdem), so the record is kept
// in the write's own transaction; a write that finds the record there (a
// concurrent request under the key that committed first) is answered the
// same way. Without the header the route runs as it is.
func (s *server) idempotent(answer answerer) fiber.Handler {
	return func(c *fiber.Ctx) error {
		vals := c.Request().Header.PeekAll(api.HeaderIdempotencyKey)
		if len(vals) == 0 {
			return c.Next()
		}
		if len(vals) > 1 {
			return &api.Error{Code: api.CodeInvalidIdempotencyKey, Field: api.HeaderIdempotencyKey, Message: fmt.Sprintf("%d Idempotency-Key headers; send one", len(vals))}
		}
		key, err := api.ParseIdempotencyKey(string(vals[0]))
		if err != nil {
			return &api.Error{Code: api.CodeInvalidIdempotencyKey, Field: api.HeaderIdempotencyKey,
				Message: fmt.Sprintf("want 1 to %d bytes of visible ASCII, bare or as a quoted string", api.MaxIdempotencyKey)}
		}
		who := Principal(c)
		fp := store.FingerprintOf(c.Method(), string(c.Request().URI().PathOriginal()), c.Body())
		ctx := c.UserContext()
		if s.idem != nil {
			rec, err := s.idem.GetIdem(ctx, who, key)
			switch {
			case err == nil:
				return s.replay(c, key, fp, rec)
			case !errors.Is(err, store.ErrNotFound):
				return err
			}
		}
		c.SetUserContext(store.WithIdem(ctx, &store.Idem{
			Principal: who, Key: key, Fingerprint: fp, At: s.clock.Now().UTC(),
			Answer: func(written any) (store.Answer, error) { return answer(ctx, written) },
		}))
		err = c.Next()
		var rp *store.Replay
		if errors.As(err, &rp) {
			return s.replay(c, key, fp, rp.Record)
		}
		return err
	}
}

// replay answers a request whose key names a recorded one: its answer
// again when it is the same request, else idempotency_key_reused; the
// same request whose answer's body the store could not keep (over its
// bound on a value) is idempotency_answer_unkept, which tells the client
// its write was made.
func (s *server) replay(c *fiber.Ctx, key string, fp store.Fingerprint, rec store.IdemRecord) error {
	if rec.Fingerprint != fp {
		return &api.Error{Code: api.CodeIdempotencyKeyReused, Field: api.HeaderIdempotencyKey,
			Message: fmt.Sprintf("key %q was used at %s for another request (another method, path or body); nothing was written: use a fresh key for each request", key, rec.At.Format(time.RFC3339))}
	}
	if rec.Answer.Unkept > 0 {
		return &api.Error{Code: api.CodeIdempotencyAnswerUnkept, Field: api.HeaderIdempotencyKey,
			Message: fmt.Sprintf("key %q was used at %s for this same request, which was written then, once, and answered %d; its answer's body (%d bytes) was too large for the store to keep, so it cannot be sent again, and nothing was written now: read what the request wrote instead (a claimed Work: GET /api/v1/work/{id})",
				key, rec.At.Format(time.RFC3339), rec.Answer.Status, rec.Answer.Unkept)}
	}
	c.Set(api.HeaderIdempotentReplayed, "true")
	return send(c, rec.Answer)
}

// send answers a: its status, its Location if it has one, its JSON body.
func send(c *fiber.Ctx, a store.Answer) error {
	if a.Location != "" {
		c.Location(a.Location)
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Status(a.Status).Send(a.Body)
}

// sendJSON answers status with v, through the same encoding as a kept
// answer.
func sendJSON(c *fiber.Ctx, status int, v any) error {
	a, err := answerJSON(status, "", v)
	if err != nil {
		return err
	}
	return send(c, a)
}

// answerJSON is an answer of status with v as its body, encoded as the
// routes encode every body.
func answerJSON(status int, location string, v any) (store.Answer, error) {
	b, err := json.Marshal(v)
	return store.Answer{Status: status, Location: location, Body: b}, err
}

// wrote is the write's value as the route's answerer expects it.
func wrote[T any](written any) (T, error) {
	v, ok := written.(T)
	if !ok {
		var want T
		return want, fmt.Errorf("httpapi: the write gave a %T to answer, want a %T", written, want)
	}
	return v, nil
}

// The creating routes' answers.

func watchAnswer(_ context.Context, written any) (store.Answer, error) {
	w, err := wrote[store.Watch](written)
	if err != nil {
		return store.Answer{}, err
	}
	return answerJSON(fiber.StatusCreated, "/api/v1/watches/"+w.ID.String(), toWatch(w))
}

func recordAnswer(_ context.Context, written any) (store.Answer, error) {
	e, err := wrote[store.Event](written)
	if err != nil {
		return store.Answer{}, err
	}
	return answerJSON(fiber.StatusCreated, "", toObserveResult(e, false, e.Address))
}

// claimAnswer is a claimed Work with its inputs up to its count (those
// are written before the count that names them, and never change, so
// the record's rendering and the answer sent read the same ones).
func (s *server) claimAnswer(ctx context.Context, written any) (store.Answer, error) {
	w, err := wrote[store.Work](written)
	if err != nil {
		return store.Answer{}, err
	}
	_, in, err := s.d.Observe.GetWork(ctx, w.ID)
	if err != nil {
		return store.Answer{}, err
	}
	return claimed(w, in)
}

func claimed(w store.Work, in []store.WorkInput) (store.Answer, error) {
	n := 0
	for _, x := range in {
		if x.N <= w.Inputs {
			in[n] = x
			n++
		}
	}
	return answerJSON(fiber.StatusOK, "", toWork(w, in[:n]))
}

func completeAnswer(_ context.Context, written any) (store.Answer, error) {
	w, err := wrote[store.Work](written)
	if err != nil {
		return store.Answer{}, err
	}
	return answerJSON(fiber.StatusOK, "", toWork(w, nil))
}

func phaseAnswer(_ context.Context, written any) (store.Answer, error) {
	r, err := wrote[store.RecipientRecord](written)
	if err != nil {
		return store.Answer{}, err
	}
	if r.Phase == nil {
		return store.Answer{}, errors.New("httpapi: a phase report wrote no phase")
	}
	return answerJSON(fiber.StatusOK, "", toPhase(*r.Phase))
}

func activityAnswer(_ context.Context, written any) (store.Answer, error) {
	r, err := wrote[store.RecipientRecord](written)
	if err != nil {
		return store.Answer{}, err
	}
	return answerJSON(fiber.StatusOK, "", toActivity(r.Activity))
}

// StoreUnavailableRetryAfter is the Retry-After of a 503
// store_unavailable: about a JetStream election, so a client retrying
// with its key lands once a leader is back.
const StoreUnavailableRetryAfter = 2 * time.Second

// unavailableError is the API's answer to store.ErrUnavailable, saying
// whether the write may have happened.
func unavailableError(err error) *api.Error {
	var ue *store.UnavailableError
	if errors.As(err, &ue) && ue.MayHaveWritten {
		return &api.Error{Code: api.CodeStoreUnavailable, RetryAfter: StoreUnavailableRetryAfter,
			Message: "the store did not answer this write's commit (a cluster without a leader or a quorum): it may have been written. Send the same request again with the same Idempotency-Key: it is written at most once, and answered as it was"}
	}
	return &api.Error{Code: api.CodeStoreUnavailable, RetryAfter: StoreUnavailableRetryAfter,
		Message: "the store could not be reached (a cluster without a leader or a quorum); nothing was written, retry shortly"}
}
