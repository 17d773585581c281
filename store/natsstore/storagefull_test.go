package natsstore

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vigilhq/vigil/internal/natstest"
	"github.com/vigilhq/vigil/store"
)

// createUntilRefused registers watches until the store refuses one, and
// returns that refusal and the refused row.
func createUntilRefused(t *testing.T, st testStore, ids io.Reader) (store.Watch, error) {
	t.Helper()
	for range 2000 {
		w := pendingWatch(t, ids, "r", t0)
		if err := st.Create(context.Background(), w); err != nil {
			return w, err
		}
	}
	t.Fatal("2,000 watches taken, none refused")
	return store.Watch{}, nil
}

// A bucket whose stream is at its max_bytes (an operator's limit) refuses
// a commit with store.ErrStorageFull, which the API answers 507
// insufficient_storage rather than 500, told by the server's error code;
// nothing of the commit is written; and once the limit is raised the same
// write is taken, with no reopen.
func TestAStreamAtItsMaxBytesIsStorageFull(t *testing.T) {
	ctx := context.Background()
	srv := runServer(t)
	st := openStore(t, Config{}, srv)
	ids := newIDs()
	createdWatch(t, st, ids, "r", t0)
	info, err := st.stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := info.Config
	cfg.MaxBytes = int64(info.State.Bytes) + 16<<10
	if _, err := st.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	refused, err := createUntilRefused(t, st, ids)
	var apiErr *jetstream.APIError
	if !errors.Is(err, store.ErrStorageFull) || !errors.As(err, &apiErr) || apiErr.ErrorCode != codeStreamStoreFailed {
		t.Fatalf("a commit past the stream's max_bytes: %v, want store.ErrStorageFull from the server's code %d", err, codeStreamStoreFailed)
	}
	if _, err := st.Get(ctx, refused.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused row: %v, want it absent", err)
	}
	cfg.MaxBytes = -1
	if _, err := st.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := st.Create(ctx, refused); err != nil {
		t.Fatalf("the refused write once the limit is raised: %v", err)
	}
}

// A server at its JetStream storage limit (max_file_store) refuses a
// commit with store.ErrStorageFull too.
func TestAServerAtItsStorageLimitIsStorageFull(t *testing.T) {
	srv := natstest.StartWith(t, server.Options{JetStreamMaxStore: 64 << 10})
	st := openStore(t, Config{}, srv)
	_, err := createUntilRefused(t, st, newIDs())
	var apiErr *jetstream.APIError
	if !errors.Is(err, store.ErrStorageFull) || !errors.As(err, &apiErr) {
		t.Fatalf("a commit past the server's storage limit: %v, want store.ErrStorageFull from the server's code", err)
	}
	t.Logf("the server's refusal: code %d: %v", apiErr.ErrorCode, err)
}
