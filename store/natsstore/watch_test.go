package natsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/storetest"
)

var t0 = storetest.Epoch()

func newIDs() io.Reader { return storetest.IDs(1) }

func pendingWatch(t testing.TB, ids io.Reader, recipient string, at time.Time) store.Watch {
	t.Helper()
	return storetest.Pending(t, ids, recipient, at)
}

func createdWatch(t testing.TB, s testStore, ids io.Reader, recipient string, at time.Time) store.Watch {
	t.Helper()
	w := pendingWatch(t, ids, recipient, at)
	if err := s.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	return w
}

func fired(at time.Time) store.Settlement {
	return store.Settlement{State: store.Fired, Receipt: store.ReceiptNone, SettledAt: at,
		Outcome: &store.Outcome{Result: "fired"}, Attempts: 2}
}

func TestOpenCreatesThenVerifies(t *testing.T) {
	ctx := context.Background()
	srv := runServer(t)
	s := openStore(t, Config{}, srv)
	if s.Partitions() != DefaultPartitions || s.Replicas() != 1 {
		t.Fatalf("partitions %d replicas %d", s.Partitions(), s.Replicas())
	}
	// A second open with the same settings, or none, opens.
	openStore(t, Config{Partitions: DefaultPartitions, Replicas: 1}, srv)
	openStore(t, Config{}, srv)
	for _, tc := range []struct {
		name string
		cfg  Config
		what string
	}{
		{"partitions", Config{Partitions: 128}, "partitions"},
		{"replicas", Config{Replicas: 3}, "replicas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.URLs = []string{srv.ClientURL()}
			_, err := Open(ctx, tc.cfg)
			var me *MismatchError
			if !errors.As(err, &me) || !errors.Is(err, ErrMismatch) || me.What != tc.what {
				t.Fatalf("open with %+v: %v, want a mismatch of %s", tc.cfg, err, tc.what)
			}
		})
	}
}

func TestOpenRefusesABucketWithoutWhatItNeeds(t *testing.T) {
	ctx := context.Background()
	srv := runServer(t)
	for _, tc := range []struct {
		what   string
		change func(*jetstream.StreamConfig)
	}{
		{"allow_atomic", func(c *jetstream.StreamConfig) { c.AllowAtomicPublish = false }},
		{"allow_direct", func(c *jetstream.StreamConfig) { c.AllowDirect = true }},
		{"max_msgs_per_subject", func(c *jetstream.StreamConfig) { c.MaxMsgsPerSubject = 5 }},
	} {
		t.Run(tc.what, func(t *testing.T) {
			bucket := strings.ReplaceAll(tc.what, "_", "-")
			s := openStore(t, Config{Bucket: bucket}, srv)
			cfg := streamConfig(bucket, 1)
			tc.change(&cfg)
			if _, err := s.js.UpdateStream(ctx, cfg); err != nil {
				t.Fatalf("changing the stream: %v", err)
			}
			_, err := Open(ctx, Config{URLs: []string{srv.ClientURL()}, Bucket: bucket})
			var me *MismatchError
			if !errors.As(err, &me) || me.What != tc.what {
				t.Fatalf("open: %v, want a %s mismatch", err, tc.what)
			}
		})
	}
}

func TestACommitOfTooManyKeysIsRefused(t *testing.T) {
	s := openStore(t, Config{}, runServer(t))
	tx := s.newTxn(context.Background())
	for i := range maxBatch + 1 {
		tx.put(fmt.Sprintf("x.%d", i), nil)
	}
	if err := tx.commit("test"); err == nil || errors.Is(err, errConflict) {
		t.Fatalf("a commit of %d keys: %v", maxBatch+1, err)
	}
}

func TestOpenRefusesABucketWithRowsAndNoMetadata(t *testing.T) {
	ctx := context.Background()
	srv := runServer(t)
	s := openStore(t, Config{}, srv)
	createdWatch(t, s, newIDs(), "r1", t0)
	if err := s.update(ctx, "test", func(tx *txn) error {
		if _, err := tx.get(metaKey); err != nil {
			return err
		}
		tx.del(metaKey)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	_, err := Open(ctx, Config{URLs: []string{srv.ClientURL()}})
	var me *MismatchError
	if !errors.As(err, &me) || me.What != "metadata" {
		t.Fatalf("open: %v, want a metadata mismatch", err)
	}
}

func TestOpenRefusesANewerStore(t *testing.T) {
	ctx := context.Background()
	srv := runServer(t)
	s := openStore(t, Config{}, srv)
	if err := s.update(ctx, "test", func(tx *txn) error {
		if _, err := tx.get(metaKey); err != nil {
			return err
		}
		tx.put(metaKey, []byte(`{"v":2,"partitions":64}`))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, Config{URLs: []string{srv.ClientURL()}}); !errors.Is(err, store.ErrStoreTooNew) {
		t.Fatalf("open: %v, want ErrStoreTooNew", err)
	}
}

func TestOpenRefusesBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{URLs: []string{"nats://127.0.0.1:1"}, Partitions: -1},
		{URLs: []string{"nats://127.0.0.1:1"}, TLS: TLS{Cert: "c.pem"}},
	} {
		if _, err := Open(context.Background(), cfg); !errors.Is(err, ErrBadConfig) {
			t.Errorf("open %+v: %v, want ErrBadConfig", cfg, err)
		}
	}
}

func TestStripeIsStableAndSpread(t *testing.T) {
	// A recipient's stripe is its slot modulo n, the hash store.SlotOf
	// pins: a change would move a recipient's commits to another lock.
	if got := stripe("ticket/1", 64); got != stripe("ticket/1", 64) || got < 0 || got >= 64 {
		t.Fatalf("stripe %d", got)
	}
	if stripe("", 64) != int(store.SlotOf(""))%64 {
		t.Fatalf("the stripe is not the key's slot modulo n")
	}
	counts := make([]int, 8)
	for i := range 8000 {
		counts[stripe(store.ID{byte(i), byte(i >> 8)}.String(), 8)]++
	}
	for p, c := range counts {
		if c < 800 || c > 1200 {
			t.Fatalf("stripe %d holds %d of 8000", p, c)
		}
	}
}

func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, Config{}, runServer(t))
	ids := newIDs()
	w := createdWatch(t, s, ids, "r1", t0)
	if err := s.Create(ctx, w); !errors.Is(err, store.ErrExists) {
		t.Fatalf("second create: %v, want ErrExists", err)
	}
	got, err := s.Get(ctx, w.ID)
	if err != nil || got.State != store.Pending || got.Kind != "timer" {
		t.Fatalf("get: %+v %v", got, err)
	}
	if err := s.RecordProbe(ctx, w.ID, store.Probe{Attempts: 3, Note: "waiting", NextCheck: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Get(ctx, w.ID)
	if got.Attempts != 3 || got.LastNote != "waiting" || !got.NextCheck.Equal(t0.Add(time.Hour)) {
		t.Fatalf("after probe: %+v", got)
	}
	if err := s.SetNextCheck(ctx, w.ID, t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.CarryBaseline(ctx, w.ID, json.RawMessage(`{"n":1}`), 4, "carried"); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Get(ctx, w.ID)
	if string(got.Baseline) != `{"n":1}` || got.Attempts != 4 || !got.NextCheck.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("after carry: %+v", got)
	}
	settled, err := s.Settle(ctx, w.ID, fired(t0.Add(time.Minute)))
	if err != nil || settled.State != store.Fired || !settled.NextCheck.IsZero() {
		t.Fatalf("settle: %+v %v", settled, err)
	}
	// Every transition of a pending row is refused once it settled.
	if _, err := s.Settle(ctx, w.ID, fired(t0)); !errors.Is(err, store.ErrNotPending) {
		t.Fatalf("second settle: %v", err)
	}
	if err := s.SetNextCheck(ctx, w.ID, t0); !errors.Is(err, store.ErrNotPending) {
		t.Fatalf("next check after settle: %v", err)
	}
	if err := s.RecordProbe(ctx, w.ID, store.Probe{}); !errors.Is(err, store.ErrNotPending) {
		t.Fatalf("probe after settle: %v", err)
	}
	if err := s.CarryBaseline(ctx, w.ID, nil, 0, ""); !errors.Is(err, store.ErrNotPending) {
		t.Fatalf("carry after settle: %v", err)
	}
	got, err = s.SetReceipt(ctx, w.ID, store.ReceiptRejected)
	if err != nil || got.State != store.Undeliverable || got.Receipt != store.ReceiptRejected {
		t.Fatalf("receipt: %+v %v", got, err)
	}
	if _, err := s.Get(ctx, store.ID{1}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get absent: %v", err)
	}
	counts, err := s.CountByState(ctx)
	if err != nil || counts[store.Undeliverable] != 1 || counts[store.Pending] != 0 {
		t.Fatalf("counts %v %v", counts, err)
	}
}

func TestBadTransitionsAreRefused(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, Config{}, runServer(t))
	w := createdWatch(t, s, newIDs(), "r1", t0)
	if _, err := s.Settle(ctx, w.ID, store.Settlement{State: store.Pending, Receipt: store.ReceiptNone}); err == nil {
		t.Fatal("settle to pending taken")
	}
	if _, err := s.SetReceipt(ctx, w.ID, store.ReceiptDelivered); err == nil {
		t.Fatal("a receipt for a pending row taken")
	}
	bad := w
	bad.State = "sleeping"
	if err := s.Create(ctx, bad); err == nil {
		t.Fatal("an unknown state created")
	}
}

func TestListsIndexesAndPendingSchedule(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, Config{}, runServer(t))
	ids := newIDs()
	var all []store.Watch
	for i := range 6 {
		rid := "r1"
		if i%2 == 1 {
			rid = "r2"
		}
		w := pendingWatch(t, ids, rid, t0.Add(time.Duration(i)*time.Second))
		if i == 4 {
			w.Kind = "fetch"
			w.Subject = "work/x"
		}
		if i == 5 {
			w.Subject = "work/x"
		}
		if err := s.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		all = append(all, w)
	}
	if _, err := s.Settle(ctx, all[0].ID, fired(t0.Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Settle(ctx, all[5].ID, fired(t0.Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	ids4 := func(ws []store.Watch) []store.ID {
		var out []store.ID
		for _, w := range ws {
			out = append(out, w.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		f    store.Filter
		want []int
	}{
		{"all", store.Filter{}, []int{0, 1, 2, 3, 4, 5}},
		{"recipient", store.Filter{Recipient: "r1"}, []int{0, 2, 4}},
		{"state", store.Filter{State: store.Pending}, []int{1, 2, 3, 4}},
		{"recipient pending", store.Filter{Recipient: "r2", State: store.Pending}, []int{1, 3}},
		{"recipient fired", store.Filter{Recipient: "r2", State: store.Fired}, []int{5}},
		{"kind", store.Filter{Kind: "fetch"}, []int{4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, held, err := s.List(ctx, tc.f)
			if err != nil || held != 0 {
				t.Fatalf("list: %v held %d", err, held)
			}
			var want []store.ID
			for _, i := range tc.want {
				want = append(want, all[i].ID)
			}
			if !slices.Equal(ids4(got), want) {
				t.Fatalf("got %v, want %v", ids4(got), want)
			}
		})
	}
	var scheds []store.ID
	if _, err := s.ForEachPending(ctx, func(sc store.Schedule) error {
		if sc.Every != time.Minute || sc.Expires.IsZero() {
			t.Errorf("schedule %+v", sc)
		}
		scheds = append(scheds, sc.ID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := ids4(all[1:5]); !slices.Equal(scheds, want) {
		t.Fatalf("pending schedules %v, want %v", scheds, want)
	}
	// The subject index keeps the pending watches only.
	subj, err := s.PendingBySubject(ctx, "work/x")
	if err != nil || !slices.Equal(subj, []store.ID{all[4].ID}) {
		t.Fatalf("by subject %v %v", subj, err)
	}
	for _, tc := range []struct {
		rid  string
		upTo int
		want int
	}{{"r1", 0, 2}, {"r2", 0, 2}, {"r2", 1, 1}, {"nobody", 0, 0}} {
		if n, err := s.CountPending(ctx, tc.rid, tc.upTo); err != nil || n != tc.want {
			t.Errorf("count pending %s up to %d: %d %v, want %d", tc.rid, tc.upTo, n, err, tc.want)
		}
	}
}

func TestListPageFollowsToList(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, Config{}, runServer(t))
	ids := newIDs()
	var want []store.ID
	for i := range 7 {
		w := createdWatch(t, s, ids, "r1", t0.Add(time.Duration(i)*time.Second))
		want = append(want, w.ID)
	}
	for _, limit := range []int{1, 2, 3, 7, 10} {
		var got []store.ID
		var after store.ID
		for range 20 {
			p, err := s.ListPage(ctx, store.Query{Filter: store.Filter{Recipient: "r1"}, After: after, Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range p.Watches {
				got = append(got, w.ID)
			}
			if p.Next == (store.ID{}) {
				break
			}
			after = p.Next
		}
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d: pages %v, want %v", limit, got, want)
		}
	}
	// A budget smaller than the page ends it early, with a cursor.
	p, err := s.ListPage(ctx, store.Query{Filter: store.Filter{Kind: "none"}, Limit: 5, Budget: 3})
	if err != nil || len(p.Watches) != 0 || p.Next != want[2] {
		t.Fatalf("budget page %+v %v", p, err)
	}
	if _, err := s.ListPage(ctx, store.Query{Limit: 0}); err == nil {
		t.Fatal("a page of 0 taken")
	}
}

func TestHeldAsideRowsAreSkipped(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, Config{}, runServer(t))
	ids := newIDs()
	w := createdWatch(t, s, ids, "r1", t0)
	other := createdWatch(t, s, ids, "r1", t0.Add(time.Second))
	// A newer build's row: a field this build does not know.
	if err := s.Update(ctx, store.TxOptions{Name: "test"}, func(tx store.Tx) error {
		k := store.Key{Fam: store.FamRow, ID: w.ID}
		if _, _, err := tx.Get(k); err != nil {
			return err
		}
		tx.Put(k, []byte(`{"v":2,"id":"`+w.ID.String()+`","state":"pending","receipt":"none","novel":1}`))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, w.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get held aside: %v", err)
	}
	got, held, err := s.List(ctx, store.Filter{Recipient: "r1"})
	if err != nil || held != 1 || len(got) != 1 || got[0].ID != other.ID {
		t.Fatalf("list: %v held %d err %v", got, held, err)
	}
	if _, err := s.Settle(ctx, w.ID, fired(t0)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("settle held aside: %v", err)
	}
	p, err := s.ListPage(ctx, store.Query{Limit: 10})
	if err != nil || p.HeldAside != 1 || len(p.Watches) != 1 {
		t.Fatalf("page %+v %v", p, err)
	}
}
