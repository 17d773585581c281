package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/store"
)

// pausingRecipients pauses the recipient just before the row is written:
// a pause that lands between registration's early check and its write.
type pausingRecipients struct{ *store.Store }

func (p pausingRecipients) CreateIfRunning(ctx context.Context, w store.Watch, maxPending int) error {
	rec, err := p.GetRecipient(ctx, w.Recipient.ID)
	if err != nil {
		return err
	}
	rec.Status = store.StatusPaused
	if _, _, err := p.PutRecipient(ctx, rec); err != nil {
		return err
	}
	return p.Store.CreateIfRunning(ctx, w, maxPending)
}

// Registration commits the row only if the recipient is running in the
// transaction that writes it: a pause that lands after the early check is
// refused with recipient_not_running, and no row exists.
func TestRegistrationRacingAPauseLeavesNoRow(t *testing.T) {
	h := newHarness(t)
	s, err := New(Config{Store: h.store, Plugins: h.plugins, Deliver: h.deliver, Recipients: pausingRecipients{h.store}, Clock: h.clock})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Register(context.Background(), Registration{Kind: "ci", Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: "agent-1"}})
	var se *api.Error
	if !errors.As(err, &se) || se.Code != api.CodeRecipientNotRunning {
		t.Fatalf("register: %v", err)
	}
	rows, _, err := h.store.List(context.Background(), store.Filter{Recipient: "agent-1"})
	if err != nil || len(rows) != 0 {
		t.Fatalf("a watch was left on a paused recipient: %+v %v", rows, err)
	}
	if s.Pending() != 0 {
		t.Fatalf("armed %d", s.Pending())
	}
	if _, ok := s.NextWake(); ok {
		t.Fatal("a timer is armed for a refused registration")
	}
}
