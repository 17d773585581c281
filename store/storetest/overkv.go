package storetest

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"

	"github.com/vigilhq/vigil/store"
)

// Run runs the suite over the store on each adapter open gives
// (store.New over it), its hooks written through the adapter: a row
// held aside is written raw, as a newer release would have; a failpoint
// refuses the named transition after its writes, before its commit;
// reopen (nil: skipped) reopens the same data. An adapter's tests run it
// as store/badger's and store/natsstore's do.
func Run(t *testing.T, open func(t *testing.T) store.KV, reopen func(t *testing.T, kv store.KV) store.KV) {
	t.Helper()
	build := func(t *testing.T, kv store.KV) Backend {
		t.Helper()
		st, err := store.New(context.Background(), &failKV{KV: kv})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	adapter := func(b Backend) *failKV { return b.(*store.Store).KV().(*failKV) }
	o := Options{
		HoldAside: func(t *testing.T, b Backend, w store.Watch) {
			if err := adapter(b).KV.Update(context.Background(), store.TxOptions{Name: "hold-aside"}, func(tx store.Tx) error {
				tx.Put(store.Key{Fam: store.FamRow, ID: w.ID}, newerRow(w))
				tx.Put(store.Key{Fam: store.FamState, Sub: string(w.State), ID: w.ID}, nil)
				tx.Put(store.Key{Fam: store.FamRecipientIndex, Name: w.Recipient.ID, ID: w.ID}, nil)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		},
		StillHeld: func(t *testing.T, b Backend, id store.ID) bool {
			var got []byte
			if err := adapter(b).KV.View(context.Background(), func(tx store.Tx) error {
				var err error
				got, _, err = tx.Get(store.Key{Fam: store.FamRow, ID: id})
				return err
			}); err != nil {
				t.Fatal(err)
			}
			return bytes.HasPrefix(got, []byte(`{"v":2,"id":"`+id.String()+`"`))
		},
		Failpoint: func(b Backend, fn func(at string) error) {
			if fn == nil {
				adapter(b).fail.Store(nil)
				return
			}
			adapter(b).fail.Store(&fn)
		},
	}
	if reopen != nil {
		o.Reopen = func(t *testing.T, b Backend) Backend {
			return build(t, reopen(t, adapter(b).KV))
		}
	}
	RunBackend(t, func(t *testing.T) Backend { return build(t, open(t)) }, o)
}

// newerRow is the row a newer release would have written under w's id:
// a state and a field this build does not know.
func newerRow(w store.Watch) []byte {
	return []byte(`{"v":2,"id":"` + w.ID.String() + `","kind":"phase_nudge","state":"snoozed","recipient":{"id":"` +
		w.Recipient.ID + `"},"nudged_at":"2026-11-30T12:00:00Z"}`)
}

// failKV is an adapter that refuses a transition, by name, after its
// writes and before its commit, when its failpoint says so.
type failKV struct {
	store.KV
	fail atomic.Pointer[func(at string) error]
}

func (f *failKV) Update(ctx context.Context, o store.TxOptions, fn func(store.Tx) error) error {
	return f.KV.Update(ctx, o, func(tx store.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		if p := f.fail.Load(); p != nil {
			return (*p)(o.Name)
		}
		return nil
	})
}
