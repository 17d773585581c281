//go:build !linux

package runner

import (
	"context"
	"time"

	"github.com/vigilhq/vigil/sdk/abi"
)

// supported: Run answers unavailable here, before any check.
const supported = false

func (r *Runner) run(context.Context, string, []string, string, abi.ExecRequest, time.Duration) abi.ExecResponse {
	return r.refuse(abi.ExecUnavailable, unsupportedMessage)
}
