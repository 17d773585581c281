package storetest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
	"github.com/vigilhq/vigil/store/storetest"
)

// Backends broken on purpose, each in one rule, from outside badger: the
// suite must fail each of them, in the subtest that names the rule.

// brokenSettlesTwice answers a second settlement of a row as if it won.
type brokenSettlesTwice struct{ storetest.Backend }

func (b brokenSettlesTwice) Settle(ctx context.Context, id store.ID, s store.Settlement) (store.Watch, error) {
	w, err := b.Backend.Settle(ctx, id, s)
	if errors.Is(err, store.ErrNotPending) {
		return b.Backend.Get(ctx, id)
	}
	return w, err
}

// brokenCreatesForAnyone writes a row whatever its recipient's status.
type brokenCreatesForAnyone struct{ storetest.Backend }

func (b brokenCreatesForAnyone) CreateIfRunning(ctx context.Context, w store.Watch, _ int) error {
	return b.Backend.Create(ctx, w)
}

// brokenMailboxCursor reads a mailbox from its start, whatever the cursor.
type brokenMailboxCursor struct{ storetest.Backend }

func (b brokenMailboxCursor) ReadMailbox(ctx context.Context, rid string, _ uint64, limit int) ([]store.Message, error) {
	return b.Backend.ReadMailbox(ctx, rid, 0, limit)
}

// brokenForgetsNextCheck acknowledges a next check it never writes.
type brokenForgetsNextCheck struct{ storetest.Backend }

func (brokenForgetsNextCheck) SetNextCheck(context.Context, store.ID, time.Time) error { return nil }

var broken = map[string]struct {
	wrap func(storetest.Backend) storetest.Backend
	// subtest is the suite's subtest that must fail.
	subtest string
}{
	"settles twice":      {func(b storetest.Backend) storetest.Backend { return brokenSettlesTwice{b} }, "Rows/CreateGetSettleOnce"},
	"creates for anyone": {func(b storetest.Backend) storetest.Backend { return brokenCreatesForAnyone{b} }, "Rows/CreateIfRunning"},
	"ignores the cursor": {func(b storetest.Backend) storetest.Backend { return brokenMailboxCursor{b} }, "Mail/AppendIfRunningAndSequence"},
	"forgets next check": {func(b storetest.Backend) storetest.Backend { return brokenForgetsNextCheck{b} }, "Rows/NextCheckAndProbeOnlyWhilePending"},
}

const brokenEnv = "VIGIL_STORETEST_BROKEN"

func openBadger(t *testing.T) storetest.Backend {
	t.Helper()
	s, err := badger.OpenStore(t.TempDir(), badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// The suite bites: run against each broken backend (in a child process,
// since a failing subtest would fail this test too), it fails, in the
// subtest of the rule that backend breaks. Unbroken, the same badger
// passes the whole suite (store/badger's TestStoreConformance), so each failure
// is its breakage's.
func TestSuiteFailsBrokenBackends(t *testing.T) {
	if name := os.Getenv(brokenEnv); name != "" {
		c, ok := broken[name]
		if !ok {
			t.Fatalf("no broken backend %q", name)
		}
		storetest.RunBackend(t, func(t *testing.T) storetest.Backend { return c.wrap(openBadger(t)) }, storetest.Options{})
		return
	}
	for name, c := range broken {
		t.Run(name, func(t *testing.T) {
			group, sub, _ := strings.Cut(c.subtest, "/")
			cmd := exec.Command(os.Args[0], "-test.run=^TestSuiteFailsBrokenBackends$/^"+group+"$/^"+sub+"$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), brokenEnv+"="+name)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("the suite passed a backend that %s (%v):\n%s", name, err, out)
			}
			if want := "--- FAIL: TestSuiteFailsBrokenBackends/" + c.subtest; !strings.Contains(string(out), want) {
				t.Fatalf("no %q in:\n%s", want, out)
			}
		})
	}
}
