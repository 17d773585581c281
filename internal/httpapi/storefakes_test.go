package httpapi

import (
	"context"
	"slices"
	"testing"

	"github.com/vigilhq/vigil/internal/core"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/hosttest"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

// faultKV is an adapter that is badger underneath, with a test's faults
// in front of it, by transition (store.TxOptions.Name): before may
// refuse a transition (nothing written), after may replace the outcome
// of one that ran, view may refuse every read. For tests only.
type faultKV struct {
	store.KV
	before func(o store.TxOptions) error
	after  func(o store.TxOptions, err error) error
	view   func() error
}

func (f *faultKV) Update(ctx context.Context, o store.TxOptions, fn func(store.Tx) error) error {
	if f.before != nil {
		if err := f.before(o); err != nil {
			return err
		}
	}
	err := f.KV.Update(ctx, o, fn)
	if f.after != nil {
		err = f.after(o, err)
	}
	return err
}

func (f *faultKV) View(ctx context.Context, fn func(store.Tx) error) error {
	if f.view != nil {
		if err := f.view(); err != nil {
			return err
		}
	}
	return f.KV.View(ctx, fn)
}

// The transitions of the writing routes the fault tests reach: a
// registration, a cancel, a recipient's write.
var faultedWrites = []string{"create-if-running", "settle", "put-recipient"}

func faulted(o store.TxOptions) bool { return slices.Contains(faultedWrites, o.Name) }

// faultCore is the core over a faultKV f, seeded with seed, its Config
// changed by with.
func faultCore(t *testing.T, f *faultKV, seed byte, with ...func(*core.Config)) *core.Core {
	t.Helper()
	cfg := core.Config{
		OpenStore: func(ctx context.Context) (*store.Store, error) {
			kv, err := badger.Open(t.TempDir(), badger.Options{})
			if err != nil {
				return nil, err
			}
			f.KV = kv
			return store.New(ctx, f)
		},
		Kinds: fakePlugins(), Clock: fakeclock.At(t0), IDs: hosttest.IDs(seed),
	}
	for _, w := range with {
		w(&cfg)
	}
	c, err := core.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
