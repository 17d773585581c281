package httpapi

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/core"
	"github.com/vigilhq/vigil/internal/recipients"
	"github.com/vigilhq/vigil/store"
)

// Two registrations for a recipient one place short of its bound, both
// past the bound's check before either wrote (the store holds each until
// both have reached it): one lands, and the other is refused in the
// store's transaction, answered as the check answers a registration at
// the bound.
func TestRegistrationsRacingForTheLastPlace(t *testing.T) {
	var arrived atomic.Int32
	all := make(chan struct{})
	c := faultCore(t, &faultKV{before: func(o store.TxOptions) error {
		if o.Name != "create-if-running" {
			return nil
		}
		if arrived.Add(1) == 2 {
			close(all)
		} else {
			select {
			case <-all:
			case <-time.After(5 * time.Second):
			}
		}
		return nil
	}}, 11, func(cfg *core.Config) { cfg.Limits = recipients.Limits{MaxPending: 1} })
	app := New(Deps{Scheduler: c.Scheduler, Watches: c.Store, Mailboxes: c.Delivery, Recipients: c.Recipients, Plugins: fakePlugins()}, Options{})
	statuses := make([]int, 2)
	bodies := make([][]byte, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			resp, b := call(t, app, "", "POST", "/api/v1/watches", `{"kind":"ci","params":{"sha":"a"},"recipient":{"id":"agent-1"}}`)
			statuses[i], bodies[i] = resp.StatusCode, b
		})
	}
	wg.Wait()
	if arrived.Load() < 2 {
		t.Fatalf("%d registrations reached the store, want both", arrived.Load())
	}
	refused := 0
	for i := range 2 {
		if statuses[i] == 201 {
			continue
		}
		refused++
		var env api.ErrorEnvelope
		if err := json.Unmarshal(bodies[i], &env); err != nil || statuses[i] != 422 || env.Error.Code != api.CodeTooManyPending ||
			env.Error.Field != "recipient.id" || env.Error.Setting != recipients.SettingMaxPending {
			t.Fatalf("the loser: %d %s, want 422 too_many_pending naming recipient.id and its setting", statuses[i], bodies[i])
		}
	}
	if refused != 1 {
		t.Fatalf("statuses %v, want one 201 and one 422", statuses)
	}
}
