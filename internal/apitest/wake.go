package apitest

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/store"
)

// threadKind is the built-in wait on a Work's next item (observe.WorkKind;
// named here, since internal/observe's own tests import this package).
const threadKind = "observe.thread"

// ParkThreadWatch registers, as the host (kind.HostCaller), the next
// observe.thread wait on Work w for recipient and returns once its registration probe has found nothing new
// and put it back in the schedule, due at its deadline. It waits on the
// wall clock, for benchmarks whose scheduler runs its real loop.
func ParkThreadWatch(sched *scheduler.Scheduler, w store.Work, recipient string) error {
	ctx := context.Background()
	if _, err := sched.Register(ctx, scheduler.Registration{
		Kind: threadKind, Params: json.RawMessage(`{"work_id":"` + w.ID.String() + `"}`), Recipient: store.Recipient{ID: recipient},
		Caller: kind.HostCaller{},
	}); err != nil {
		return err
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if next, ok := sched.NextWake(); ok && next.After(time.Now().Add(time.Minute)) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the watch on %s was not parked within 10 s", w.ID)
		}
		time.Sleep(20 * time.Microsecond)
	}
}

// CheckWake says whether msgs is exactly one new_items wake carrying the
// one item want.
func CheckWake(msgs []store.Message, want string) error {
	if len(msgs) != 1 || msgs[0].Type != store.MessageFired || msgs[0].Outcome.Result != "new_items" {
		return fmt.Errorf("waiting for %s: %d messages %+v", want, len(msgs), msgs)
	}
	var d struct {
		Items []struct {
			Item string `json:"item"`
		} `json:"items"`
	}
	if err := json.Unmarshal(msgs[0].Outcome.Detail, &d); err != nil || len(d.Items) != 1 || d.Items[0].Item != want {
		return fmt.Errorf("waiting for %s: wake %s (%v)", want, msgs[0].Outcome.Detail, err)
	}
	return nil
}
