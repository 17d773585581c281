package delivery

import (
	"testing"
	"time"

	"github.com/vigilhq/vigil/store"
)

// Counts is what the outbox holds: first attempts and retries waiting,
// the retries among them, and nothing once a push is done.
func TestOutboxCounts(t *testing.T) {
	o, err := NewOutbox(OutboxConfig{Store: nopOutboxStore{}})
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	o.Enqueue(store.Push{Recipient: "a", Seq: 1, State: store.PushPending})
	o.Enqueue(store.Push{Recipient: "a", Seq: 2, State: store.PushRetrying, NextAttempt: &later})
	o.Enqueue(store.Push{Recipient: "b", Seq: 1, State: store.PushDelivered}) // final: not held
	if held, retrying := o.Counts(); held != 2 || retrying != 1 {
		t.Fatalf("held %d retrying %d, want 2 and 1", held, retrying)
	}
	o.mu.Lock()
	k, _, ok := o.take()
	if ok {
		o.done(k, true)
	}
	o.mu.Unlock()
	if held, retrying := o.Counts(); !ok || held != 1 || retrying != 1 {
		t.Fatalf("after a/1 was sent: held %d retrying %d (%v)", held, retrying, ok)
	}
}
