package store

import (
	"context"
	"testing"
)

func runningRecipientFor(t *testing.T, s *Badger, id, hook string) {
	t.Helper()
	r := RecipientRecord{ID: id, Status: StatusRunning, CreatedAt: t0, UpdatedAt: t0}
	if hook != "" {
		r.Webhook = &Webhook{URL: hook, Secret: "whsec_x"}
	}
	if _, _, err := s.PutRecipient(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

func firedMessage(t *testing.T, ids seqReader) Message {
	t.Helper()
	id, err := NewID(t0, ids)
	if err != nil {
		t.Fatal(err)
	}
	return Message{ID: id, Kind: "timer", Type: MessageFired, Outcome: Outcome{Result: "fired"}, At: t0}
}
