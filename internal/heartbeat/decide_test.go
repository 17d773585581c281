package heartbeat

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

var t0 = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

// The case: a 2 s period and 1 s grace. missed comes at the last
// ping plus 3 s (within 3.2 s), once; recovered at the next ping.
func TestMissedOnceThenRecovered(t *testing.T) {
	e := Evidence{Period: 2 * time.Second, Grace: time.Second, LastPing: t0}
	e.Now = t0.Add(2999 * time.Millisecond)
	if v := Decide(e); v.Mail != "" || !v.Next.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("before the due time: %+v", v)
	}
	e.Now = t0.Add(3 * time.Second)
	v := Decide(e)
	if v.Mail != Missed || !v.Baseline.MissedAfter.Equal(t0) || !v.Next.IsZero() {
		t.Fatalf("at the due time: %+v", v)
	}
	// A later check (a restart's, with the baseline persisted) mails
	// nothing more for this silence.
	e.Previous, e.Now = &v.Baseline, t0.Add(time.Hour)
	if again := Decide(e); again.Mail != "" || again.Why != WhyAlreadyMailed || again.Baseline != v.Baseline {
		t.Fatalf("a second check of one silence: %+v", again)
	}
	// The next ping ends it: recovered, once.
	e.LastPing, e.Now = t0.Add(time.Hour), t0.Add(time.Hour)
	r := Decide(e)
	if r.Mail != Recovered || !r.Baseline.MissedAfter.IsZero() || !r.Next.Equal(t0.Add(time.Hour+3*time.Second)) {
		t.Fatalf("the ping after: %+v", r)
	}
	e.Previous = &r.Baseline
	if again := Decide(e); again.Mail != "" {
		t.Fatalf("recovered twice: %+v", again)
	}
}

// A failed ping mails failed at once, once; the next good ping recovers.
func TestFailedThenRecovered(t *testing.T) {
	e := Evidence{Now: t0, Period: time.Minute, Grace: time.Second, LastPing: t0, Failed: true}
	v := Decide(e)
	if v.Mail != Failed || !v.Baseline.FailedAt.Equal(t0) || !v.Next.Equal(t0.Add(61*time.Second)) {
		t.Fatalf("a failed ping: %+v", v)
	}
	e.Previous = &v.Baseline
	if again := Decide(e); again.Mail != "" {
		t.Fatalf("failed twice for one ping: %+v", again)
	}
	e.LastPing, e.Now, e.Failed = t0.Add(time.Second), t0.Add(time.Second), false
	if r := Decide(e); r.Mail != Recovered {
		t.Fatalf("the good ping after: %+v", r)
	}
}

func TestNoPingIsWaiting(t *testing.T) {
	if v := Decide(Evidence{Now: t0.Add(24 * time.Hour), Period: time.Second}); v.Mail != "" || v.Why != WhyNoPing || !v.Next.IsZero() {
		t.Fatalf("%+v", v)
	}
}

// Over any run of pings and checks, each silence (a gap past period plus
// grace that a check saw) is mailed missed exactly once, and recovered
// follows exactly the silences mailed, when a ping came after them.
func TestEachSilenceMailedOnce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		period := time.Duration(rapid.IntRange(1, 10).Draw(t, "period")) * time.Second
		grace := time.Duration(rapid.IntRange(0, 5).Draw(t, "grace")) * time.Second
		var last time.Time
		var base *Baseline
		now := t0
		missed, recovered := 0, 0
		silenceSeen := false // the current silence was mailed
		for range rapid.IntRange(1, 60).Draw(t, "steps") {
			now = now.Add(time.Duration(rapid.IntRange(0, 20).Draw(t, "dt")) * time.Second)
			if rapid.Bool().Draw(t, "ping") {
				last = now
				// A ping's check may come late (a restart between them):
				// a new silence may have begun by then.
				now = now.Add(time.Duration(rapid.IntRange(0, 20).Draw(t, "late")) * time.Second)
			}
			v := Decide(Evidence{Now: now, Period: period, Grace: grace, LastPing: last, Previous: base})
			switch v.Mail {
			case Missed:
				if silenceSeen {
					t.Fatalf("missed twice for one silence at %v", now)
				}
				silenceSeen = true
				missed++
			case Recovered:
				if !silenceSeen {
					t.Fatalf("recovered without a missed at %v", now)
				}
				silenceSeen = false
				recovered++
			}
			if v.Mail == Recovered && !v.Next.After(now) {
				// The next check is due at once: the new silence.
				nv := Decide(Evidence{Now: now, Period: period, Grace: grace, LastPing: last, Previous: &v.Baseline})
				if nv.Mail != Missed {
					t.Fatalf("a silence begun before its recovery's check not mailed: %+v", nv)
				}
				v = nv
				silenceSeen = true
				missed++
			}
			if !last.IsZero() && !now.Before(Due(last, period, grace)) && !silenceSeen {
				t.Fatalf("a silence past its due time not mailed at %v", now)
			}
			b := v.Baseline
			base = &b
		}
		if recovered > missed || missed-recovered > 1 {
			t.Fatalf("%d missed, %d recovered", missed, recovered)
		}
	})
}
