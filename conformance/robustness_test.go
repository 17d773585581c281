package conformance

import (
	"errors"
	"fmt"
	"testing"

	"github.com/vigilhq/vigil/host/plugin"
)

// Only a call that ran out of its time is tried again: a refusal, a trap
// or a raised error is the plugin's answer and counts at once.
func TestOnlyATimeoutIsTriedAgain(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{&plugin.CallError{Kind: "k", Export: "admit", Reason: plugin.FaultTimeout}, true},
		{fmt.Errorf("wrapped: %w", &plugin.CallError{Reason: plugin.FaultTimeout}), true},
		{&plugin.CallError{Reason: plugin.FaultTrap}, false},
		{&plugin.CallError{Reason: plugin.FaultRaised}, false},
		{&plugin.Refusal{Code: plugin.CodeInvalidParams}, false},
		{errors.New("timeout"), false},
		{nil, false},
	}
	for _, c := range cases {
		if got := timedOut(c.err); got != c.want {
			t.Errorf("timedOut(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
