package reminder

import (
	"testing"
	"time"

	"github.com/vigilhq/vigil/store"
)

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// eligible is evidence on which a reminder goes out: a running recipient
// that opted in every 10 minutes, reported build itself 30 minutes ago,
// has not been reminded of it, and worked (3 replies, 7 tool calls) since
// the previous check saw 2 and 5.
func eligible() Evidence {
	return Evidence{
		Now: t0.Add(30 * time.Minute), Status: store.StatusRunning, Every: 10 * time.Minute,
		Phase:    &store.Phase{Name: "build", ReportedBy: "w", ReportedAt: t0},
		Activity: store.Activity{Replies: 3, ToolCalls: 7},
		Previous: &Baseline{Replies: 2, ToolCalls: 5},
	}
}

// One row per clause of the rule. Each "no" row is evidence a timer alone
// (remind every interval) would remind on, and the rule must not.
func TestDecide(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(*Evidence)
		remind bool
		why    string
	}{
		{"eligible", func(*Evidence) {}, true, WhyReminderSent},
		{"first check: nothing to compare the counts with", func(e *Evidence) { e.Previous = nil }, false, WhyFirstCheck},
		{"paused", func(e *Evidence) { e.Status = store.StatusPaused }, false, WhyNotRunning},
		{"stopped", func(e *Evidence) { e.Status = store.StatusStopped }, false, WhyNotRunning},
		{"record gone", func(e *Evidence) { e.Status = "" }, false, WhyNotRunning},
		{"opted out since the watch was made", func(e *Evidence) { e.Every = 0 }, false, WhyNotOptedIn},
		{"no phase reported", func(e *Evidence) { e.Phase = nil }, false, WhyNoPhase},
		{"phase seeded by an operator", func(e *Evidence) { e.Phase.Seeded, e.Phase.ReportedBy = true, "operator" }, false, WhySeeded},
		{"handoff", func(e *Evidence) { e.Phase.Name = PhaseHandoff }, false, WhyHandoff},
		{"blocked", func(e *Evidence) { e.Phase.Name = PhaseBlocked }, false, WhyHandoff},
		{"report younger than the interval", func(e *Evidence) { e.Phase.ReportedAt = e.Now.Add(-10*time.Minute + time.Nanosecond) }, false, WhyRecent},
		{"report exactly one interval old", func(e *Evidence) { e.Phase.ReportedAt = e.Now.Add(-10 * time.Minute) }, true, WhyReminderSent},
		{"already reminded of this report (a long task)", func(e *Evidence) {
			e.Previous.RemindedFor, e.Previous.RemindedAt = t0, t0.Add(10*time.Minute)
		}, false, WhyReminded},
		{"a new report after a reminder", func(e *Evidence) {
			e.Previous.RemindedFor, e.Previous.RemindedAt = t0.Add(-time.Hour), t0.Add(-50*time.Minute)
		}, true, WhyReminderSent},
		{"no activity since the previous check (a stall, or one long tool call)", func(e *Evidence) { e.Activity = store.Activity{Replies: 2, ToolCalls: 5} }, false, WhyNoActivity},
		{"only replies moved", func(e *Evidence) { e.Activity.ToolCalls = 5 }, true, WhyReminderSent},
		{"only tool calls moved", func(e *Evidence) { e.Activity.Replies = 2 }, true, WhyReminderSent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := eligible()
			tt.edit(&e)
			v := Decide(e)
			if v.Remind != tt.remind || v.Why != tt.why {
				t.Fatalf("Decide = remind %v (%s), want %v (%s)", v.Remind, v.Why, tt.remind, tt.why)
			}
			// The baseline always takes the counts seen now.
			if v.Baseline.Replies != e.Activity.Replies || v.Baseline.ToolCalls != e.Activity.ToolCalls {
				t.Fatalf("baseline %+v, counts %+v", v.Baseline, e.Activity)
			}
			// The report reminded of moves with a reminder only.
			switch {
			case v.Remind && (!v.Baseline.RemindedFor.Equal(e.Phase.ReportedAt) || !v.Baseline.RemindedAt.Equal(e.Now)):
				t.Fatalf("a reminder left %+v", v.Baseline)
			case !v.Remind && e.Previous != nil && (v.Baseline.RemindedFor != e.Previous.RemindedFor || v.Baseline.RemindedAt != e.Previous.RemindedAt):
				t.Fatalf("no reminder, yet %+v became %+v", e.Previous, v.Baseline)
			}
		})
	}
}

// A report reminded of once is never reminded of again, however many
// intervals pass and however the counts move: a timer would remind at
// every one of them.
func TestDecideOncePerReport(t *testing.T) {
	e := eligible()
	sent := 0
	for i := range 20 {
		v := Decide(e)
		if v.Remind {
			sent++
		}
		e.Previous = &v.Baseline
		e.Now = e.Now.Add(10 * time.Minute)
		e.Activity.Replies += uint64(i + 1)
	}
	if sent != 1 {
		t.Fatalf("%d reminders of one report, want 1", sent)
	}
	// A new report (the agent said where it is) starts over.
	e.Phase = &store.Phase{Name: "review", ReportedBy: "w", ReportedAt: e.Now}
	for range 3 {
		v := Decide(e)
		if v.Remind {
			sent++
		}
		e.Previous = &v.Baseline
		e.Now = e.Now.Add(10 * time.Minute)
		e.Activity.ToolCalls++
	}
	if sent != 2 {
		t.Fatalf("%d reminders after a second report, want 2", sent)
	}
}
