package signal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/captoken"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// Name is the kind's name.
const Name = "signal"

// Bounds of a signal's params and of a completion.
const (
	MaxTitle    = 200
	MaxPrompt   = 4 << 10
	MaxOutcomes = 10
	MaxSchema   = 16 << 10
	// MaxData bounds a completion's data (its JSON).
	MaxData = 64 << 10
	// MaxBody bounds a completion's request body: the data and the rest.
	MaxBody = MaxData + 1<<10
)

// DefaultOutcomes are the outcomes a registration that names none offers.
var defaultOutcomes = []string{"approve", "deny"}

// DefaultOutcomes are the outcomes a registration that names none offers.
func DefaultOutcomes() []string { return slices.Clone(defaultOutcomes) }

var outcomeGrammar = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// Params are a signal watch's params.
type Params struct {
	// Title is what is being asked, in a line: the page's heading and the
	// message's summary.
	Title string `json:"title"`
	// Prompt says more, for the person answering (plain text).
	Prompt string `json:"prompt,omitempty"`
	// Outcomes are the answers offered, each a button on the page
	// (default approve, deny).
	Outcomes []string `json:"outcomes,omitempty"`
	// Schema, when set, is the JSON Schema a completion's data must meet.
	Schema json.RawMessage `json:"schema,omitempty"`
}

const paramsSchema = `{"type":"object","additionalProperties":false,"required":["title"],"properties":{` +
	`"title":{"type":"string","minLength":1,"maxLength":200,"description":"what is asked, in a line: the page's heading and the message's summary"},` +
	`"prompt":{"type":"string","maxLength":4096,"description":"more for the person answering, plain text"},` +
	`"outcomes":{"type":"array","minItems":1,"maxItems":10,"uniqueItems":true,"items":{"type":"string","pattern":"^[a-z0-9][a-z0-9_-]{0,31}$"},"description":"the answers offered, each a button on the page (default approve, deny)"},` +
	`"schema":{"type":"object","description":"a JSON Schema the completion's data must meet"}}}`

// ParseParams reads and checks a signal's params, its outcomes completed
// with the defaults, its schema compiled (nil without one).
func ParseParams(raw json.RawMessage) (Params, *plugin.Schema, error) {
	var p Params
	if err := abi.StrictUnmarshal(raw, &p); err != nil {
		return Params{}, nil, &api.Error{Code: api.CodeInvalidParams, Field: "params", Message: err.Error()}
	}
	switch n := utf8.RuneCountInString(p.Title); {
	case n == 0:
		return Params{}, nil, &api.Error{Code: api.CodeInvalidParams, Field: "params.title", Message: "required: what is being asked"}
	case n > MaxTitle || !utf8.ValidString(p.Title):
		return Params{}, nil, &api.Error{Code: api.CodeInvalidParams, Field: "params.title", Message: fmt.Sprintf("want at most %d characters of UTF-8", MaxTitle)}
	}
	if len(p.Prompt) > MaxPrompt || !utf8.ValidString(p.Prompt) {
		return Params{}, nil, &api.Error{Code: api.CodeInvalidParams, Field: "params.prompt", Message: fmt.Sprintf("want at most %d bytes of UTF-8", MaxPrompt)}
	}
	if p.Outcomes == nil {
		p.Outcomes = DefaultOutcomes()
	}
	if len(p.Outcomes) == 0 || len(p.Outcomes) > MaxOutcomes {
		return Params{}, nil, &api.Error{Code: api.CodeInvalidParams, Field: "params.outcomes", Message: fmt.Sprintf("want 1 to %d outcomes", MaxOutcomes)}
	}
	for i, o := range p.Outcomes {
		if !outcomeGrammar.MatchString(o) {
			return Params{}, nil, &api.Error{Code: api.CodeInvalidParams, Field: fmt.Sprintf("params.outcomes.%d", i), Message: "want 1-32 of a-z 0-9 _ -, beginning with a letter or digit"}
		}
		if slices.Index(p.Outcomes, o) != i {
			return Params{}, nil, &api.Error{Code: api.CodeInvalidParams, Field: fmt.Sprintf("params.outcomes.%d", i), Message: fmt.Sprintf("outcome %q is offered twice", o)}
		}
	}
	var sch *plugin.Schema
	if len(p.Schema) > 0 && !bytes.Equal(p.Schema, []byte("null")) {
		if len(p.Schema) > MaxSchema {
			return Params{}, nil, &api.Error{Code: api.CodeInvalidParams, Field: "params.schema", Message: fmt.Sprintf("want at most %d bytes", MaxSchema)}
		}
		if t := bytes.TrimSpace(p.Schema); len(t) == 0 || t[0] != '{' {
			return Params{}, nil, &api.Error{Code: api.CodeInvalidParams, Field: "params.schema", Message: "want a JSON Schema object"}
		}
		var err error
		if sch, err = plugin.CompileSchema(p.Schema); err != nil {
			return Params{}, nil, &api.Error{Code: api.CodeInvalidParams, Field: "params.schema", Message: err.Error()}
		}
	} else {
		p.Schema = nil
	}
	return p, sch, nil
}

// Kind is the signal kind, built into the host.
type Kind struct{}

var _ kind.Kind = Kind{}

// Register adds the kind to reg.
func (Kind) Register(reg *kind.Registry) error { return reg.Register(kind.HostSource, Kind{}) }

// Info implements kind.Kind.
func (Kind) Info() kind.Info {
	return kind.Info{
		Kind: Name, File: "(built in)", Version: "1.0.0", Pushed: true, Source: "pushed", Observable: true, Capability: true,
		Summary:      "Wait for a person or a system to answer through a capability URL (approve / deny, or the outcomes named)",
		Capabilities: []string{}, Schema: json.RawMessage(paramsSchema),
		Example: json.RawMessage(`{"title":"Deploy build 1423 to production?","prompt":"All checks passed.","outcomes":["approve","deny"]}`),
	}
}

// never is a first check past any deadline: the scheduler clamps it to
// the watch's deadline, so a signal is probed once, when it expires.
var never = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// Admit implements kind.Kind: the params checked and completed with the
// default outcomes. A signal names no record of the host, so the caller
// is not asked; who may register one for whom is the route's grant.
func (Kind) Admit(_ context.Context, req kind.AdmitRequest) (kind.Admission, error) {
	p, _, err := ParseParams(req.Params)
	if err != nil {
		return kind.Admission{}, err
	}
	completed, err := json.Marshal(p)
	if err != nil {
		return kind.Admission{}, err
	}
	return kind.Admission{Params: completed, NextCheck: never}, nil
}

// Observe implements kind.Kind: a signal is settled by its completion,
// never by a look; asked (at its deadline), it is still waiting.
func (Kind) Observe(_ context.Context, req abi.ObserveRequest) (kind.Observation, error) {
	if req.Kind != Name {
		return kind.Observation{}, fmt.Errorf("signal: asked to observe kind %q: %w", req.Kind, kind.ErrRaised)
	}
	return kind.Observation{Status: abi.StatusPending, Note: "no answer was sent to the signal's URL"}, nil
}

// Detail is a completed signal's outcome detail.
type Detail struct {
	Title   string          `json:"title"`
	Outcome string          `json:"outcome"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Store is what the service reads: a token's record, and its watch.
type Store interface {
	GetToken(ctx context.Context, hash string) (store.TokenRecord, error)
	Get(ctx context.Context, id store.ID) (store.Watch, error)
}

// Completer settles a pending watch fired from outside
// (scheduler.Scheduler.Complete).
type Completer interface {
	Complete(ctx context.Context, id store.ID, out store.Outcome, note string) (store.Watch, error)
}

// Service answers a signal's URL: what it asks (Ask) and its completion
// (Send).
type Service struct {
	st    Store
	sched Completer
}

// NewService is the service over st, completing through sched.
func NewService(st Store, sched Completer) *Service { return &Service{st: st, sched: sched} }

// Question is a signal as its URL shows it: what it asks, and its state.
type Question struct {
	Watch  store.Watch
	Params Params
	// Answer is the completion's detail once fired.
	Answer *Detail
}

// NotFound is the answer for a URL that names no signal: malformed,
// unknown, or pruned alike.
func NotFound() *api.Error {
	return &api.Error{Code: api.CodeNotFound, Message: "no signal at this URL (it is wrong, or the signal was settled long enough ago to be pruned)"}
}

// Ask reads the signal token names.
func (s *Service) Ask(ctx context.Context, token string) (Question, error) {
	w, err := s.watchOf(ctx, token)
	if err != nil {
		return Question{}, err
	}
	return questionOf(w)
}

func (s *Service) watchOf(ctx context.Context, token string) (store.Watch, error) {
	if _, err := captoken.Parse(token); err != nil {
		return store.Watch{}, NotFound()
	}
	rec, err := s.st.GetToken(ctx, store.HashToken(token))
	if errors.Is(err, store.ErrNotFound) {
		return store.Watch{}, NotFound()
	}
	if err != nil {
		return store.Watch{}, err
	}
	w, err := s.st.Get(ctx, rec.Watch)
	if errors.Is(err, store.ErrNotFound) {
		return store.Watch{}, NotFound()
	}
	if err != nil {
		return store.Watch{}, err
	}
	if w.Kind != Name {
		return store.Watch{}, NotFound()
	}
	return w, nil
}

func questionOf(w store.Watch) (Question, error) {
	var p Params
	if err := json.Unmarshal(w.Params, &p); err != nil {
		return Question{}, fmt.Errorf("signal: stored params of %s: %w", w.ID, err)
	}
	q := Question{Watch: w, Params: p}
	if w.State == store.Fired && w.Outcome != nil {
		var d Detail
		if err := json.Unmarshal(w.Outcome.Detail, &d); err == nil {
			q.Answer = &d
		}
	}
	return q, nil
}

// ConflictError is a completion of a signal no longer pending: the
// watch as it settled (the first completion's outcome, or its expiry).
type ConflictError struct {
	Err      *api.Error
	Question Question
}

func (e *ConflictError) Error() string { return e.Err.Error() }

// Unwrap is the API's error.
func (e *ConflictError) Unwrap() error { return e.Err }

// Send completes the signal token names with outcome and data (nil: none),
// and answers it as it settled. The outcome must be one the registration
// offered and data must meet its schema (*api.Error, CodeInvalidField,
// nothing written); a signal no longer pending is a *ConflictError.
func (s *Service) Send(ctx context.Context, token, outcome string, data json.RawMessage) (Question, error) {
	w, err := s.watchOf(ctx, token)
	if err != nil {
		return Question{}, err
	}
	q, err := questionOf(w)
	if err != nil {
		return Question{}, err
	}
	if w.State != store.Pending {
		return Question{}, conflict(q)
	}
	if !slices.Contains(q.Params.Outcomes, outcome) {
		return Question{}, &api.Error{Code: api.CodeInvalidField, Field: "outcome", Message: fmt.Sprintf("want one of %q", q.Params.Outcomes)}
	}
	if len(data) > MaxData {
		return Question{}, &api.Error{Code: api.CodeInvalidField, Field: "data", Message: fmt.Sprintf("want at most %d bytes", MaxData)}
	}
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		data = nil
	}
	if len(q.Params.Schema) > 0 {
		_, sch, err := ParseParams(w.Params)
		if err != nil || sch == nil {
			return Question{}, fmt.Errorf("signal: stored schema of %s: %v", w.ID, err)
		}
		doc := data
		if doc == nil {
			doc = json.RawMessage("null")
		}
		if field, msg, ok := sch.Validate(doc); !ok {
			f := "data"
			if field != "" {
				f += "." + field
			}
			return Question{}, &api.Error{Code: api.CodeInvalidField, Field: f, Message: msg}
		}
	} else if data != nil && !json.Valid(data) {
		return Question{}, &api.Error{Code: api.CodeInvalidField, Field: "data", Message: "want JSON"}
	}
	var compact bytes.Buffer
	if data != nil {
		if err := json.Compact(&compact, data); err != nil {
			return Question{}, &api.Error{Code: api.CodeInvalidField, Field: "data", Message: "want JSON"}
		}
	}
	d := Detail{Title: q.Params.Title, Outcome: outcome, Data: compact.Bytes()}
	if compact.Len() == 0 {
		d.Data = nil
	}
	detail, err := json.Marshal(d)
	if err != nil {
		return Question{}, err
	}
	out := store.Outcome{Result: outcome, Summary: fmt.Sprintf("%s: %s", outcome, q.Params.Title), Detail: detail}
	settled, err := s.sched.Complete(ctx, w.ID, out, "answered through the signal's URL")
	var ae *api.Error
	if errors.As(err, &ae) && ae.Code == api.CodeAlreadySettled && settled.ID == w.ID {
		q, qerr := questionOf(settled)
		if qerr != nil {
			return Question{}, qerr
		}
		return Question{}, conflict(q)
	}
	if err != nil {
		return Question{}, err
	}
	return questionOf(settled)
}

func conflict(q Question) *ConflictError {
	msg := fmt.Sprintf("the signal is already %s", q.Watch.State)
	if q.Answer != nil {
		msg = fmt.Sprintf("the signal was already answered %q", q.Answer.Outcome)
	}
	return &ConflictError{Err: &api.Error{Code: api.CodeAlreadySettled, Message: msg}, Question: q}
}
