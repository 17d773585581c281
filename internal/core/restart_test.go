package core

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/hosttest"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

// rowSpy is badger, counting the rows a transaction reads: a Get of a
// row's key, and the rows a scan of the rows gives.
type rowSpy struct {
	store.KV
	rows int
}

func (s *rowSpy) View(ctx context.Context, fn func(store.Tx) error) error {
	return s.KV.View(ctx, func(tx store.Tx) error { return fn(rowSpyTx{tx, s}) })
}

func (s *rowSpy) Update(ctx context.Context, o store.TxOptions, fn func(store.Tx) error) error {
	return s.KV.Update(ctx, o, func(tx store.Tx) error { return fn(rowSpyTx{tx, s}) })
}

type rowSpyTx struct {
	store.Tx
	s *rowSpy
}

func (t rowSpyTx) Get(k store.Key) ([]byte, bool, error) {
	if k.Fam == store.FamRow {
		t.s.rows++
	}
	return t.Tx.Get(k)
}

func (t rowSpyTx) Scan(r store.Range, fn func(store.Key, []byte) (bool, error)) error {
	return t.Tx.Scan(r, func(k store.Key, v []byte) (bool, error) {
		if k.Fam == store.FamRow {
			t.s.rows++
		}
		return fn(k, v)
	})
}

// A restart reads what is due, nothing else: Prime (the scheduler's
// first window, the recipients' reconciliation, the retention's
// backstop, run once already) reads no pending row, holds the overdue
// and what the window holds, not the watches due hours on.
func TestARestartReadsWhatIsDue(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clk := fakeclock.At(t0)
	kinds := hosttest.NewFakeKinds(kind.Info{Kind: "ci", DefaultEvery: 30 * time.Second}, kind.Info{Kind: "timer", DefaultEvery: time.Minute})
	kinds.OnAdmit(func(name string, _ kind.AdmitRequest) (kind.Admission, error) {
		if name == "timer" {
			return kind.Admission{NextCheck: t0.Add(3 * time.Hour), Deadline: t0.Add(3*time.Hour + time.Minute)}, nil
		}
		return kind.Admission{}, nil
	})
	spy := &rowSpy{}
	open := func() *Core {
		t.Helper()
		c, err := New(ctx, Config{Kinds: kinds, Clock: clk, OpenStore: func(ctx context.Context) (*store.Store, error) {
			kv, err := badger.Open(dir, badger.Options{})
			if err != nil {
				return nil, err
			}
			spy.KV = kv
			return store.New(ctx, spy)
		}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := open()
	if _, err := c.Prime(ctx); err != nil {
		t.Fatal(err)
	}
	const near, far = 20, 200
	for i := range near + far {
		k := "ci"
		if i >= near {
			k = "timer"
		}
		if _, err := c.Scheduler.Register(ctx, scheduler.Registration{Kind: k, Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: "agent-1"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	clk.Set(t0.Add(time.Minute))
	c = open()
	defer c.Close()
	spy.rows = 0
	if _, err := c.Prime(ctx); err != nil {
		t.Fatal(err)
	}
	if spy.rows != 0 {
		t.Fatalf("a restart read %d rows", spy.rows)
	}
	if n := c.Scheduler.Pending(); n != near {
		t.Fatalf("a restart holds %d watches, want the %d overdue, not the %d due in three hours", n, near, far)
	}
}
