package reminder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// Name is the reminder's kind.
const Name = "recipient.reminder"

// Bounds of a recipient's reminder interval.
const (
	MinEvery = time.Minute
	MaxEvery = 24 * time.Hour
)

// Store is what the kind reads: the recipient's record, fresh at each
// check.
type Store interface {
	GetRecipient(ctx context.Context, id string) (store.RecipientRecord, error)
}

// Kind is the phase reminder, a standing kind built into the host. Its
// watches are kept by the recipients' reconciler (one per running
// recipient that opted in), never registered by hand.
type Kind struct {
	st Store
}

var _ kind.Kind = (*Kind)(nil)

// New is the reminder kind over st.
func New(st Store) *Kind { return &Kind{st: st} }

// Register adds the kind to reg.
func (k *Kind) Register(reg *kind.Registry) error { return reg.Register(kind.HostSource, k) }

// Params are a reminder watch's params: the interval it was kept for, so a
// changed interval is another watch (the reconciler replaces it) and the
// row's cadence is that interval.
type Params struct {
	Every store.Duration `json:"every"`
}

// ParamsFor are the params of the reminder watch for an interval.
func ParamsFor(every time.Duration) json.RawMessage {
	b, _ := json.Marshal(Params{Every: store.Duration(every)}) // a Duration always marshals
	return b
}

const schema = `{"type":"object","additionalProperties":false,"required":["every"],"properties":{` +
	`"every":{"type":"string","description":"the recipient's reminder interval, a Go duration from 1m to 24h"}}}`

// Info implements kind.Kind: the kind declares itself standing, as every
// kind says what it is in its describe.
func (k *Kind) Info() kind.Info {
	return kind.Info{
		Kind: Name, File: "(built in)", Version: "1.0.0", Standing: true, Observable: true,
		Summary:      "Remind a working recipient, once per phase report, to report its phase again",
		Capabilities: []string{}, Schema: json.RawMessage(schema),
	}
}

type reconcilerKey struct{}

// WithReconciler marks ctx as the recipients' reconciler's. Admit refuses
// a reminder watch registered without the mark: a second reminder watch
// for one recipient, registered by hand, would remind twice of one report.
func WithReconciler(ctx context.Context) context.Context {
	return context.WithValue(ctx, reconcilerKey{}, true)
}

func fromReconciler(ctx context.Context) bool {
	ok, _ := ctx.Value(reconcilerKey{}).(bool)
	return ok
}

// ParseParams reads a reminder watch's params strictly.
func ParseParams(raw json.RawMessage) (Params, error) {
	var p Params
	if err := abi.StrictUnmarshal(raw, &p); err != nil {
		return Params{}, err
	}
	if d := time.Duration(p.Every); d < MinEvery || d > MaxEvery {
		return Params{}, fmt.Errorf("every %s: want %s to %s", d, MinEvery, MaxEvery)
	}
	return p, nil
}

// Admit implements kind.Kind: only the reconciler registers a reminder
// watch, with an interval in bounds. Its params name no record (the
// recipient it reminds is the watch's own), so the caller is not asked.
func (k *Kind) Admit(ctx context.Context, req kind.AdmitRequest) (kind.Admission, error) {
	if !fromReconciler(ctx) {
		return kind.Admission{}, &api.Error{Code: api.CodeInvalidParams, Field: "kind",
			Message: "the host keeps a recipient's reminder watch itself: opt in with PUT /api/v1/recipients/{id}/reminder (vigil recipient reminder)"}
	}
	if _, err := ParseParams(req.Params); err != nil {
		return kind.Admission{}, &api.Error{Code: api.CodeInvalidParams, Field: "params", Message: err.Error()}
	}
	return kind.Admission{}, nil
}

// Observe implements kind.Kind: one check. It reads the recipient's record
// (the one the scheduler names in ctx) fresh from the store, decides, and
// answers a change of type reminder when Decide says so, or pending with
// the new baseline (written only when it moved).
func (k *Kind) Observe(ctx context.Context, req abi.ObserveRequest) (kind.Observation, error) {
	if req.Kind != Name {
		return kind.Observation{}, fmt.Errorf("reminder: asked to observe kind %q: %w", req.Kind, kind.ErrRaised)
	}
	if _, err := ParseParams(req.Params); err != nil {
		return kind.Observation{}, fmt.Errorf("reminder: stored params %s: %w", req.Params, err)
	}
	rid := kind.RecipientFrom(ctx)
	if rid == "" {
		return kind.Observation{}, errors.New("reminder: observed without its recipient")
	}
	e := Evidence{Now: req.Now}
	if len(req.Baseline) > 0 {
		var b Baseline
		if err := json.Unmarshal(req.Baseline, &b); err != nil {
			return kind.Observation{}, fmt.Errorf("reminder: stored baseline %s: %w", req.Baseline, err)
		}
		e.Previous = &b
	}
	rec, err := k.st.GetRecipient(ctx, rid)
	switch {
	case errors.Is(err, store.ErrNotFound):
		// Gone: no status, so not running; the reconciler cancels the watch.
	case err != nil:
		return kind.Observation{Status: abi.StatusPending, Note: "reading the recipient: " + err.Error()}, nil
	default:
		e.Status, e.Every, e.Phase, e.Activity = rec.Status, time.Duration(rec.ReminderEvery), rec.Phase, rec.Activity
	}
	v := Decide(e)
	baseline, err := json.Marshal(v.Baseline)
	if err != nil {
		return kind.Observation{}, err
	}
	if !v.Remind {
		return kind.Observation{Status: abi.StatusPending, Note: v.Why, Baseline: baseline}, nil
	}
	detail, err := json.Marshal(Detail{Phase: e.Phase.Name, ReportedAt: e.Phase.ReportedAt, Every: store.Duration(e.Every)})
	if err != nil {
		return kind.Observation{}, err
	}
	return kind.Observation{
		Status: abi.StatusChanged, Type: store.MessageReminder, Note: v.Why, Baseline: baseline,
		Outcome: &abi.Outcome{Result: "reminder", Summary: Text(rid, e.Phase.Name, e.Now.Sub(e.Phase.ReportedAt)), Detail: detail},
	}, nil
}

// Detail is a reminder message's outcome detail.
type Detail struct {
	Phase      string         `json:"phase"`
	ReportedAt time.Time      `json:"reported_at"`
	Every      store.Duration `json:"every"`
}

// Text is a reminder's summary: one short sentence, for a transcript the
// agent re-reads every turn.
func Text(recipient, phase string, age time.Duration) string {
	return fmt.Sprintf("Still on %q (reported %s ago)? Report your phase: vigil recipient phase %s NAME", phase, age.Round(time.Minute), recipient)
}
