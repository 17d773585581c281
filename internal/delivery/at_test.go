package delivery

import (
	"context"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/hosttest"
	"github.com/vigilhq/vigil/store"
)

// A message's at is when it is written (the delivery's clock as the
// transaction is made), not when the probe that settled it began.
func TestMessageAtIsWhenItIsWritten(t *testing.T) {
	st := openStore(t)
	written := t0.Add(5 * time.Second)
	d, err := New(Config{Store: st, Clock: fakeclock.At(written), IDs: hosttest.IDs(4)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	recipient(t, st, "a", store.StatusRunning, "")
	m := fired()
	if _, err := d.Settle(ctx, pending(t, st, "a"), store.Settlement{State: store.Fired, Outcome: &m.Outcome, SettledAt: t0}, m); err != nil {
		t.Fatal(err)
	}
	change := store.Message{Kind: "ticket", Type: store.MessageChanged, Outcome: store.Outcome{Result: "changed"}}
	if _, err := d.Carry(ctx, pendingKind(t, st, "a", "ticket"), []byte(`{}`), 1, "", &change); err != nil {
		t.Fatal(err)
	}
	msgs, err := d.Read(ctx, "a", 0, 10, 0)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("read: %+v %v", msgs, err)
	}
	for _, m := range msgs {
		if !m.At.Equal(written) {
			t.Fatalf("%s message at %v, want when it was written, %v", m.Type, m.At, written)
		}
	}
}
