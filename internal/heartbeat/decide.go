package heartbeat

import "time"

// Evidence is what one check decides on: the time, the heartbeat's
// period and grace, its last ping (zero before the first) and whether
// that ping reported a failure (/fail), and the baseline the previous
// check left (nil before the first).
type Evidence struct {
	Now      time.Time
	Period   time.Duration
	Grace    time.Duration
	LastPing time.Time
	Failed   bool
	Previous *Baseline
}

// Baseline is what a heartbeat watch remembers between checks, kept on
// its row: the ping a silence followed once missed was mailed for it, and
// the failed ping failed was mailed for (each zero while none is).
type Baseline struct {
	MissedAfter time.Time `json:"missed_after,omitzero"`
	FailedAt    time.Time `json:"failed_at,omitzero"`
}

// The mails.
const (
	Missed    = "missed"
	Failed    = "failed"
	Recovered = "recovered"
)

// Why a check mails nothing; each is the watch's note.
const (
	WhyNoPing        = "no ping yet"
	WhyOnTime        = "the last ping is within period and grace"
	WhyAlreadyMailed = "missed was mailed for this silence"
	WhyStillFailing  = "failed was mailed for the last ping"
)

// Verdict is a check's answer: Mail is Missed, Failed, Recovered or ""
// (nothing), Why the note, Next the check's next due time (zero: only a
// ping wakes it), Baseline what the check leaves on the watch.
type Verdict struct {
	Mail     string
	Why      string
	Next     time.Time
	Baseline Baseline
}

// Due is when a heartbeat whose last ping was at last is missed.
func Due(last time.Time, period, grace time.Duration) time.Time { return last.Add(period + grace) }

// Decide is the heartbeat's rule. With no ping yet it waits. A failed
// ping not yet mailed is failed. A good ping since the silence or the
// failure last mailed is recovered. Past the last ping plus period plus
// grace it is missed, mailed once: the baseline names the ping the
// silence followed. Otherwise nothing. While the heartbeat is not missed,
// the next check is that due time.
func Decide(e Evidence) Verdict {
	var prev Baseline
	if e.Previous != nil {
		prev = *e.Previous
	}
	if e.LastPing.IsZero() {
		return Verdict{Why: WhyNoPing, Baseline: prev}
	}
	due := Due(e.LastPing, e.Period, e.Grace)
	down := !prev.MissedAfter.IsZero() || !prev.FailedAt.IsZero()
	switch {
	case e.Failed && !prev.FailedAt.Equal(e.LastPing):
		return Verdict{Mail: Failed, Why: "the last ping reported a failure", Next: due, Baseline: Baseline{FailedAt: e.LastPing}}
	case down && !e.Failed && e.LastPing.After(prev.MissedAfter) && e.LastPing.After(prev.FailedAt):
		// A good ping ended the silence or the failure mailed: recovered
		// first, even when a new silence has begun since (its due time
		// has passed: the next check, due at once, mails it).
		return Verdict{Mail: Recovered, Why: "pinged again after a silence or a failure", Next: due, Baseline: Baseline{}}
	case !e.Now.Before(due):
		if prev.MissedAfter.Equal(e.LastPing) {
			return Verdict{Why: WhyAlreadyMailed, Baseline: prev}
		}
		return Verdict{Mail: Missed, Why: "no ping since " + e.LastPing.UTC().Format(time.RFC3339Nano), Baseline: Baseline{MissedAfter: e.LastPing, FailedAt: prev.FailedAt}}
	case e.Failed:
		return Verdict{Why: WhyStillFailing, Next: due, Baseline: prev}
	}
	return Verdict{Why: WhyOnTime, Next: due, Baseline: prev}
}
