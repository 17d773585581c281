package scheduler

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/hosttest"
	"github.com/vigilhq/vigil/internal/kind"

	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

// killingDeliverer kills its own process the moment a settlement reaches
// it, before its transaction: a real crash while an outcome is being
// settled and mailed.
type killingDeliverer struct{}

func (killingDeliverer) Settle(context.Context, store.ID, store.Settlement, store.Message) (store.Watch, error) {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

func (killingDeliverer) Carry(context.Context, store.ID, json.RawMessage, int, string, *store.Message) (bool, error) {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// TestCrashChild is the process that dies; it runs only when the parent
// test starts it.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv("VIGIL_CRASH_CHILD_DIR")
	if dir == "" {
		t.Skip("runs as the child of TestKilledBetweenPersistAndDeliver")
	}
	st, err := badger.OpenStore(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	plugins := hosttest.NewFakeKinds(kind.Info{Kind: "ci", DefaultEvery: 30 * time.Second}).
		OnObserve(func(abi.ObserveRequest) (kind.Observation, error) { return hosttest.Settled("success") })
	s, err := New(Config{Store: st, Plugins: plugins, Deliver: killingDeliverer{}, Clock: fakeclock.At(t0)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Register(context.Background(), Registration{Kind: "ci", Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: "agent-1"}}); err != nil {
		t.Fatal(err)
	}
	s.Tick(context.Background(), t0) // dies in Settle
	t.Fatal("the child survived its delivery")
}

// Settling and mailing are one transaction, so a process killed before it
// commits leaves the watch pending: after restart it is probed again and
// its outcome is settled and mailed once. There is no state in which the
// outcome is persisted and its mail is not.
func TestKilledBeforeTheSettleCommits(t *testing.T) {
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
	if n, err := h.s.Prime(context.Background()); err != nil || n != 1 {
		t.Fatalf("prime: %d %v", n, err)
	}
	h.plugins.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) { return hosttest.Settled("success") })
	h.tick(t0.Add(time.Minute)) // within its interval and before its deadline
	rows, _, err := h.store.List(context.Background(), store.Filter{Recipient: "agent-1"})
	if err != nil || len(rows) != 1 {
		t.Fatalf("listing: %+v %v", rows, err)
	}
	if rows[0].State != store.Fired || rows[0].Receipt != store.ReceiptDelivered || rows[0].Outcome.Result != "success" {
		t.Fatalf("row after the restart: %+v", rows[0])
	}
	h.tick(t0.Add(2 * time.Minute))
	if n := len(h.deliver.messages()); n != 1 {
		t.Fatalf("after restart: %d messages", n)
	}
}
