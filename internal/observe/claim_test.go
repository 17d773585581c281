package observe

import (
	"context"
	"errors"
	"testing"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/recipients"
	"github.com/vigilhq/vigil/store"
)

// A recipient that is paused or stopped claims no Work: 409
// recipient_not_running naming recipient.id, and the Work stays as it
// was. One not yet known claims (its first watch creates it running), and
// so does one running again.
func TestClaimNeedsARunningRecipient(t *testing.T) {
	r := newRig(t, helpConfig("watcher"))
	ctx := context.Background()
	r.mustRecord("watcher", Record{Item: "m1", Thread: "T", Text: "opener"})
	r.route()
	w := r.open()[0]
	put := func(id string, status store.RecipientStatus) {
		t.Helper()
		if _, err := r.stack.Recipients.Put(ctx, recipients.Update{ID: id, Status: status}); err != nil {
			t.Fatal(err)
		}
	}
	for _, status := range []store.RecipientStatus{store.StatusPaused, store.StatusStopped} {
		put("agent-1", status)
		_, _, err := r.ob.ClaimWork(ctx, w.ID, "agent-1")
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != api.CodeRecipientNotRunning || ae.Field != "recipient.id" || api.Status(ae.Code) != 409 {
			t.Fatalf("claim for a %s recipient: %v", status, err)
		}
		if got, _, err := r.ob.GetWork(ctx, w.ID); err != nil || got.ClaimedBy != "" || got.Consumed != 0 || got.ClaimedAt != nil {
			t.Fatalf("a refused claim changed the Work: %+v %v", got, err)
		}
	}
	put("agent-1", store.StatusRunning)
	if got, _, err := r.ob.ClaimWork(ctx, w.ID, "agent-1"); err != nil || got.ClaimedBy != "agent-1" {
		t.Fatalf("claim for a running recipient: %+v %v", got, err)
	}
	r.mustRecord("watcher", Record{Item: "m2", Thread: "U", Text: "another"})
	r.route()
	open := r.open()
	if len(open) != 2 {
		t.Fatalf("open Work %+v", open)
	}
	for _, o := range open {
		if o.ID == w.ID {
			continue
		}
		if got, _, err := r.ob.ClaimWork(ctx, o.ID, "agent-new"); err != nil || got.ClaimedBy != "agent-new" {
			t.Fatalf("claim for a recipient not yet known: %+v %v", got, err)
		}
		if _, err := r.stack.Store.GetRecipient(ctx, "agent-new"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a claim created its recipient: %v", err)
		}
	}
}
