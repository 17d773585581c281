package scheduler

import "time"

// firstCheck is when a new watch is first probed: the kind's first check
// (admit's next_check: a timer's instant), clamped to [now, the
// deadline]; now when the kind gave none, so a kind that cannot tell is
// probed at once. A first check after now is kept with the row's
// schedule (its durable next check), so Prime arms the watch there after
// a restart instead of at its registration.
//
// Why no lead before the instant: a due watch is probed when the clock
// reaches its due time, and a probe whose now is at or past the instant
// settles (the timer's observe compares now with it), so arming at the
// instant fires it then, as the timer's own next_check does; the
// lateness the scheduler allows (its p99 in docs/BENCHMARKS.md) is
// after the due time, never before.
func firstCheck(now, hint time.Time, deadline *time.Time) time.Time {
	if hint.IsZero() || !hint.After(now) {
		return now
	}
	if deadline != nil && hint.After(*deadline) {
		return *deadline
	}
	return hint.UTC()
}
