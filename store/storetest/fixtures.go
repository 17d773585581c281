package storetest

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/vigilhq/vigil/store"
)

// The suite's fixtures, for an adapter's own tests of the store over it.

// Epoch is the suite's fixed time: the store keeps no clock of its own,
// so every time is an argument.
func Epoch() time.Time { return t0 }

// IDs is a seeded source of watch ids: the same seed, the same ids.
func IDs(seed byte) io.Reader { return seqReader{rand.NewChaCha8([32]byte{seed})} }

// Pending is a pending timer row of recipient created at at, with a
// fresh id from ids, not yet written.
func Pending(tb testing.TB, ids io.Reader, recipient string, at time.Time) store.Watch {
	tb.Helper()
	id, err := store.NewID(at, ids)
	if err != nil {
		tb.Fatal(err)
	}
	exp := at.Add(15 * time.Minute)
	return store.Watch{
		ID: id, Kind: "timer", Params: json.RawMessage(`{"at":"2026-11-30T13:00:00Z"}`),
		Recipient: store.Recipient{ID: recipient}, State: store.Pending, Receipt: store.ReceiptNone,
		Every: store.Duration(time.Minute), CreatedAt: at, ExpiresAt: &exp,
	}
}

// RecipientWriter is what Running writes a recipient through.
type RecipientWriter interface {
	PutRecipient(ctx context.Context, r store.RecipientRecord) (store.RecipientRecord, bool, error)
}

// Running writes recipient id running, with a webhook when hook is set.
func Running(tb testing.TB, s RecipientWriter, id, hook string) {
	tb.Helper()
	r := store.RecipientRecord{ID: id, Status: store.StatusRunning, CreatedAt: t0, UpdatedAt: t0}
	if hook != "" {
		r.Webhook = &store.Webhook{URL: hook, Secret: "whsec_x"}
	}
	if _, _, err := s.PutRecipient(context.Background(), r); err != nil {
		tb.Fatal(err)
	}
}
