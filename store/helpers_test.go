package store_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

// The domain's own tests run on the badger adapter; store/storetest holds
// every adapter to the rules they share.

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

type seqReader struct{ r *rand.ChaCha8 }

func (s seqReader) Read(p []byte) (int, error) { return s.r.Read(p) }

func newIDs() seqReader { return seqReader{rand.NewChaCha8([32]byte{1})} }

// failingKV is an adapter that calls its failpoint with a transition's
// name after the transition's writes, before its commit; an error from it
// refuses the commit. For tests only.
type failingKV struct {
	store.KV
	fail atomic.Pointer[func(name string) error]
}

func (f *failingKV) Update(ctx context.Context, o store.TxOptions, fn func(store.Tx) error) error {
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

func (f *failingKV) failpoint(fn func(name string) error) {
	if fn == nil {
		f.fail.Store(nil)
		return
	}
	f.fail.Store(&fn)
}

// openTest is the store on badger in dir, closed when the test ends.
func openTest(t testing.TB, dir string) *store.Store {
	t.Helper()
	s, _ := openFailing(t, dir)
	return s
}

// openFailing is openTest with the adapter's failpoint.
func openFailing(t testing.TB, dir string) (*store.Store, *failingKV) {
	t.Helper()
	kv, err := badger.Open(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := &failingKV{KV: kv}
	s, err := store.New(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, f
}

// raw writes through s's adapter, keys as the domain names them.
func raw(t testing.TB, s *store.Store, fn func(tx store.Tx)) {
	t.Helper()
	if err := s.KV().Update(context.Background(), store.TxOptions{Name: "test"}, func(tx store.Tx) error {
		fn(tx)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// holdAside writes, under w's id, the row a newer release would have
// written, indexed under w's recipient and state, and returns its bytes.
func holdAside(t testing.TB, s *store.Store, w store.Watch) []byte {
	t.Helper()
	row := []byte(`{"v":2,"id":"` + w.ID.String() + `","kind":"phase_nudge","state":"snoozed","recipient":{"id":"` +
		w.Recipient.ID + `"},"nudged_at":"2026-11-30T12:00:00Z"}`)
	raw(t, s, func(tx store.Tx) {
		tx.Put(store.Key{Fam: store.FamRow, ID: w.ID}, row)
		tx.Put(store.Key{Fam: store.FamState, Sub: string(w.State), ID: w.ID}, nil)
		tx.Put(store.Key{Fam: store.FamRecipientIndex, Name: w.Recipient.ID, ID: w.ID}, nil)
	})
	return row
}

func pendingWatch(t testing.TB, ids seqReader, recipient string, at time.Time) store.Watch {
	t.Helper()
	id, err := store.NewID(at, ids)
	if err != nil {
		t.Fatal(err)
	}
	exp := at.Add(15 * time.Minute)
	return store.Watch{
		ID: id, Kind: "timer", Params: json.RawMessage(`{"at":"2026-11-30T13:00:00Z"}`),
		Recipient: store.Recipient{ID: recipient}, State: store.Pending, Receipt: store.ReceiptNone,
		Every: store.Duration(time.Minute), CreatedAt: at, ExpiresAt: &exp,
	}
}

// createdWatch creates a pending row for recipient at at and returns it.
func createdWatch(t testing.TB, s *store.Store, ids seqReader, recipient string, at time.Time) store.Watch {
	t.Helper()
	w := pendingWatch(t, ids, recipient, at)
	if err := s.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	return w
}

func runningRecipientFor(t testing.TB, s *store.Store, id, hook string) {
	t.Helper()
	r := store.RecipientRecord{ID: id, Status: store.StatusRunning, CreatedAt: t0, UpdatedAt: t0}
	if hook != "" {
		r.Webhook = &store.Webhook{URL: hook, Secret: "whsec_x"}
	}
	if _, _, err := s.PutRecipient(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

func firedMessage(t testing.TB, ids seqReader) store.Message {
	t.Helper()
	id, err := store.NewID(t0, ids)
	if err != nil {
		t.Fatal(err)
	}
	return store.Message{ID: id, Kind: "timer", Type: store.MessageFired, Outcome: store.Outcome{Result: "fired"}, At: t0}
}
