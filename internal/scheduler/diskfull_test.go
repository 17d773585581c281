package scheduler

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/hosttest"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/syncbuf"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// While the store refuses the scheduler's writes for a full disk, every
// watch whose outcome waits to be persisted is tried again each second;
// the log says so once, not once per watch per attempt (the store has
// already said how much space is missing, and where), and once more
// when a settlement is taken again. Any other failure is still said per
// watch.
func TestAFullDiskIsLoggedOnceByTheScheduler(t *testing.T) {
	h := newHarnessUnopened(t)
	logs := &syncbuf.Buffer{}
	h.logger = slog.New(slog.NewTextHandler(logs, nil))
	h.open()
	h.plugins.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) { return hosttest.Settled("done") })
	h.deliver.mu.Lock()
	h.deliver.full = true
	h.deliver.mu.Unlock()
	var ids []store.ID
	for range 5 {
		ids = append(ids, h.register("ci").ID)
	}
	at := t0
	for range 10 {
		h.tick(at)
		at = at.Add(time.Second)
	}
	full := strings.Count(logs.String(), "disk is full")
	if full != 1 || strings.Contains(logs.String(), `msg="persisting an outcome"`) {
		t.Fatalf("five watches' settlements refused ten times over: %d lines saying the disk is full, want 1, and none per attempt:\n%s", full, logs)
	}
	h.deliver.mu.Lock()
	h.deliver.full = false
	h.deliver.mu.Unlock()
	h.tick(at)
	for _, id := range ids {
		if w, err := h.store.Get(t.Context(), id); err != nil || w.State != store.Fired {
			t.Fatalf("watch %s once space is back: %s %v, want fired", id, w.State, err)
		}
	}
	if n := strings.Count(logs.String(), "takes the scheduler's writes again"); n != 1 {
		t.Fatalf("%d lines saying the scheduler writes again, want 1:\n%s", n, logs)
	}
	// Another failure is still one line per watch.
	h.deliver.mu.Lock()
	h.deliver.failSettles = 2
	h.deliver.mu.Unlock()
	h.register("ci")
	h.register("ci")
	h.tick(at)
	if n := strings.Count(logs.String(), `msg="persisting an outcome"`); n != 2 {
		t.Fatalf("two settlements the store did not answer: %d lines, want 2:\n%s", n, logs)
	}
}
