package storetest

import (
	"errors"
	"sync"
	"time"

	"github.com/vigilhq/vigil/store"
)

func retentionCases() []testCase {
	return []testCase{
		{"OldestAndPruneOldestSettledAndMessages", testPruneOldestRows},
		{"CancelledIsRetainedAndTold", testPruneOldestCancelled},
		{"PruneOldestNeverALivePush", testPruneOldestPushes},
		{"PruneOldestEvents", testPruneOldestEvents},
		{"PruneBackstop", testPrune},
	}
}

func (e *env) oldest(c store.Retained) (time.Time, bool) {
	e.Helper()
	at, ok, err := e.b.Oldest(e.ctx, c)
	if err != nil {
		e.Fatal(err)
	}
	return at, ok
}

// Each class reads its oldest record; a batch prunes oldest first, at
// most its limit, never what is at or after the cutoff and never a
// pending row; an unknown class is ErrUnknownClass.
func testPruneOldestRows(e *env) {
	e.running("a", "")
	for _, c := range []store.Retained{store.RetainedSettled, store.RetainedMessages, store.RetainedPushes, store.RetainedEvents("fetch")} {
		if _, ok := e.oldest(c); ok {
			e.Fatalf("%s: an oldest record in an empty store", c)
		}
	}
	// Settled out of order: the class orders them by time, not by id.
	var rows []store.Watch
	for _, h := range []int{3, 1, 2, 10} {
		w, _ := e.settleMailed("a", t0.Add(time.Duration(h)*time.Hour))
		rows = append(rows, w)
	}
	pending := e.created("a", t0)
	for _, c := range []store.Retained{store.RetainedSettled, store.RetainedMessages} {
		if at, ok := e.oldest(c); !ok || !at.Equal(t0.Add(time.Hour)) {
			e.Fatalf("%s: oldest %v %v, want %v", c, at, ok, t0.Add(time.Hour))
		}
	}
	cutoff := t0.Add(5 * time.Hour)
	if n, err := e.b.PruneOldest(e.ctx, store.RetainedSettled, cutoff, 2); err != nil || n != 2 {
		e.Fatalf("first batch: %d %v, want 2", n, err)
	}
	for i, pruned := range []bool{false, true, true, false} {
		_, err := e.b.Get(e.ctx, rows[i].ID)
		if gone := errors.Is(err, store.ErrNotFound); gone != pruned {
			e.Fatalf("the row settled at +%v: pruned %v after one batch, want %v", rows[i].SettledAt.Sub(t0), gone, pruned)
		}
	}
	if at, _ := e.oldest(store.RetainedSettled); !at.Equal(t0.Add(3 * time.Hour)) {
		e.Fatalf("oldest after a batch: %v", at)
	}
	if n, err := e.b.PruneOldest(e.ctx, store.RetainedSettled, cutoff, 2); err != nil || n != 1 {
		e.Fatalf("second batch: %d %v, want 1", n, err)
	}
	if n, err := e.b.PruneOldest(e.ctx, store.RetainedSettled, cutoff, 2); err != nil || n != 0 {
		e.Fatalf("third batch: %d %v, want 0", n, err)
	}
	if _, err := e.b.Get(e.ctx, rows[3].ID); err != nil {
		e.Fatalf("the row settled after the cutoff: %v", err)
	}
	if _, err := e.b.Get(e.ctx, pending.ID); err != nil {
		e.Fatalf("the pending row: %v", err)
	}
	if _, ok := e.schedules()[pending.ID]; !ok {
		e.Fatal("the pending row left the schedule")
	}
	// Pruned rows leave the listings too.
	if got := e.list(store.Filter{Recipient: "a"}); len(got) != 2 {
		e.Fatalf("recipient a lists %d rows, want the pending one and the young one", len(got))
	}
	// Messages are their own class.
	if n, err := e.b.PruneOldest(e.ctx, store.RetainedMessages, cutoff, 10); err != nil || n != 3 {
		e.Fatalf("messages: %d %v, want 3", n, err)
	}
	msgs := e.mailbox("a")
	if len(msgs) != 1 || !msgs[0].At.Equal(t0.Add(10*time.Hour)) {
		e.Fatalf("mailbox after the prune: %+v", msgs)
	}
	if _, err := e.b.PruneOldest(e.ctx, "nonsense", cutoff, 1); !errors.Is(err, store.ErrUnknownClass) {
		e.Fatalf("an unknown class: %v, want ErrUnknownClass", err)
	}
	if _, _, err := e.b.Oldest(e.ctx, "nonsense"); !errors.Is(err, store.ErrUnknownClass) {
		e.Fatalf("the oldest of an unknown class: %v, want ErrUnknownClass", err)
	}
}

// A cancel is a settlement too: retained from when it was cancelled, and
// told to OnRetained after its commit; nil stops the telling.
func testPruneOldestCancelled(e *env) {
	w := e.created("a", t0)
	var mu sync.Mutex
	var told []time.Time
	e.b.OnRetained(func(c store.Retained, at time.Time) {
		if c == store.RetainedSettled {
			mu.Lock()
			told = append(told, at)
			mu.Unlock()
		}
	})
	if _, err := e.b.Settle(e.ctx, w.ID, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0.Add(time.Minute)}); err != nil {
		e.Fatal(err)
	}
	mu.Lock()
	if len(told) != 1 || !told[0].Equal(t0.Add(time.Minute)) {
		e.Fatalf("told %v", told)
	}
	mu.Unlock()
	e.b.OnRetained(nil)
	other := e.created("a", t0)
	if _, err := e.b.Settle(e.ctx, other.ID, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0.Add(2 * time.Minute)}); err != nil {
		e.Fatal(err)
	}
	mu.Lock()
	if len(told) != 1 {
		e.Fatalf("told after OnRetained(nil): %v", told)
	}
	mu.Unlock()
	if at, ok := e.oldest(store.RetainedSettled); !ok || !at.Equal(t0.Add(time.Minute)) {
		e.Fatalf("oldest %v %v", at, ok)
	}
	if n, err := e.b.PruneOldest(e.ctx, store.RetainedSettled, t0.Add(time.Hour), 10); err != nil || n != 2 {
		e.Fatalf("prune: %d %v, want 2", n, err)
	}
	if _, err := e.b.Get(e.ctx, w.ID); !errors.Is(err, store.ErrNotFound) {
		e.Fatalf("the cancelled row after the prune: %v", err)
	}
}

// A push is retained from when it became final; one not final is never
// pruned, however old.
func testPruneOldestPushes(e *env) {
	e.running("a", "https://example.org/hook")
	e.settleMailed("a", t0)
	e.settleMailed("a", t0)
	if _, _, _, err := e.b.BeginPush(e.ctx, "a", 2, t0); err != nil {
		e.Fatal(err)
	}
	if _, ok := e.oldest(store.RetainedPushes); ok {
		e.Fatal("a live push counts as retained")
	}
	e.settleMailed("a", t0)
	p, _, _, err := e.b.BeginPush(e.ctx, "a", 1, t0.Add(time.Second))
	if err != nil {
		e.Fatal(err)
	}
	p.State, p.UpdatedAt = store.PushDelivered, t0.Add(2*time.Second)
	if err := e.b.FinishPush(e.ctx, p); err != nil {
		e.Fatal(err)
	}
	if at, ok := e.oldest(store.RetainedPushes); !ok || !at.Equal(t0.Add(2*time.Second)) {
		e.Fatalf("oldest push %v %v", at, ok)
	}
	if n, err := e.b.PruneOldest(e.ctx, store.RetainedPushes, t0.Add(365*24*time.Hour), 10); err != nil || n != 1 {
		e.Fatalf("prune: %d %v, want the one final push", n, err)
	}
	var live []uint64
	for _, p := range e.live() {
		live = append(live, p.Seq)
	}
	if len(live) != 2 || live[0] != 2 || live[1] != 3 {
		e.Fatalf("live pushes after the prune %v, want 2 (sending) and 3 (pending)", live)
	}
	if msgs := e.mailbox("a"); len(msgs) != 3 || msgs[0].Push != nil || msgs[1].Push == nil || msgs[2].Push == nil {
		e.Fatalf("mailbox %+v", msgs)
	}
}

// An event stream is a class of its own, pruned in batches oldest first;
// other streams are untouched; a pruned key may be appended again.
func testPruneOldestEvents(e *env) {
	for i, stream := range []string{"fetch", "fetch", "fetch", "observe"} {
		ev := store.Event{Stream: stream, Key: string(rune('a' + i)), Type: "t", OccurredAt: t0.Add(time.Duration(i) * time.Hour), Payload: []byte(`{}`)}
		if _, _, err := e.b.AppendEvent(e.ctx, ev); err != nil {
			e.Fatal(err)
		}
	}
	fetch := store.RetainedEvents("fetch")
	if at, ok := e.oldest(fetch); !ok || !at.Equal(t0) {
		e.Fatalf("oldest %v %v", at, ok)
	}
	cutoff := t0.Add(10 * time.Hour)
	if n, err := e.b.PruneOldest(e.ctx, fetch, cutoff, 2); err != nil || n != 2 {
		e.Fatalf("first batch: %d %v", n, err)
	}
	if at, _ := e.oldest(fetch); !at.Equal(t0.Add(2 * time.Hour)) {
		e.Fatalf("oldest after a batch %v", at)
	}
	if n, err := e.b.PruneOldest(e.ctx, fetch, cutoff, 2); err != nil || n != 1 {
		e.Fatalf("second batch: %d %v", n, err)
	}
	if evs, _ := e.b.ReadEvents(e.ctx, "observe", 0, 10); len(evs) != 1 {
		e.Fatalf("observe stream %+v", evs)
	}
	if _, dup, err := e.b.AppendEvent(e.ctx, store.Event{Stream: "fetch", Key: "a", Type: "t", OccurredAt: cutoff, Payload: []byte(`{}`)}); err != nil || dup {
		e.Fatalf("re-append: %v %v", dup, err)
	}
}

// Prune, the start-time backstop, deletes rows settled before its cutoff
// and messages older than it, and never a pending row.
func testPrune(e *env) {
	e.running("a", "")
	old, _ := e.settleMailed("a", t0)
	recent, _ := e.settleMailed("a", t0.Add(8*24*time.Hour))
	pending := e.created("a", t0)
	n, err := e.b.Prune(e.ctx, t0.Add(24*time.Hour))
	if err != nil || n < 1 {
		e.Fatalf("pruned %d %v", n, err)
	}
	if _, err := e.b.Get(e.ctx, old.ID); !errors.Is(err, store.ErrNotFound) {
		e.Fatalf("the old settled row: %v, want it pruned", err)
	}
	for _, w := range []store.Watch{recent, pending} {
		if _, err := e.b.Get(e.ctx, w.ID); err != nil {
			e.Fatalf("%s: %v", w.ID, err)
		}
	}
	if ws := e.list(store.Filter{Recipient: "a"}); len(ws) != 2 {
		e.Fatalf("recipient a lists %d rows, want 2", len(ws))
	}
	if msgs := e.mailbox("a"); len(msgs) != 1 || msgs[0].Seq != 2 {
		e.Fatalf("mailbox after the prune: %+v", msgs)
	}
}
