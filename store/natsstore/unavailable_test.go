package natsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vigilhq/vigil/store"
)

// What JetStream answers is told by type and by the server's error code:
// no answer, no server, no leader or no quorum is store.ErrUnavailable
// (saying whether a commit may have been stored); a refusal, and an
// error of the caller's own context, are not.
func TestUnavailableIsToldByTypeAndCode(t *testing.T) {
	live, ended := context.Background(), func() context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx
	}()
	for _, tt := range []struct {
		name        string
		ctx         context.Context
		err         error
		unavailable bool
	}{
		{"a request timed out", live, fmt.Errorf("natsstore: reading k: %w", nats.ErrTimeout), true},
		{"its deadline passed", live, fmt.Errorf("natsstore: reading k: %w", context.DeadlineExceeded), true},
		{"no responders", live, jetstream.ErrNoStreamResponse, true},
		{"reconnecting", live, nats.ErrConnectionReconnecting, true},
		{"the reconnect buffer is full", live, nats.ErrReconnectBufExceeded, true},
		{"no meta leader", live, &jetstream.APIError{Code: 503, ErrorCode: codeClusterNotAvailable}, true},
		{"no stream leader", live, &jetstream.APIError{Code: 500, ErrorCode: codeClusterNotLeader}, true},
		{"the stream offline", live, &jetstream.APIError{Code: 500, ErrorCode: codeStreamOffline}, true},
		{"JetStream restarting", live, &jetstream.APIError{Code: 503, ErrorCode: codeNotEnabled}, true},
		{"another 503", live, &jetstream.APIError{Code: 503, ErrorCode: 1}, true},
		{"a wrong last sequence", live, &jetstream.APIError{Code: 400, ErrorCode: codeWrongLastSeq}, false},
		{"the stream not known yet", live, jetstream.ErrStreamNotFound, true},
		{"a consumer not found", live, jetstream.ErrConsumerNotFound, false},
		{"some other error", live, errors.New("natsstore: a commit of 901 keys"), false},
		{"the caller gave up", ended, nats.ErrTimeout, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, sent := range []bool{false, true} {
				err := unavailable(tt.ctx, "commit", tt.err, sent)
				var ue *store.UnavailableError
				switch {
				case errors.Is(err, store.ErrUnavailable) != tt.unavailable:
					t.Fatalf("%v: unavailable %v, want %v", err, !tt.unavailable, tt.unavailable)
				case tt.unavailable && (!errors.As(err, &ue) || ue.MayHaveWritten != sent || !errors.Is(err, tt.err)):
					t.Fatalf("%#v, want an *UnavailableError wrapping %v with MayHaveWritten %v", err, tt.err, sent)
				case !tt.unavailable && err != tt.err:
					t.Fatalf("%v, want the error as it was", err)
				}
			}
		})
	}
}

// Against a real server that has gone: a read and a registration are
// store.ErrUnavailable, the registration saying nothing was written (no
// commit could be sent), within a few of the store's timeouts.
func TestAServerGoneIsUnavailable(t *testing.T) {
	srv := runServer(t)
	st := openStore(t, Config{Timeout: 300 * time.Millisecond}, srv)
	ctx := context.Background()
	if _, _, err := st.PutRecipient(ctx, store.RecipientRecord{ID: "a", Status: store.StatusRunning, CreatedAt: time.Unix(0, 0), UpdatedAt: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
	srv.WaitForShutdown()
	began := time.Now()
	_, err := st.GetRecipient(ctx, "a")
	var ue *store.UnavailableError
	if !errors.As(err, &ue) || ue.MayHaveWritten {
		t.Fatalf("a read with the server gone: %v, want store.ErrUnavailable, nothing written", err)
	}
	exp := time.Unix(3600, 0)
	w := store.Watch{ID: store.ID{1}, Kind: "timer", Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: "a"},
		State: store.Pending, Receipt: store.ReceiptNone, Every: store.Duration(time.Minute), ExpiresAt: &exp}
	err = st.CreateIfRunning(ctx, w, 0)
	if !errors.As(err, &ue) || ue.MayHaveWritten {
		t.Fatalf("a registration with the server gone: %v, want store.ErrUnavailable, nothing written", err)
	}
	if d := time.Since(began); d > 10*time.Second {
		t.Fatalf("the two answers took %s", d)
	}
}
