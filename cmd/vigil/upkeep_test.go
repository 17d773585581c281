package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/fetch"
	"github.com/vigilhq/vigil/internal/observe"
	"github.com/vigilhq/vigil/internal/syncbuf"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

// vigil serve runs the upkeep: an old fetch fact and dead letter are
// pruned while it serves, an old observed item is kept.
func TestServeRunsTheUpkeep(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the bundled plugins")
	}
	data := t.TempDir()
	old := time.Now().Add(-30 * 24 * time.Hour)
	st, err := badger.OpenStore(filepath.Join(data, "store"), badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, stream := range []string{fetch.StreamFacts, fetch.StreamDeadLetters, observe.Stream} {
		if _, _, err := st.AppendEvent(ctx, store.Event{Stream: stream, Key: "k", Type: "t", OccurredAt: old, Payload: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	logs := &syncbuf.Buffer{}
	cmd := newServe(logs)
	cmd.SetArgs([]string{"--listen", freePort(t), "--data", data})
	runCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- cmd.ExecuteContext(runCtx) }()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(logs.String(), `"class":"events:fetch.dead_letters"`) || !strings.Contains(logs.String(), `"class":"events:fetch"`) {
		select {
		case err := <-served:
			t.Fatalf("serve returned: %v\n%s", err, logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no prune logged\n%s", logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if err := <-served; err != nil {
		t.Fatalf("serve: %v\n%s", err, logs)
	}

	st, err = badger.OpenStore(filepath.Join(data, "store"), badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for stream, want := range map[string]int{fetch.StreamFacts: 0, fetch.StreamDeadLetters: 0, observe.Stream: 1} {
		if evs, err := st.ReadEvents(ctx, stream, 0, 10); err != nil || len(evs) != want {
			t.Errorf("%s: %d events (%v), want %d", stream, len(evs), err, want)
		}
	}
}
