package scheduler

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api/abi"
	"github.com/vigilhq/vigil/host/plugin"
	"github.com/vigilhq/vigil/store"
)

// killingDeliverer kills its own process the moment a message reaches it:
// a real crash between persisting an outcome and delivering it.
type killingDeliverer struct{}

func (killingDeliverer) Send(context.Context, store.Recipient, store.Message) store.Receipt {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

func (d killingDeliverer) Notify(ctx context.Context, to store.Recipient, m store.Message) store.Receipt {
	return d.Send(ctx, to, m)
}

// TestCrashChild is the process that dies; it runs only when the parent
// test starts it.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv("VIGIL_CRASH_CHILD_DIR")
	if dir == "" {
		t.Skip("runs as the child of TestKilledBetweenPersistAndDeliver")
	}
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	plugins := &fakePlugins{
		kinds:   map[string]plugin.Info{"ci": {Kind: "ci", DefaultEvery: 30 * time.Second}},
		observe: func(abi.ObserveRequest) (plugin.Observation, error) { return settled("success") },
	}
	s, err := New(Config{Store: st, Plugins: plugins, Deliver: killingDeliverer{}, Clock: &fakeClock{now: t0}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Register(context.Background(), Registration{Kind: "ci", Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: "agent-1"}}); err != nil {
		t.Fatal(err)
	}
	s.Tick(context.Background(), t0) // dies in Send
	t.Fatal("the child survived its delivery")
}

// A process killed between persisting fired and delivering leaves fired
// with receipt unknown after restart, visible in listings, and nothing is
// delivered or probed again.
func TestKilledBetweenPersistAndDeliver(t *testing.T) {
	h := newHarness(t)
	dir := h.dir
	_ = h.store.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "VIGIL_CRASH_CHILD_DIR="+dir)
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the child was not killed: %v\n%s", err, out)
	}

	h.store = nil
	h.open() // restart on what the dead process left
	if n, err := h.s.Prime(context.Background()); err != nil || n != 0 {
		t.Fatalf("prime: %d %v", n, err)
	}
	rows, _, err := h.store.List(context.Background(), store.Filter{Recipient: "agent-1"})
	if err != nil || len(rows) != 1 {
		t.Fatalf("listing: %+v %v", rows, err)
	}
	if rows[0].State != store.Fired || rows[0].Receipt != store.ReceiptUnknown || rows[0].Outcome.Result != "success" {
		t.Fatalf("row after the crash: %+v", rows[0])
	}
	h.tick(t0.Add(24 * time.Hour))
	if n := len(h.deliver.messages()); n != 0 || h.plugins.probeCount() != 0 {
		t.Fatalf("after restart: %d messages, %d probes", n, h.plugins.probeCount())
	}
}
