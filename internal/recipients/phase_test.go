package recipients

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"pgregory.net/rapid"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/reminder"
	"github.com/vigilhq/vigil/store"
)

// A report is refused with a named field, and stores nothing; a report
// for a recipient that does not exist is not found and creates nothing.
func TestReportsValidate(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.svc.Put(ctx, Update{ID: "w", Status: store.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		do    func() error
		code  string
		field string
	}{
		{"bad id", func() error { _, err := f.svc.ReportPhase(ctx, "a b", PhaseReport{Name: "build", By: "w"}); return err }, api.CodeInvalidRecipient, "id"},
		{"empty name", func() error { _, err := f.svc.ReportPhase(ctx, "w", PhaseReport{By: "w"}); return err }, api.CodeInvalidField, "name"},
		{"upper-case name", func() error { _, err := f.svc.ReportPhase(ctx, "w", PhaseReport{Name: "Build", By: "w"}); return err }, api.CodeInvalidField, "name"},
		{"long name", func() error {
			_, err := f.svc.ReportPhase(ctx, "w", PhaseReport{Name: strings.Repeat("b", MaxPhaseName+1), By: "w"})
			return err
		}, api.CodeInvalidField, "name"},
		{"long text", func() error {
			_, err := f.svc.ReportPhase(ctx, "w", PhaseReport{Name: "build", Text: strings.Repeat("x", MaxPhaseText+1), By: "w"})
			return err
		}, api.CodeInvalidField, "text"},
		{"control in text", func() error {
			_, err := f.svc.ReportPhase(ctx, "w", PhaseReport{Name: "build", Text: "a\x1b[2Jb", By: "w"})
			return err
		}, api.CodeInvalidField, "text"},
		{"negative replies", func() error { _, err := f.svc.ReportActivity(ctx, "w", -1, 0); return err }, api.CodeInvalidField, "replies"},
		{"tool calls over the step", func() error { _, err := f.svc.ReportActivity(ctx, "w", 0, MaxActivityStep+1); return err }, api.CodeInvalidField, "tool_calls"},
		{"activity bad id", func() error { _, err := f.svc.ReportActivity(ctx, "", 1, 1); return err }, api.CodeInvalidRecipient, "id"},
		{"interval below the minimum", func() error { _, err := f.svc.SetReminder(ctx, "w", reminder.MinEvery-time.Second); return err }, api.CodeInvalidField, "every"},
		{"interval above the maximum", func() error { _, err := f.svc.SetReminder(ctx, "w", reminder.MaxEvery+time.Second); return err }, api.CodeInvalidField, "every"},
		{"negative interval", func() error { _, err := f.svc.SetReminder(ctx, "w", -time.Minute); return err }, api.CodeInvalidField, "every"},
		// This fixture's kinds have no reminder: an opt-in it could never
		// keep is refused, not stored.
		{"no reminder kind", func() error { _, err := f.svc.SetReminder(ctx, "w", time.Hour); return err }, api.CodeWatchUnobservable, "every"},
		{"reminder bad id", func() error { _, err := f.svc.SetReminder(ctx, "a/b", time.Hour); return err }, api.CodeInvalidRecipient, "id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do()
			var e *api.Error
			if !errors.As(err, &e) || e.Code != tt.code || e.Field != tt.field {
				t.Fatalf("err = %v, want %s on %s", err, tt.code, tt.field)
			}
		})
	}
	rec, _ := f.st.GetRecipient(ctx, "w")
	if rec.Phase != nil || rec.Activity != (store.Activity{}) || rec.ReminderEvery != 0 {
		t.Fatalf("a refused report was stored: %+v", rec)
	}
	if _, err := f.svc.ReportPhase(ctx, "nobody", PhaseReport{Name: "build", By: "nobody", Self: true}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a phase for no recipient: %v", err)
	}
	if _, err := f.svc.ReportActivity(ctx, "nobody", 1, 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("activity for no recipient: %v", err)
	}
	if _, err := f.st.GetRecipient(ctx, "nobody"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a report created a recipient: %v", err)
	}
}

// The record keeps who reported a phase and whether it was the recipient
// itself; a text at the bound, newlines and tabs are fine.
func TestReportPhaseRecordsWho(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, _ = f.svc.Put(ctx, Update{ID: "w", Status: store.StatusRunning})
	p, err := f.svc.ReportPhase(ctx, "w", PhaseReport{Name: "review", Text: strings.Repeat("é", MaxPhaseText/2), By: "w", Self: true})
	if err != nil || p.Seeded || p.ReportedBy != "w" || !p.ReportedAt.Equal(t0) {
		t.Fatalf("%+v %v", p, err)
	}
	p, err = f.svc.ReportPhase(ctx, "w", PhaseReport{Name: "build", Text: "line one\n\tline two", By: "operator"})
	if err != nil || !p.Seeded || p.ReportedBy != "operator" {
		t.Fatalf("%+v %v", p, err)
	}
	rec, _ := f.st.GetRecipient(ctx, "w")
	if rec.Phase == nil || *rec.Phase != p {
		t.Fatalf("stored %+v", rec.Phase)
	}
	a, err := f.svc.ReportActivity(ctx, "w", 2, 3)
	if err != nil || a.Replies != 2 || a.ToolCalls != 3 {
		t.Fatalf("%+v %v", a, err)
	}
}

var phaseNameOracle = regexp.MustCompile(`^[a-z][a-z0-9._-]{0,31}$`)

// ValidPhaseName accepts exactly the grammar, whatever bytes it is given.
func TestValidPhaseNameProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(
			rapid.StringMatching(`[a-z][a-z0-9._-]{0,40}`),
			rapid.StringOfN(rapid.SampledFrom([]rune("abzAZ09._-/ \x00é")), 0, 40, -1),
			rapid.String(),
		).Draw(t, "name")
		if got, want := ValidPhaseName(s), phaseNameOracle.MatchString(s); got != want {
			t.Fatalf("ValidPhaseName(%q) = %v, want %v", s, got, want)
		}
	})
}

// ValidPhaseText accepts exactly bounded UTF-8 without control characters
// other than newline and tab.
func TestValidPhaseTextProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(
			rapid.StringN(0, MaxPhaseText+20, -1),
			rapid.StringOfN(rapid.SampledFrom([]rune("ab \n\t\r\x00\x7f\u0085é€")), 0, MaxPhaseText/2+10, -1),
			rapid.Map(rapid.SliceOfN(rapid.Byte(), 0, 40), func(b []byte) string { return string(b) }),
		).Draw(t, "text")
		want := len(s) <= MaxPhaseText && utf8.ValidString(s)
		for _, r := range s {
			if unicode.IsControl(r) && r != '\n' && r != '\t' {
				want = false
			}
		}
		if got := ValidPhaseText(s); got != want {
			t.Fatalf("ValidPhaseText(%q) = %v, want %v", s, got, want)
		}
	})
}
