package storetest

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/vigilhq/vigil/store"
)

func dueCases() []testCase {
	return []testCase{
		{"EveryPendingRowOnceAtItsDueTime", testDueFollowsTransitions},
		{"ASliceByTimeCursorAndLimit", testDueSlices},
		{"PendingRecipientsAndKinds", testPendingRecipients},
	}
}

// due reads the whole due index through ScanDue: each pending row's
// schedule, in due order.
func (e *env) due(q store.DueQuery) ([]store.Schedule, store.DueSlice) {
	e.Helper()
	if q.Through.IsZero() {
		q.Through = t0.Add(1000 * time.Hour)
	}
	var got []store.Schedule
	sl, err := e.b.ScanDue(e.ctx, q, func(sc store.Schedule) error {
		got = append(got, sc)
		return nil
	})
	if err != nil {
		e.Fatal(err)
	}
	return got, sl
}

// Every pending row is in the due index exactly once, at its durable next
// check when it has one and else at its registration instant, with its
// schedule; each transition that moves the next check moves the entry,
// and each that ends pending removes it.
func testDueFollowsTransitions(e *env) {
	e.running("r", "")
	plain := e.created("r", t0)                 // no next check: its registration
	timer := e.watch("r", t0.Add(-time.Minute)) // a first check an hour on
	timer.NextCheck = t0.Add(time.Hour)
	if err := e.b.Create(e.ctx, timer); err != nil {
		e.Fatal(err)
	}
	probed := e.created("r", t0.Add(time.Second))
	carried := e.created("r", t0.Add(2*time.Second))
	mailed := e.created("r", t0.Add(3*time.Second))
	cancelled := e.created("r", t0.Add(4*time.Second))

	if err := e.b.RecordProbe(e.ctx, probed.ID, store.Probe{Attempts: 1, Note: "n", NextCheck: t0.Add(30 * time.Minute)}); err != nil {
		e.Fatal(err)
	}
	if err := e.b.SetNextCheck(e.ctx, timer.ID, t0.Add(2*time.Hour)); err != nil {
		e.Fatal(err)
	}
	if err := e.b.SetNextCheck(e.ctx, carried.ID, t0.Add(10*time.Minute)); err != nil {
		e.Fatal(err)
	}
	// A baseline keeps the next check, and so the entry's time.
	if err := e.b.CarryBaseline(e.ctx, carried.ID, json.RawMessage(`{"a":1}`), 4, "b"); err != nil {
		e.Fatal(err)
	}
	if _, _, err := e.b.SettleAndMail(e.ctx, mailed.ID, store.Settlement{State: store.Fired, Outcome: &store.Outcome{Result: "fired"}, SettledAt: t0}, e.fired()); err != nil {
		e.Fatal(err)
	}
	if _, err := e.b.Settle(e.ctx, cancelled.ID, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0}); err != nil {
		e.Fatal(err)
	}
	// A next check cleared: back at its registration.
	if err := e.b.RecordProbe(e.ctx, probed.ID, store.Probe{Attempts: 2, Note: "m"}); err != nil {
		e.Fatal(err)
	}
	got, _ := e.due(store.DueQuery{})
	want := []struct {
		id       store.ID
		at       time.Time
		attempts int
	}{
		{plain.ID, plain.ID.Time(), 0},
		{probed.ID, probed.ID.Time(), 2},
		{carried.ID, t0.Add(10 * time.Minute), 4},
		{timer.ID, t0.Add(2 * time.Hour), 0},
	}
	if len(got) != len(want) {
		e.Fatalf("the due index holds %d rows: %+v; want the %d pending ones", len(got), got, len(want))
	}
	for i, w := range want {
		sc := got[i]
		if sc.ID != w.id || !store.DueAt(sc.ID, sc.Next).Equal(w.at) || sc.Attempts != w.attempts || sc.Every != time.Minute {
			e.Fatalf("entry %d: %+v due %v; want %s due %v with %d attempts", i, sc, store.DueAt(sc.ID, sc.Next), w.id, w.at, w.attempts)
		}
	}
	// What the pending index says of each, the due index says too.
	for _, sc := range got {
		if s := e.schedules()[sc.ID]; s != sc {
			e.Fatalf("%s: the due index's %+v, the pending index's %+v", sc.ID, sc, s)
		}
	}
}

// A slice is the entries after its cursor and through its time, in due
// order, at most its limit (saying it stopped there), of the ids it keeps.
func testDueSlices(e *env) {
	e.running("r", "")
	var ids []store.ID
	for i := range 10 {
		w := e.watch("r", t0)
		w.NextCheck = t0.Add(time.Duration(10-i) * time.Minute) // registered in the reverse order of due
		if err := e.b.Create(e.ctx, w); err != nil {
			e.Fatal(err)
		}
		ids = append([]store.ID{w.ID}, ids...)
	}
	got, sl := e.due(store.DueQuery{Through: t0.Add(5 * time.Minute)})
	if len(got) != 5 || sl.Full || !sl.Beyond || got[0].ID != ids[0] || got[4].ID != ids[4] || sl.Last.ID != ids[4] || sl.Last.At != t0.Add(5*time.Minute).UnixNano() {
		e.Fatalf("through 5 minutes: %d, %+v", len(got), sl)
	}
	got, sl = e.due(store.DueQuery{After: sl.Last, Through: t0.Add(time.Hour), Limit: 3})
	if len(got) != 3 || !sl.Full || got[0].ID != ids[5] || sl.Last.ID != ids[7] {
		e.Fatalf("after the 5th, 3 of them: %d, %+v", len(got), sl)
	}
	got, sl = e.due(store.DueQuery{After: sl.Last, Through: t0.Add(time.Hour), Limit: 2})
	if len(got) != 2 || got[1].ID != ids[9] || sl.Last.ID != ids[9] {
		e.Fatalf("the last 2: %d, %+v", len(got), sl)
	}
	if got, again := e.due(store.DueQuery{After: sl.Last}); len(got) != 0 || again.Last != sl.Last {
		e.Fatalf("after the last: %d, %+v", len(got), again)
	}
	odd := func(id store.ID) bool { return id == ids[1] || id == ids[3] }
	if got, _ := e.due(store.DueQuery{Keep: odd}); len(got) != 2 || got[0].ID != ids[1] || got[1].ID != ids[3] {
		e.Fatalf("the kept ids: %+v", got)
	}
}

// PendingRecipients names every recipient with a pending row once, a
// long name whole and one with no record too; ForEachPendingOfKind gives
// a kind's pending rows and no other.
func testPendingRecipients(e *env) {
	long := "agent-" + strings.Repeat("x", 200)
	var want []string
	for i, rid := range []string{"b", "a", long, "c"} {
		for j := range 3 {
			w := e.watch(rid, t0.Add(time.Duration(i*3+j)*time.Second))
			if j == 1 {
				w.Kind = "ticket"
			}
			if err := e.b.Create(e.ctx, w); err != nil {
				e.Fatal(err)
			}
		}
		want = append(want, rid)
	}
	e.running("a", "")
	seen := map[string]int{}
	if err := e.b.PendingRecipients(e.ctx, func(id string) error { seen[id]++; return nil }); err != nil {
		e.Fatal(err)
	}
	for _, rid := range want {
		if seen[rid] != 1 {
			e.Fatalf("%.20s named %d times: %v", rid, seen[rid], seen)
		}
	}
	if len(seen) != len(want) {
		e.Fatalf("named %v, want %d recipients", seen, len(want))
	}
	n := 0
	if err := e.b.ForEachPendingOfKind(e.ctx, "ticket", func(w store.Watch) error {
		if w.Kind != "ticket" || w.State != store.Pending {
			e.Fatalf("a row of kind %s, %s", w.Kind, w.State)
		}
		n++
		return nil
	}); err != nil || n != 4 {
		e.Fatalf("%d ticket rows, %v; want 4", n, err)
	}
}
