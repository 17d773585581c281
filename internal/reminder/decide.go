package reminder

import (
	"time"

	"github.com/vigilhq/vigil/store"
)

// Phases that never get a reminder: the recipient has said it is handing
// its work over or cannot go on, and a reminder to report progress would
// be noise in a session that is not working on anything.
const (
	PhaseHandoff = "handoff"
	PhaseBlocked = "blocked"
)

// Evidence is what one check decides on, all of it read fresh from the
// store at the check (never from a cache), and the baseline the previous
// check left on the watch.
type Evidence struct {
	Now time.Time
	// Status is the recipient's stored status; empty when its record is
	// gone.
	Status store.RecipientStatus
	// Every is the recipient's opt-in as stored now (zero: it opted out
	// and the reconciler has not yet cancelled this watch).
	Every    time.Duration
	Phase    *store.Phase
	Activity store.Activity
	// Previous is the baseline of the previous check; nil before the first.
	Previous *Baseline
}

// Baseline is what a reminder watch remembers between checks, persisted
// on the watch row (its baseline) so a restart neither re-reminds nor
// forgets: the activity counts the last check saw, and the report it last
// reminded of.
type Baseline struct {
	Replies   uint64 `json:"replies"`
	ToolCalls uint64 `json:"tool_calls"`
	// RemindedFor is the ReportedAt of the phase report last reminded of,
	// and RemindedAt when; both zero before the first reminder.
	RemindedFor time.Time `json:"reminded_for,omitzero"`
	RemindedAt  time.Time `json:"reminded_at,omitzero"`
}

// Why a check sends no reminder: one reason per clause of the rule, in the
// order Decide tries them. Each is the watch's note; none carries a
// number, so a check that repeats its reason rewrites nothing.
const (
	WhyFirstCheck   = "first check: activity baseline recorded"
	WhyNotRunning   = "the recipient is not running"
	WhyNotOptedIn   = "the recipient has no reminder interval"
	WhyNoPhase      = "no phase reported"
	WhySeeded       = "the phase was seeded, not reported by the recipient itself"
	WhyHandoff      = "the phase is handoff or blocked"
	WhyRecent       = "the phase report is younger than the interval"
	WhyReminded     = "already reminded of this phase report"
	WhyNoActivity   = "no activity since the previous check"
	WhyReminderSent = "reminded of the phase report"
)

// Verdict is a check's answer: whether to remind, why not (the clause that
// held it back), and the baseline the check leaves on the watch.
type Verdict struct {
	Remind   bool
	Why      string
	Baseline Baseline
}

// Decide is the reminder's rule, a pure function of its evidence. A
// reminder goes out when, and only when, the recipient is running and
// opted in, its phase was reported by the recipient itself (not seeded),
// the phase is not handoff or blocked, the report is at least one interval
// old, it has not been reminded of this report already, and its activity
// moved since the previous check. Each clause excludes a case a timer
// alone gets wrong: a paused or stopped agent, a phase someone else set, a
// session that said it is done or stuck, a report just made, a long task
// reminded every interval, and a stall or one long tool call, which freeze
// the counts while the session still looks alive.
//
// The baseline always takes the counts seen now; the report reminded of
// moves only with a reminder. The first check (no previous baseline) has
// nothing to compare with: it records the counts and reminds of nothing.
func Decide(e Evidence) Verdict {
	next := Baseline{Replies: e.Activity.Replies, ToolCalls: e.Activity.ToolCalls}
	if e.Previous != nil {
		next.RemindedFor, next.RemindedAt = e.Previous.RemindedFor, e.Previous.RemindedAt
	}
	no := func(why string) Verdict { return Verdict{Why: why, Baseline: next} }
	switch {
	case e.Previous == nil:
		return no(WhyFirstCheck)
	case e.Status != store.StatusRunning:
		return no(WhyNotRunning)
	case e.Every <= 0:
		return no(WhyNotOptedIn)
	case e.Phase == nil:
		return no(WhyNoPhase)
	case e.Phase.Seeded:
		return no(WhySeeded)
	case e.Phase.Name == PhaseHandoff || e.Phase.Name == PhaseBlocked:
		return no(WhyHandoff)
	case e.Now.Before(e.Phase.ReportedAt.Add(e.Every)):
		return no(WhyRecent)
	case e.Previous.RemindedFor.Equal(e.Phase.ReportedAt):
		return no(WhyReminded)
	case e.Previous.Replies == e.Activity.Replies && e.Previous.ToolCalls == e.Activity.ToolCalls:
		return no(WhyNoActivity)
	}
	next.RemindedFor, next.RemindedAt = e.Phase.ReportedAt.UTC(), e.Now.UTC()
	return Verdict{Remind: true, Why: WhyReminderSent, Baseline: next}
}
