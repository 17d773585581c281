package conformance

import (
	"errors"
	"fmt"
	"testing"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/kind"
)

// Only a call that ran out of its time is tried again: a refusal, a trap
// or a raised error is the plugin's answer and counts at once.
func TestOnlyATimeoutIsTriedAgain(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{&kind.CallError{Kind: "k", Export: "admit", Reason: kind.FaultTimeout}, true},
		{fmt.Errorf("wrapped: %w", &kind.CallError{Reason: kind.FaultTimeout}), true},
		{&kind.CallError{Reason: kind.FaultTrap}, false},
		{&kind.CallError{Reason: kind.FaultRaised}, false},
		{&api.Error{Code: api.CodeInvalidParams}, false},
		{errors.New("timeout"), false},
		{nil, false},
	}
	for _, c := range cases {
		if got := timedOut(c.err); got != c.want {
			t.Errorf("timedOut(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
