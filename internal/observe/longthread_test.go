package observe

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/natstest"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/natsstore"
)

// TestALongThreadIsMailedInParts: a wait on a Work whose new items come
// to far more than one JetStream message holds (120 items of 16 KiB,
// about 2 MiB) is answered, on badger and on JetStream: each wake
// carries as many of the oldest items as fit the store's bound on an
// outcome (store.MaxOutcome), says more follow, and moves its
// recipient's input over what it carried alone, so the next waits carry
// the rest, every item once, in order.
func TestALongThreadIsMailedInParts(t *testing.T) {
	for _, backend := range []struct {
		name string
		open func(t *testing.T) func(context.Context) (*store.Store, error)
	}{
		{"badger", func(*testing.T) func(context.Context) (*store.Store, error) { return nil }},
		{"jetstream", func(t *testing.T) func(context.Context) (*store.Store, error) {
			srv := natstest.Start(t)
			return func(ctx context.Context) (*store.Store, error) {
				return natsstore.OpenStore(ctx, natsstore.Config{URLs: []string{srv.ClientURL()}})
			}
		}},
	} {
		t.Run(backend.name, func(t *testing.T) {
			r := newRigOn(t, backend.open(t), helpConfig("watcher"))
			ctx := context.Background()
			r.mustRecord("watcher", Record{Item: "m0", Thread: "T", Text: "opener"})
			r.route()
			w := r.open()[0]
			if _, _, err := r.ob.ClaimWork(ctx, w.ID, "responder"); err != nil {
				t.Fatal(err)
			}
			const items = 120
			text := strings.Repeat("z", MaxText)
			for i := 1; i <= items; i++ {
				r.mustRecord("watcher", Record{Item: fmt.Sprintf("m%d", i), Thread: "T", Text: text})
			}
			r.route()

			next := 2 // the first input the next wake must carry
			parts := 0
			for next <= items+1 {
				if parts > items {
					t.Fatalf("%d wakes and the thread is not all mailed", parts)
				}
				watch, err := r.stack.Scheduler.Register(ctx, scheduler.Registration{
					Kind: WorkKind, Params: json.RawMessage(`{"work_id":"` + w.ID.String() + `"}`), Recipient: store.Recipient{ID: "responder"},
					Caller: kind.HostCaller{},
				})
				if err != nil {
					t.Fatal(err)
				}
				r.stack.Scheduler.Tick(ctx, r.clock.Now())
				got, err := r.stack.Store.Get(ctx, watch.ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.State != store.Fired || got.Outcome == nil || got.Outcome.Result != "new_items" {
					t.Fatalf("wake %d: the watch is %s (%+v, note %q), want fired with new items", parts+1, got.State, got.Outcome, got.LastNote)
				}
				if n := len(got.Outcome.Result) + len(got.Outcome.Summary) + len(got.Outcome.Detail); n > store.MaxOutcome {
					t.Fatalf("wake %d: an outcome of %d bytes, over the store's bound of %d", parts+1, n, store.MaxOutcome)
				}
				var d ThreadDetail
				if err := json.Unmarshal(got.Outcome.Detail, &d); err != nil || len(d.Items) == 0 {
					t.Fatalf("wake %d: detail %.200s: %v", parts+1, got.Outcome.Detail, err)
				}
				for _, it := range d.Items {
					if it.N != next || it.Text != text {
						t.Fatalf("wake %d: item %d (%d bytes of text), want item %d whole", parts+1, it.N, len(it.Text), next)
					}
					next++
				}
				if d.Last != next-1 || d.More != (next <= items+1) {
					t.Fatalf("wake %d: last %d, more %v; want last %d, more %v", parts+1, d.Last, d.More, next-1, next <= items+1)
				}
				if work, _, err := r.ob.GetWork(ctx, w.ID); err != nil || work.Consumed != d.Last {
					t.Fatalf("wake %d: the claimer's consumed %d (%v), want %d: only what was mailed", parts+1, work.Consumed, err, d.Last)
				}
				parts++
			}
			if parts < 2 {
				t.Fatalf("%d wake for about 2 MiB of items, want it mailed in parts", parts)
			}
			msgs, err := r.stack.Delivery.Read(ctx, "responder", 0, 1000, 0)
			if err != nil || len(msgs) != parts {
				t.Fatalf("mail: %d messages (%v), want %d", len(msgs), err, parts)
			}
		})
	}
}
