package conformance

import (
	"fmt"
	"time"

	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/sdk/abi"
)

// LateProbe reports the trap of a watch that expires instead of settling:
// a kind that is not standing answered pending at now with no next_check,
// and its next probe by its cadence (every) would fall after its natural
// deadline (admit's deadline). The scheduler clamps that probe to the
// deadline, and a watch still pending at its deadline expires; a timer
// whose instant is its deadline, probed a minute apart, expires instead of
// firing. The message says what will happen and when. The suite warns of
// it (observe.deadline-reachable) and vigil plugin try prints it.
func LateProbe(standing bool, obs kind.Observation, now time.Time, every time.Duration, deadline time.Time) (string, bool) {
	if standing || deadline.IsZero() || obs.Status != abi.StatusPending || obs.Fault != nil || !obs.NextCheck.IsZero() || every <= 0 {
		return "", false
	}
	next := now.Add(every)
	if !next.After(deadline) {
		return "", false
	}
	return fmt.Sprintf("at %s it answered pending with no next_check; its next probe by its cadence (%s) would be at %s, after its natural deadline %s, "+
		"so the host probes it once more at the deadline itself and expires it if it is still pending then",
		now.UTC().Format(time.RFC3339), every, next.UTC().Format(time.RFC3339), deadline.UTC().Format(time.RFC3339)), true
}
