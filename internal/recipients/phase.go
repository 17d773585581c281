package recipients

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/reminder"
	"github.com/vigilhq/vigil/store"
)

// PhaseStore is what phase and activity reports and the reminder opt-in
// need of the store (the host's *store.Store); each is one transaction on
// the record.
type PhaseStore interface {
	ReportPhase(ctx context.Context, id string, p store.Phase) (store.RecipientRecord, error)
	ReportActivity(ctx context.Context, id string, replies, toolCalls uint64, at time.Time) (store.RecipientRecord, error)
	SetReminder(ctx context.Context, id string, every time.Duration) (store.RecipientRecord, error)
}

// Bounds of a report.
const (
	// MaxPhaseName bounds a phase's name, MaxPhaseText its text (bytes).
	MaxPhaseName = 32
	MaxPhaseText = 500
	// MaxActivityStep bounds each count of one activity report.
	MaxActivityStep = 1_000_000
)

// PhaseReport is a phase as a principal reports it. Self is true when
// the principal acts as the recipient itself; otherwise the phase is
// stored seeded, and the reminder never acts on it.
type PhaseReport struct {
	Name, Text string
	By         string
	Self       bool
}

// ValidPhaseName reports whether s is a phase name: 1 to MaxPhaseName
// bytes, a lower-case letter, then lower-case letters, digits, '.', '_'
// and '-'.
func ValidPhaseName(s string) bool {
	if len(s) == 0 || len(s) > MaxPhaseName || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// PhaseNameGrammar says what a phase name is, for error messages.
const PhaseNameGrammar = "want 1-32 of a-z 0-9 . _ -, starting with a letter (build, review, handoff, blocked, …)"

// ValidPhaseText reports whether s may be a phase's text: at most
// MaxPhaseText bytes of UTF-8 without control characters other than a
// newline or a tab.
func ValidPhaseText(s string) bool {
	if len(s) > MaxPhaseText || !utf8.ValidString(s) {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' })
}

func (s *Service) phaseStore() (PhaseStore, error) {
	ps, ok := s.store.(PhaseStore)
	if !ok {
		return nil, fmt.Errorf("recipients: the store keeps no phases")
	}
	return ps, nil
}

// ReportPhase stores a recipient's phase, reported now. The recipient
// must exist (store.ErrNotFound otherwise: a report creates nothing). It
// changes no watch: the reminder reads the phase at its next check.
func (s *Service) ReportPhase(ctx context.Context, id string, r PhaseReport) (store.Phase, error) {
	if !store.ValidRecipientID(id) {
		return store.Phase{}, &api.Error{Code: api.CodeInvalidRecipient, Field: "id", Message: store.RecipientIDGrammar}
	}
	if !ValidPhaseName(r.Name) {
		return store.Phase{}, &api.Error{Code: api.CodeInvalidField, Field: "name", Message: PhaseNameGrammar}
	}
	if !ValidPhaseText(r.Text) {
		return store.Phase{}, &api.Error{Code: api.CodeInvalidField, Field: "text", Message: fmt.Sprintf("want at most %d bytes of UTF-8 text without control characters (a newline or tab is fine)", MaxPhaseText)}
	}
	if r.By == "" {
		return store.Phase{}, fmt.Errorf("recipients: a phase report without its principal")
	}
	ps, err := s.phaseStore()
	if err != nil {
		return store.Phase{}, err
	}
	rec, err := ps.ReportPhase(ctx, id, store.Phase{Name: r.Name, Text: r.Text, ReportedBy: r.By, Seeded: !r.Self, ReportedAt: s.clock.Now().UTC()})
	if err != nil {
		return store.Phase{}, err
	}
	return *rec.Phase, nil
}

// ReportActivity adds to a recipient's activity counts. Each count is 0
// to MaxActivityStep; the recipient must exist.
func (s *Service) ReportActivity(ctx context.Context, id string, replies, toolCalls int64) (store.Activity, error) {
	if !store.ValidRecipientID(id) {
		return store.Activity{}, &api.Error{Code: api.CodeInvalidRecipient, Field: "id", Message: store.RecipientIDGrammar}
	}
	for _, c := range []struct {
		field string
		n     int64
	}{{"replies", replies}, {"tool_calls", toolCalls}} {
		if c.n < 0 || c.n > MaxActivityStep {
			return store.Activity{}, &api.Error{Code: api.CodeInvalidField, Field: c.field, Message: fmt.Sprintf("want a count from 0 to %d to add", MaxActivityStep)}
		}
	}
	ps, err := s.phaseStore()
	if err != nil {
		return store.Activity{}, err
	}
	rec, err := ps.ReportActivity(ctx, id, uint64(replies), uint64(toolCalls), s.clock.Now().UTC())
	if err != nil {
		return store.Activity{}, err
	}
	return rec.Activity, nil
}

// SetReminder opts a recipient in to the phase reminder every interval
// (reminder.MinEvery to reminder.MaxEvery), or out with zero, and
// reconciles its watches: while it runs and is opted in it keeps one
// reminder watch at that cadence. The recipient must exist.
func (s *Service) SetReminder(ctx context.Context, id string, every time.Duration) (store.RecipientRecord, error) {
	if !store.ValidRecipientID(id) {
		return store.RecipientRecord{}, &api.Error{Code: api.CodeInvalidRecipient, Field: "id", Message: store.RecipientIDGrammar}
	}
	if every != 0 && (every < reminder.MinEvery || every > reminder.MaxEvery) {
		return store.RecipientRecord{}, &api.Error{Code: api.CodeInvalidField, Field: "every",
			Message: fmt.Sprintf("%s: want a duration from %s to %s", every, reminder.MinEvery, reminder.MaxEvery)}
	}
	if info, ok := s.kinds.Lookup(reminder.Name); every != 0 && (!ok || !info.Standing) {
		return store.RecipientRecord{}, &api.Error{Code: api.CodeWatchUnobservable, Field: "every",
			Message: fmt.Sprintf("this host serves no %s kind", reminder.Name)}
	}
	ps, err := s.phaseStore()
	if err != nil {
		return store.RecipientRecord{}, err
	}
	if _, err := ps.SetReminder(ctx, id, every); err != nil {
		return store.RecipientRecord{}, err
	}
	if err := s.Reconcile(ctx, id); err != nil {
		return store.RecipientRecord{}, err
	}
	return s.store.GetRecipient(ctx, id)
}
