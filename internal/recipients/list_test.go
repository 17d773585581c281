package recipients

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/store"
)

// List counts each recipient's pending watches up to the bound, and says
// when the count is the bound.
func TestListCountsPendingUpToTheBound(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	svc := f.svc.WithLimits(Limits{MaxPending: 3})
	for _, id := range []string{"a", "b"} {
		if _, err := svc.Put(ctx, Update{ID: id, Status: store.StatusRunning}); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if _, err := f.sched.Register(ctx, scheduler.Registration{Kind: "ci", Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: "a"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.sched.Register(ctx, scheduler.Registration{Kind: "ci", Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: "b"}}); err != nil {
		t.Fatal(err)
	}
	got, err := svc.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "a" || got[0].Pending != 3 || !got[0].Capped || got[1].Pending != 1 || got[1].Capped {
		t.Fatalf("%+v", got)
	}
}
