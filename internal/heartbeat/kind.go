package heartbeat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// Name is the kind's name.
const Name = "heartbeat"

// Bounds of a heartbeat's declaration.
const (
	MinPeriod = time.Second
	MaxPeriod = 7 * 24 * time.Hour
	MaxGrace  = 24 * time.Hour
	// MaxNote bounds a ping's body, kept as its note.
	MaxNote = 1 << 10
	// MaxHeartbeats bounds a recipient's heartbeats.
	MaxHeartbeats = 32
)

var nameGrammar = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// ValidName says name is a heartbeat's name: 1-64 of a-z 0-9 . _ -,
// beginning with a letter or digit.
func ValidName(name string) bool { return nameGrammar.MatchString(name) }

// Params are a heartbeat watch's params: the heartbeat it keeps, as the
// recipient declared it (a changed period or grace is another watch,
// which the reconciler puts in its place).
type Params struct {
	Name   string         `json:"name"`
	Period store.Duration `json:"period"`
	Grace  store.Duration `json:"grace"`
}

// ParamsFor are the params of the watch of h.
func ParamsFor(h store.Heartbeat) json.RawMessage {
	b, _ := json.Marshal(Params{Name: h.Name, Period: h.Period, Grace: h.Grace}) // always marshals
	return b
}

// Check checks a heartbeat's declaration: its name, period and grace.
func Check(name string, period, grace time.Duration) error {
	switch {
	case !ValidName(name):
		return fmt.Errorf("name %q: want 1-64 of a-z 0-9 . _ -, beginning with a letter or digit", name)
	case period < MinPeriod || period > MaxPeriod:
		return fmt.Errorf("period %s: want %s to %s", period, MinPeriod, MaxPeriod)
	case grace < 0 || grace > MaxGrace:
		return fmt.Errorf("grace %s: want 0s to %s", grace, MaxGrace)
	}
	return nil
}

// ParseParams reads a heartbeat watch's params strictly.
func ParseParams(raw json.RawMessage) (Params, error) {
	var p Params
	if err := abi.StrictUnmarshal(raw, &p); err != nil {
		return Params{}, err
	}
	return p, Check(p.Name, time.Duration(p.Period), time.Duration(p.Grace))
}

// Subject is the subject of the watch of recipient rid's heartbeat name:
// a ping pokes it (scheduler.Poke) and it is checked at once.
func Subject(rid, name string) string { return "heartbeat/" + rid + "/" + name }

const schema = `{"type":"object","additionalProperties":false,"required":["name","period","grace"],"properties":{` +
	`"name":{"type":"string","description":"the heartbeat's name, as the recipient declares it"},` +
	`"period":{"type":"string","description":"how often the job pings, a Go duration from 1s to 168h"},` +
	`"grace":{"type":"string","description":"how late a ping may be before it is missed, a Go duration up to 24h"}}}`

// Store is what the kind reads: the recipient's record, fresh at each
// check.
type Store interface {
	GetRecipient(ctx context.Context, id string) (store.RecipientRecord, error)
}

// Kind is the heartbeat, a standing kind built into the host, kept by the
// recipients' reconciler (one watch per declared heartbeat) and woken by
// its pings, never probed on a cadence.
type Kind struct{ st Store }

var _ kind.Kind = (*Kind)(nil)

// New is the kind over st.
func New(st Store) *Kind { return &Kind{st: st} }

// Register adds the kind to reg.
func (k *Kind) Register(reg *kind.Registry) error { return reg.Register(kind.HostSource, k) }

// Info implements kind.Kind.
func (k *Kind) Info() kind.Info {
	return kind.Info{
		Kind: Name, File: "(built in)", Version: "1.0.0", Standing: true, Pushed: true, Source: "pushed", Observable: true,
		Summary:      "Notice a job's silence: missed when no ping comes within period plus grace, recovered at the next",
		Capabilities: []string{}, Schema: json.RawMessage(schema),
	}
}

type reconcilerKey struct{}

// WithReconciler marks ctx as the recipients' reconciler's: only it
// registers a heartbeat watch, one per heartbeat a recipient declares.
func WithReconciler(ctx context.Context) context.Context {
	return context.WithValue(ctx, reconcilerKey{}, true)
}

// Admit implements kind.Kind: only the reconciler registers a heartbeat
// watch, with params in bounds; its subject is the heartbeat's.
func (k *Kind) Admit(ctx context.Context, req kind.AdmitRequest) (kind.Admission, error) {
	if ok, _ := ctx.Value(reconcilerKey{}).(bool); !ok {
		return kind.Admission{}, &api.Error{Code: api.CodeInvalidParams, Field: "kind",
			Message: "the host keeps a heartbeat's watch itself: declare it on the recipient (PUT /api/v1/recipients/{id}, heartbeats)"}
	}
	p, err := ParseParams(req.Params)
	if err != nil {
		return kind.Admission{}, &api.Error{Code: api.CodeInvalidParams, Field: "params", Message: err.Error()}
	}
	return kind.Admission{Subject: Subject(req.Recipient, p.Name)}, nil
}

// Observe implements kind.Kind: one check, of the heartbeat's last ping
// read fresh from the recipient's record, by Decide.
func (k *Kind) Observe(ctx context.Context, req abi.ObserveRequest) (kind.Observation, error) {
	if req.Kind != Name {
		return kind.Observation{}, fmt.Errorf("heartbeat: asked to observe kind %q: %w", req.Kind, kind.ErrRaised)
	}
	p, err := ParseParams(req.Params)
	if err != nil {
		return kind.Observation{}, fmt.Errorf("heartbeat: stored params %s: %w", req.Params, err)
	}
	rid := kind.RecipientFrom(ctx)
	if rid == "" {
		return kind.Observation{}, errors.New("heartbeat: observed without its recipient")
	}
	e := Evidence{Now: req.Now, Period: time.Duration(p.Period), Grace: time.Duration(p.Grace)}
	if len(req.Baseline) > 0 {
		var b Baseline
		if err := json.Unmarshal(req.Baseline, &b); err != nil {
			return kind.Observation{}, fmt.Errorf("heartbeat: stored baseline %s: %w", req.Baseline, err)
		}
		e.Previous = &b
	}
	rec, err := k.st.GetRecipient(ctx, rid)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return kind.Observation{Status: abi.StatusPending, Note: "reading the recipient: " + err.Error()}, nil
	}
	var note string
	for _, h := range rec.Heartbeats {
		if h.Name == p.Name {
			e.LastPing, e.Failed, note = h.LastPing, h.Failed, h.Note
		}
	}
	v := Decide(e)
	baseline, err := json.Marshal(v.Baseline)
	if err != nil {
		return kind.Observation{}, err
	}
	if v.Mail == "" {
		return kind.Observation{Status: abi.StatusPending, Note: v.Why, Baseline: baseline, NextCheck: v.Next}, nil
	}
	detail, err := json.Marshal(Detail{Heartbeat: p.Name, LastPing: e.LastPing, Period: p.Period, Grace: p.Grace, Note: note})
	if err != nil {
		return kind.Observation{}, err
	}
	return kind.Observation{
		Status: abi.StatusChanged, Note: v.Why, Baseline: baseline, NextCheck: v.Next,
		Outcome: &abi.Outcome{Result: v.Mail, Summary: summary(rid, p.Name, v.Mail, e, note), Detail: detail},
	}, nil
}

// Detail is a heartbeat message's outcome detail.
type Detail struct {
	Heartbeat string         `json:"heartbeat"`
	LastPing  time.Time      `json:"last_ping"`
	Period    store.Duration `json:"period"`
	Grace     store.Duration `json:"grace"`
	Note      string         `json:"note,omitempty"`
}

func summary(rid, name, mail string, e Evidence, note string) string {
	switch mail {
	case Missed:
		return fmt.Sprintf("heartbeat %s of %s missed: no ping since %s (period %s, grace %s)", name, rid, e.LastPing.UTC().Format(time.RFC3339), e.Period, e.Grace)
	case Failed:
		s := fmt.Sprintf("heartbeat %s of %s reported a failure", name, rid)
		if note != "" {
			s += ": " + note
		}
		return s
	}
	return fmt.Sprintf("heartbeat %s of %s recovered: pinged at %s", name, rid, e.LastPing.UTC().Format(time.RFC3339))
}
