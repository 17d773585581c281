package store_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

// pageStore fills a store with n rows over three recipients, two kinds and
// every settled state, and one held-aside row per recipient.
func pageStore(t *rapid.T, s *store.Store, n int) {
	ctx := context.Background()
	ids := newIDs()
	for i := range n {
		w := rapidWatch(t, ids, []string{"a", "b", "c"}[rapid.IntRange(0, 2).Draw(t, "recipient")], t0.Add(time.Duration(i)*time.Millisecond))
		w.Kind = rapid.SampledFrom([]string{"timer", "ci"}).Draw(t, "kind")
		if err := s.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		if st := rapid.SampledFrom(store.States()).Draw(t, "state"); st != store.Pending {
			if _, err := s.Settle(ctx, w.ID, store.Settlement{State: st, Receipt: store.ReceiptNone, SettledAt: t0}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, r := range []string{"a", "b", "c"} {
		w := rapidWatch(t, ids, r, t0.Add(time.Duration(n)*time.Millisecond))
		err := s.KV().Update(context.Background(), store.TxOptions{Name: "test"}, func(tx store.Tx) error {
			tx.Put(store.Key{Fam: store.FamRow, ID: w.ID}, []byte(`{"v":2,"id":"`+w.ID.String()+`"}`))
			tx.Put(store.Key{Fam: store.FamState, Sub: string(store.Pending), ID: w.ID}, nil)
			tx.Put(store.Key{Fam: store.FamRecipientIndex, Name: r, ID: w.ID}, nil)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func rapidWatch(t *rapid.T, ids seqReader, recipient string, at time.Time) store.Watch {
	id, err := store.NewID(at, ids)
	if err != nil {
		t.Fatal(err)
	}
	exp := at.Add(15 * time.Minute)
	return store.Watch{
		ID: id, Kind: "timer", Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: recipient},
		State: store.Pending, Receipt: store.ReceiptNone, Every: store.Duration(time.Minute), CreatedAt: at, ExpiresAt: &exp,
	}
}

// Following Next from the start returns exactly what List returns, in the
// same order, whatever the filter, the page size and the budget; no page
// is over its limit, and the walk ends.
func TestListPageFollowsToList(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := openRapid(t)
		pageStore(t, s, rapid.IntRange(0, 40).Draw(t, "rows"))
		f := store.Filter{
			Recipient: rapid.SampledFrom([]string{"", "a", "b", "nobody"}).Draw(t, "f.recipient"),
			State:     rapid.SampledFrom(append([]store.State{""}, store.States()...)).Draw(t, "f.state"),
			Kind:      rapid.SampledFrom([]string{"", "timer", "ci", "other"}).Draw(t, "f.kind"),
		}
		limit := rapid.IntRange(1, 8).Draw(t, "limit")
		budget := rapid.IntRange(0, 12).Draw(t, "budget")
		want, wantHeld, err := s.List(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		var got []store.Watch
		held := 0
		q := store.Query{Filter: f, Limit: limit, Budget: budget}
		for pages := 0; ; pages++ {
			if pages > 200 {
				t.Fatalf("the walk does not end")
			}
			p, err := s.ListPage(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Watches) > limit {
				t.Fatalf("page of %d, limit %d", len(p.Watches), limit)
			}
			got = append(got, p.Watches...)
			held += p.HeldAside
			if p.Next == (store.ID{}) {
				break
			}
			if p.Next.String() <= q.After.String() && q.After != (store.ID{}) {
				t.Fatalf("next %s does not move past %s", p.Next, q.After)
			}
			q.After = p.Next
		}
		ids := func(ws []store.Watch) []string {
			out := make([]string, len(ws))
			for i, w := range ws {
				out[i] = w.ID.String()
			}
			return out
		}
		if !slices.Equal(ids(got), ids(want)) {
			t.Fatalf("pages %v, list %v", ids(got), ids(want))
		}
		// A state filter on a recipient's index is checked by key, so the
		// pages count only the held rows in that state.
		if (f.Recipient == "" || f.State == "") && held != wantHeld {
			t.Fatalf("held aside %d over the pages, list %d", held, wantHeld)
		}
	})
}

func openRapid(t *rapid.T) *store.Store {
	dir, err := os.MkdirTemp("", "vigil-page-")
	if err != nil {
		t.Fatal(err)
	}
	s, err := badger.OpenStore(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(); _ = os.RemoveAll(dir) })
	return s
}

// A page never examines more index entries than its budget: with a filter
// nothing matches, each page is empty and moves on by the budget.
func TestListPageBudgetBoundsAPage(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	ids := newIDs()
	for i := range 25 {
		if err := s.Create(ctx, pendingWatch(t, ids, "a", t0.Add(time.Duration(i)*time.Millisecond))); err != nil {
			t.Fatal(err)
		}
	}
	q := store.Query{Filter: store.Filter{Kind: "nothing"}, Limit: 5, Budget: 10}
	var pages int
	for {
		p, err := s.ListPage(ctx, q)
		if err != nil || len(p.Watches) != 0 {
			t.Fatalf("%+v %v", p, err)
		}
		pages++
		if p.Next == (store.ID{}) {
			break
		}
		q.After = p.Next
	}
	if pages != 3 {
		t.Fatalf("%d pages of budget 10 over 25 rows, want 3", pages)
	}
	if _, err := s.ListPage(ctx, store.Query{Limit: 0}); err == nil {
		t.Fatal("limit 0 accepted")
	}
}

func TestCountPending(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	ids := newIDs()
	for i := range 7 {
		w := createdWatch(t, s, ids, "a", t0.Add(time.Duration(i)*time.Millisecond))
		if i%3 == 0 {
			if _, err := s.Settle(ctx, w.ID, store.Settlement{State: store.Fired, Receipt: store.ReceiptNone, SettledAt: t0}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Create(ctx, pendingWatch(t, ids, "ab", t0)); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		recipient string
		upTo      int
		want      int
	}{{"a", 0, 4}, {"a", 3, 3}, {"a", 10, 4}, {"ab", 0, 1}, {"nobody", 0, 0}} {
		n, err := s.CountPending(ctx, tt.recipient, tt.upTo)
		if err != nil || n != tt.want {
			t.Errorf("%s up to %d: %d %v, want %d", tt.recipient, tt.upTo, n, err, tt.want)
		}
	}
}
