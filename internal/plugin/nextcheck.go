package plugin

import (
	"errors"
	"fmt"
	"time"

	"github.com/vigilhq/vigil/sdk/abi"
)

// ErrBadNextCheck: admit's next_check is off the contract (on a refusal,
// before the Unix epoch, or after the natural deadline admit gave). It
// is the plugin's fault, inside a *CallError, never the caller's.
var ErrBadNextCheck = errors.New("admit's next_check is off the contract")

// checkNextCheck holds admit's next_check, the watch's first check, to
// the contract: on an ok answer only, not before the Unix epoch (the host
// keeps a next check as unix nanoseconds), and not after the natural
// deadline the same answer gives (the watch would be probed only at its
// deadline, the check unused). An instant already past is on the
// contract: admit has no clock, and the scheduler probes such a watch at
// once. Any other answer is the plugin's fault (ErrBadNextCheck).
func checkNextCheck(resp abi.AdmitResponse) error {
	n := resp.NextCheck
	switch {
	case n == nil:
		return nil
	case !resp.OK:
		return fmt.Errorf("%w: a next_check on a refusal", ErrBadNextCheck)
	case n.Unix() < 0:
		return fmt.Errorf("%w: %s is before the Unix epoch", ErrBadNextCheck, n.UTC().Format(time.RFC3339Nano))
	case resp.Deadline != nil && n.After(*resp.Deadline):
		return fmt.Errorf("%w: %s is after the natural deadline %s", ErrBadNextCheck,
			n.UTC().Format(time.RFC3339Nano), resp.Deadline.UTC().Format(time.RFC3339Nano))
	}
	return nil
}
