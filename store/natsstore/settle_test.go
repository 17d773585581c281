package natsstore

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/vigilhq/vigil/internal/natstest"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/storetest"
)

func runningFor(t testing.TB, s testStore, id, hook string) {
	t.Helper()
	storetest.Running(t, s, id, hook)
}

func firedMessage(t testing.TB, ids io.Reader) store.Message {
	t.Helper()
	id, err := store.NewID(t0, ids)
	if err != nil {
		t.Fatal(err)
	}
	return store.Message{ID: id, Kind: "timer", Type: store.MessageFired, Outcome: store.Outcome{Result: "fired"}, At: t0.Add(time.Minute)}
}

func pause(t testing.TB, s testStore, id string) {
	t.Helper()
	r, err := s.GetRecipient(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	r.Status = store.StatusPaused
	if _, _, err := s.PutRecipient(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

func TestRecipients(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, Config{}, runServer(t))
	if _, err := s.GetRecipient(ctx, "a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("absent: %v", err)
	}
	r, err := s.EnsureRecipient(ctx, "a", t0)
	if err != nil || r.Status != store.StatusRunning || !r.CreatedAt.Equal(t0) {
		t.Fatalf("ensure: %+v %v", r, err)
	}
	if r, err = s.EnsureRecipient(ctx, "a", t0.Add(time.Hour)); err != nil || !r.CreatedAt.Equal(t0) {
		t.Fatalf("ensure again: %+v %v", r, err)
	}
	if _, err := s.ReportPhase(ctx, "a", store.Phase{Name: "build", ReportedBy: "a", ReportedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReportActivity(ctx, "a", ^uint64(0), 2, t0); err != nil {
		t.Fatal(err)
	}
	if r, err = s.ReportActivity(ctx, "a", 5, 1, t0); err != nil || r.Activity.Replies != ^uint64(0) || r.Activity.ToolCalls != 3 {
		t.Fatalf("activity: %+v %v", r.Activity, err)
	}
	if _, err := s.SetReminder(ctx, "a", time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetReminder(ctx, "a", -time.Second); err == nil {
		t.Fatal("a negative reminder taken")
	}
	// A client's replacement keeps what only the reports write.
	prev, existed, err := s.PutRecipient(ctx, store.RecipientRecord{ID: "a", Status: store.StatusPaused, CreatedAt: t0.Add(time.Hour)})
	if err != nil || !existed || prev.Status != store.StatusRunning {
		t.Fatalf("put: %+v %v %v", prev, existed, err)
	}
	r, _ = s.GetRecipient(ctx, "a")
	if r.Phase == nil || r.Phase.Name != "build" || r.ReminderEvery != store.Duration(time.Hour) || !r.CreatedAt.Equal(t0) || r.Status != store.StatusPaused {
		t.Fatalf("after put: %+v", r)
	}
	if _, err := s.ReportPhase(ctx, "nobody", store.Phase{Name: "x"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("report for nobody: %v", err)
	}
	if _, _, err := s.PutRecipient(ctx, store.RecipientRecord{ID: "b", Status: "asleep"}); err == nil {
		t.Fatal("an unknown status taken")
	}
	runningFor(t, s, "b", "https://example.test/hook")
	list, err := s.ListRecipients(ctx)
	if err != nil || len(list) != 2 || list[0].ID != "a" || list[1].ID != "b" {
		t.Fatalf("list: %+v %v", list, err)
	}
	if done, err := s.DisableWebhook(ctx, "b", "https://other.test", "gone", t0); err != nil || done {
		t.Fatalf("disable another URL: %v %v", done, err)
	}
	if done, err := s.DisableWebhook(ctx, "b", "https://example.test/hook", "gone", t0); err != nil || !done {
		t.Fatalf("disable: %v %v", done, err)
	}
	if r, _ := s.GetRecipient(ctx, "b"); r.Webhook.Active() || r.Webhook.DisabledReason != "gone" {
		t.Fatalf("webhook %+v", r.Webhook)
	}
	if err := s.DeleteRecipient(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRecipient(ctx, "b"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	// A recipient deleted can be created again.
	if r, err := s.EnsureRecipient(ctx, "b", t0); err != nil || r.Status != store.StatusRunning {
		t.Fatalf("ensure after delete: %+v %v", r, err)
	}
}

func TestCreateIfRunning(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, Config{}, runServer(t))
	ids := newIDs()
	w := pendingWatch(t, ids, "a", t0)
	var nr *store.NotRunningError
	if err := s.CreateIfRunning(ctx, w, 0); !errors.As(err, &nr) || !errors.Is(err, store.ErrNotRunning) || nr.Status != "" {
		t.Fatalf("for nobody: %v", err)
	}
	runningFor(t, s, "a", "")
	if err := s.CreateIfRunning(ctx, w, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateIfRunning(ctx, w, 0); !errors.Is(err, store.ErrExists) {
		t.Fatalf("again: %v", err)
	}
	pause(t, s, "a")
	w2 := pendingWatch(t, ids, "a", t0)
	if err := s.CreateIfRunning(ctx, w2, 0); !errors.As(err, &nr) || nr.Status != store.StatusPaused {
		t.Fatalf("paused: %v", err)
	}
	if _, err := s.Get(ctx, w2.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a row for a paused recipient: %v", err)
	}
}

// TestAPauseBetweenReadAndCommitRefusesTheRegistration is the fence on
// the recipient: another process pauses it after this one read it
// running and before this one commits; the registration must not land.
func TestAPauseBetweenReadAndCommitRefusesTheRegistration(t *testing.T) {
	ctx := context.Background()
	srv := runServer(t)
	a, b := openStore(t, Config{}, srv), openStore(t, Config{}, srv)
	runningFor(t, a, "r", "")
	once := sync.Once{}
	a.failpoint = func(kind string) error {
		if kind == "create-if-running" {
			once.Do(func() { pause(t, b, "r") })
		}
		return nil
	}
	w := pendingWatch(t, newIDs(), "r", t0)
	var nr *store.NotRunningError
	if err := a.CreateIfRunning(ctx, w, 0); !errors.As(err, &nr) || nr.Status != store.StatusPaused {
		t.Fatalf("create across a pause: %v, want not running (paused)", err)
	}
	if _, err := b.Get(ctx, w.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the row landed for a paused recipient: %v", err)
	}
}

// TestAStaleWriteIsRefused: two Stores on one server; one reads a row,
// the other settles it, and the first's write on what it read is refused
// (and, as a transition, runs again and finds the row settled).
func TestAStaleWriteIsRefused(t *testing.T) {
	ctx := context.Background()
	srv := runServer(t)
	a, b := openStore(t, Config{}, srv), openStore(t, Config{}, srv)
	w := createdWatch(t, a, newIDs(), "r", t0)

	// The commit alone: a's read is stale once b has settled.
	tx := a.newTxn(ctx)
	rowKey := store.Key{Fam: store.FamRow, ID: w.ID}
	v, ok, err := tx.Get(rowKey)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	row, err := store.DecodeRow(w.ID[:], v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Settle(ctx, w.ID, fired(t0.Add(time.Minute))); err != nil {
		t.Fatal(err)
	}
	row.LastNote = "stale"
	b2, err := store.EncodeRow(row)
	if err != nil {
		t.Fatal(err)
	}
	tx.Put(rowKey, b2)
	if err := tx.commit("test"); !errors.Is(err, errConflict) {
		t.Fatalf("stale commit: %v, want a conflict", err)
	}
	got, err := b.Get(ctx, w.ID)
	if err != nil || got.State != store.Fired || got.LastNote == "stale" {
		t.Fatalf("after the stale commit: %+v %v", got, err)
	}

	// The transition: a settlement racing another settles once.
	w2 := createdWatch(t, a, newIDs(), "r", t0.Add(time.Second))
	once := sync.Once{}
	a.failpoint = func(kind string) error {
		if kind == "settle" {
			once.Do(func() {
				st := fired(t0.Add(2 * time.Minute))
				st.LastNote = "b won"
				if _, err := b.Settle(ctx, w2.ID, st); err != nil {
					t.Error(err)
				}
			})
		}
		return nil
	}
	if _, err := a.Settle(ctx, w2.ID, fired(t0.Add(3*time.Minute))); !errors.Is(err, store.ErrNotPending) {
		t.Fatalf("a's settle after b's: %v, want ErrNotPending", err)
	}
	if got, _ := a.Get(ctx, w2.ID); got.LastNote != "b won" {
		t.Fatalf("the row carries %+v, want b's settlement", got)
	}
	a.failpoint = nil
	// A next check after a settlement elsewhere is refused too.
	w3 := createdWatch(t, a, newIDs(), "r", t0.Add(2*time.Second))
	a.failpoint = func(kind string) error {
		if kind == "next-check" {
			a.failpoint = nil
			if _, err := b.Settle(ctx, w3.ID, fired(t0)); err != nil {
				t.Error(err)
			}
		}
		return nil
	}
	if err := a.SetNextCheck(ctx, w3.ID, t0.Add(time.Hour)); !errors.Is(err, store.ErrNotPending) {
		t.Fatalf("next check after b's settle: %v, want ErrNotPending", err)
	}
	if _, err := b.ListPage(ctx, store.Query{Filter: store.Filter{State: store.Pending}, Limit: 10}); err != nil {
		t.Fatal(err)
	}
	if n, err := b.CountKeysForTest(ctx, "s.pending.>"); err != nil || n != 0 {
		t.Fatalf("%d pending index entries after every row settled: %v", n, err)
	}
}

func (s testStore) CountKeysForTest(ctx context.Context, pattern string) (int, error) {
	return s.countKeys(ctx, pattern)
}

func TestSettleAndMail(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, Config{}, runServer(t))
	ids := newIDs()
	runningFor(t, s, "a", "https://example.test/hook")
	w := createdWatch(t, s, ids, "a", t0)
	var told []store.Mailed
	got, mailed, err := s.SettleAndMailThen(ctx, w.ID, fired(t0.Add(time.Minute)), firedMessage(t, ids), func(m store.Mailed) { told = append(told, m) })
	if err != nil || got.State != store.Fired || got.Receipt != store.ReceiptDelivered {
		t.Fatalf("settle and mail: %+v %v", got, err)
	}
	if mailed.Message == nil || mailed.Message.Seq != 1 || mailed.Message.WatchID != w.ID || mailed.Push == nil || mailed.Push.State != store.PushPending {
		t.Fatalf("mailed %+v", mailed)
	}
	if len(told) != 1 || told[0].Message.Seq != 1 {
		t.Fatalf("then told %+v", told)
	}
	if _, _, err := s.SettleAndMail(ctx, w.ID, fired(t0), firedMessage(t, ids)); !errors.Is(err, store.ErrNotPending) {
		t.Fatalf("again: %v", err)
	}
	msgs, err := s.ReadMailbox(ctx, "a", 0, 10)
	if err != nil || len(msgs) != 1 || msgs[0].Push == nil || msgs[0].Push.State != store.PushPending {
		t.Fatalf("mailbox %+v %v", msgs, err)
	}
	// A paused recipient: the row settles undeliverable, nothing mailed.
	w2 := createdWatch(t, s, ids, "a", t0)
	pause(t, s, "a")
	got, mailed, err = s.SettleAndMail(ctx, w2.ID, fired(t0.Add(time.Minute)), firedMessage(t, ids))
	if err != nil || got.State != store.Undeliverable || got.Receipt != store.ReceiptRejected || mailed.Message != nil {
		t.Fatalf("for a paused recipient: %+v %+v %v", got, mailed, err)
	}
	if _, _, err := s.SettleAndMail(ctx, w2.ID, store.Settlement{State: store.Cancelled}, firedMessage(t, ids)); err == nil {
		t.Fatal("settle and mail as cancelled taken")
	}
}

func TestCarryAndMail(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, Config{}, runServer(t))
	ids := newIDs()
	runningFor(t, s, "a", "https://example.test/hook")
	w := createdWatch(t, s, ids, "a", t0)
	change := firedMessage(t, ids)
	change.Type = store.MessageChanged
	mailed, err := s.CarryAndMail(ctx, w.ID, json.RawMessage(`{"n":2}`), 3, "moved", &change)
	if err != nil || mailed.Message == nil || mailed.Push == nil || !mailed.Push.Notice {
		t.Fatalf("carry and mail: %+v %v", mailed, err)
	}
	if got, _ := s.Get(ctx, w.ID); string(got.Baseline) != `{"n":2}` || got.State != store.Pending {
		t.Fatalf("row %+v", got)
	}
	if mailed, err = s.CarryAndMail(ctx, w.ID, json.RawMessage(`{"n":3}`), 4, "", nil); err != nil || mailed.Message != nil {
		t.Fatalf("carry without change: %+v %v", mailed, err)
	}
	pause(t, s, "a")
	if mailed, err = s.CarryAndMail(ctx, w.ID, json.RawMessage(`{"n":4}`), 5, "", &change); err != nil || mailed.Message != nil {
		t.Fatalf("carry for a paused recipient: %+v %v", mailed, err)
	}
	if got, _ := s.Get(ctx, w.ID); string(got.Baseline) != `{"n":4}` {
		t.Fatalf("the baseline did not move: %s", got.Baseline)
	}
	if _, err := s.Settle(ctx, w.ID, fired(t0)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CarryAndMail(ctx, w.ID, nil, 0, "", &change); !errors.Is(err, store.ErrNotPending) {
		t.Fatalf("carry after settle: %v", err)
	}
}

// TestMailboxAcrossStores: appends from two Stores on one server take
// dense, increasing seqs, and a long poll on one wakes on the other's
// append.
func TestMailboxAcrossStores(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := runServer(t)
	a, b := openStore(t, Config{}, srv), openStore(t, Config{}, srv)
	runningFor(t, a, "r", "")
	ids := newIDs()
	if _, _, err := a.AppendIfRunning(ctx, "r", firedMessage(t, ids)); err != nil {
		t.Fatal(err)
	}
	woke := make(chan error, 1)
	go func() { woke <- a.feeds().WaitMailbox(ctx, "r", 1) }()
	if _, _, err := b.AppendIfRunning(ctx, "r", firedMessage(t, ids)); err != nil {
		t.Fatal(err)
	}
	if err := <-woke; err != nil {
		t.Fatalf("the long poll did not wake on the other store's append: %v", err)
	}
	// A wait already satisfied returns at once; one that is not ends
	// with its context.
	if err := b.feeds().WaitMailbox(ctx, "r", 0); err != nil {
		t.Fatal(err)
	}
	short, stop := context.WithCancel(ctx)
	stop()
	if err := a.feeds().WaitMailbox(short, "r", 2); !errors.Is(err, context.Canceled) {
		t.Fatalf("a wait past the last seq: %v", err)
	}

	var wg sync.WaitGroup
	const per = 15
	for _, s := range []testStore{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				m := store.Message{Kind: "timer", Type: store.MessageFired, At: t0}
				if _, _, err := s.AppendIfRunning(ctx, "r", m); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	msgs, err := b.ReadMailbox(ctx, "r", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2+4*per {
		t.Fatalf("%d messages, want %d", len(msgs), 2+4*per)
	}
	for i, m := range msgs {
		if m.Seq != uint64(i+1) {
			t.Fatalf("message %d has seq %d: not dense", i, m.Seq)
		}
	}
	if page, err := a.ReadMailbox(ctx, "r", 10, 5); err != nil || len(page) != 5 || page[0].Seq != 11 {
		t.Fatalf("a page after 10: %d %v", len(page), err)
	}
	pause(t, b, "r")
	var nr *store.NotRunningError
	if _, _, err := a.AppendIfRunning(ctx, "r", firedMessage(t, ids)); !errors.As(err, &nr) {
		t.Fatalf("append to a paused recipient: %v", err)
	}
}

// TestSettleAndMailOnceAcrossStores: two Stores settle one watch at
// once; exactly one message lands.
func TestSettleAndMailOnceAcrossStores(t *testing.T) {
	ctx := context.Background()
	srv := runServer(t)
	a, b := openStore(t, Config{}, srv), openStore(t, Config{}, srv)
	runningFor(t, a, "r", "https://example.test/hook")
	ids := newIDs()
	const n = 10
	var ws []store.Watch
	for i := range n {
		ws = append(ws, createdWatch(t, a, ids, "r", t0.Add(time.Duration(i)*time.Millisecond)))
	}
	var wg sync.WaitGroup
	wins := make(chan store.ID, 2*n)
	for _, s := range []testStore{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, w := range ws {
				m := store.Message{Kind: "timer", Type: store.MessageFired, At: t0}
				_, _, err := s.SettleAndMail(ctx, w.ID, fired(t0), m)
				switch {
				case err == nil:
					wins <- w.ID
				case !errors.Is(err, store.ErrNotPending):
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	close(wins)
	seen := map[store.ID]int{}
	for id := range wins {
		seen[id]++
	}
	msgs, err := a.ReadMailbox(ctx, "r", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != n || len(msgs) != n {
		t.Fatalf("%d settled, %d messages, want %d each", len(seen), len(msgs), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Fatalf("%s settled %d times", id, c)
		}
	}
	var live int
	if err := b.LivePushes(ctx, func(store.Push) error { live++; return nil }); err != nil || live != n {
		t.Fatalf("%d live pushes, want %d: %v", live, n, err)
	}
}

func TestPushLifecycle(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, Config{}, runServer(t))
	ids := newIDs()
	runningFor(t, s, "a", "https://example.test/hook")
	var pushes []store.Push
	for i := range 3 {
		w := createdWatch(t, s, ids, "a", t0.Add(time.Duration(i)*time.Second))
		_, mailed, err := s.SettleAndMail(ctx, w.ID, fired(t0), firedMessage(t, ids))
		if err != nil {
			t.Fatal(err)
		}
		pushes = append(pushes, *mailed.Push)
	}
	p, m, rec, err := s.BeginPush(ctx, "a", 1, t0.Add(time.Minute))
	if err != nil || p.State != store.PushSending || p.Attempts != 1 || m.Seq != 1 || rec.ID != "a" {
		t.Fatalf("begin: %+v %+v %+v %v", p, m, rec, err)
	}
	if _, _, _, err := s.BeginPush(ctx, "a", 1, t0); !errors.Is(err, store.ErrPushState) {
		t.Fatalf("begin twice: %v", err)
	}
	p.State, p.UpdatedAt = store.PushDelivered, t0.Add(2*time.Minute)
	if err := s.FinishPush(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishPush(ctx, p); !errors.Is(err, store.ErrPushState) {
		t.Fatalf("finish twice: %v", err)
	}
	if err := s.FinishPush(ctx, store.Push{Recipient: "a", Seq: 2, State: store.PushSending}); err == nil {
		t.Fatal("finish as sending taken")
	}
	// Seq 2 is left sending, as a crash would leave it.
	if _, _, _, err := s.BeginPush(ctx, "a", 2, t0); err != nil {
		t.Fatal(err)
	}
	rec2, err := s.RecoverPushes(ctx, t0.Add(time.Hour))
	if err != nil || len(rec2) != 1 || rec2[0].Seq != 2 || rec2[0].State != store.PushUnknown {
		t.Fatalf("recover: %+v %v", rec2, err)
	}
	var live []uint64
	if err := s.LivePushes(ctx, func(p store.Push) error { live = append(live, p.Seq); return nil }); err != nil || len(live) != 1 || live[0] != 3 {
		t.Fatalf("live %v %v", live, err)
	}
	// A push whose message is gone fails, and says so.
	if err := s.DeleteRecipient(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if p, _, _, err := s.BeginPush(ctx, "a", 3, t0); !errors.Is(err, store.ErrNotFound) || p.State != store.PushFailed {
		t.Fatalf("begin for a deleted recipient: %+v %v", p, err)
	}
	// Final pushes older than the cutoff go; none is live now.
	n, err := s.PrunePushes(ctx, t0.Add(90*time.Minute))
	if err != nil || n != 3 {
		t.Fatalf("prune pushes: %d %v", n, err)
	}
	_ = pushes
}

// TestACommitWhoseAnswerIsLostIsAppliedOnce: the server stores a batch
// and its answer is lost; the commit is sent again and recognised by its
// message id, so the message is appended once and the call succeeds.
func TestACommitWhoseAnswerIsLostIsAppliedOnce(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, Config{}, runServer(t))
	runningFor(t, s, "r", "")
	for _, n := range []int{1, 2} { // one key, then several
		lost := 0
		s.loseAnswer = func() bool { lost++; return lost == 1 }
		var err error
		if n == 1 {
			_, err = s.ReportActivity(ctx, "r", 1, 0, t0)
		} else {
			_, _, err = s.AppendIfRunning(ctx, "r", firedMessage(t, newIDs()))
		}
		s.loseAnswer = nil
		if err != nil || lost != 1 {
			t.Fatalf("commit %d with its answer lost: %v (answers %d)", n, err, lost)
		}
	}
	if r, err := s.GetRecipient(ctx, "r"); err != nil || r.Activity.Replies != 1 {
		t.Fatalf("replies %d after one report whose answer was lost: %v", r.Activity.Replies, err)
	}
	msgs, err := s.ReadMailbox(ctx, "r", 0, 10)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("%d messages after one append whose answer was lost: %v", len(msgs), err)
	}
}

// TestASettlementAcrossAPauseIsUndeliverable: the recipient is paused
// by another process between the settlement's read and its commit; the
// commit is refused, runs again, and settles undeliverable with nothing
// mailed.
func TestASettlementAcrossAPauseIsUndeliverable(t *testing.T) {
	ctx := context.Background()
	srv := runServer(t)
	a, b := openStore(t, Config{}, srv), openStore(t, Config{}, srv)
	runningFor(t, a, "r", "https://example.test/hook")
	w := createdWatch(t, a, newIDs(), "r", t0)
	once := sync.Once{}
	a.failpoint = func(kind string) error {
		if kind == "settle-and-mail" {
			once.Do(func() { pause(t, b, "r") })
		}
		return nil
	}
	got, mailed, err := a.SettleAndMail(ctx, w.ID, fired(t0), firedMessage(t, newIDs()))
	if err != nil || got.State != store.Undeliverable || mailed.Message != nil {
		t.Fatalf("settle across a pause: %+v %+v %v", got, mailed, err)
	}
	if msgs, err := b.ReadMailbox(ctx, "r", 0, 10); err != nil || len(msgs) != 0 {
		t.Fatalf("a paused recipient's mailbox holds %d: %v", len(msgs), err)
	}
}

// TestATransitionThatKeepsLosingIsBusy: a settlement whose row another
// Store rewrites before each of its commits gives up after maxAttempts
// runs with store.ErrBusy, the backend-neutral sentinel the API answers
// 503 store_busy, and writes nothing.
func TestATransitionThatKeepsLosingIsBusy(t *testing.T) {
	ctx := context.Background()
	srv := runServer(t)
	a, b := openStore(t, Config{}, srv), openStore(t, Config{}, srv)
	w := createdWatch(t, a, newIDs(), "r", t0)
	runs := 0
	a.failpoint = func(kind string) error {
		if kind == "settle" {
			runs++
			if err := b.RecordProbe(ctx, w.ID, store.Probe{Attempts: runs}); err != nil {
				t.Error(err)
			}
		}
		return nil
	}
	_, err := a.Settle(ctx, w.ID, fired(t0.Add(time.Minute)))
	a.failpoint = nil
	if !errors.Is(err, store.ErrBusy) {
		t.Fatalf("a settlement that lost every race: %v, want store.ErrBusy", err)
	}
	if runs != maxAttempts {
		t.Errorf("it ran %d times, want %d", runs, maxAttempts)
	}
	if got, err := b.Get(ctx, w.ID); err != nil || got.State != store.Pending {
		t.Fatalf("after giving up: %+v %v, want the row still pending", got, err)
	}
}

// A commit the servers refuse because the stream holds as many open
// batches as it allows (other nodes' among them) is tried again after a
// short wait, and then is store.ErrBusy (the API's 503 store_busy), not
// an error the API would answer 500.
func TestACommitRefusedAsTooManyInflightIsBusy(t *testing.T) {
	ctx := context.Background()
	srv := natstest.StartWith(t, server.Options{JetStreamLimits: server.JSLimitOpts{MaxBatchInflightPerStream: 1}})
	st := openStore(t, Config{}, srv)
	w := createdWatch(t, st, newIDs(), "r", t0)
	// Another writer's batch, opened and never committed, holds the one
	// open batch the stream allows until the server times it out.
	open := nats.NewMsg(st.subj + "other.key")
	open.Header.Set(hdrBatchID, "held-open")
	open.Header.Set(hdrBatchSeq, "1")
	if err := st.nc.PublishMsg(open); err != nil {
		t.Fatal(err)
	}
	if err := st.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	_, err := st.Settle(ctx, w.ID, fired(t0.Add(time.Minute)))
	if !errors.Is(err, store.ErrBusy) {
		t.Fatalf("a settlement while the stream holds its open batches: %v, want store.ErrBusy", err)
	}
	if got, err := st.Get(ctx, w.ID); err != nil || got.State != store.Pending {
		t.Fatalf("after giving up: %+v %v, want the row still pending", got, err)
	}
}
