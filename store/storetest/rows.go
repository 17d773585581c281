package storetest

import (
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/vigilhq/vigil/store"
)

func rowCases() []testCase {
	return []testCase{
		{"CreateGetSettleOnce", testCreateGetSettleOnce},
		{"RejectedReceiptIsUndeliverable", testRejectedReceipt},
		{"BadTransitionsRefused", testBadTransitions},
		{"SettleAndCancelOnlyOneWins", testSettleCancelRace},
		{"NextCheckAndProbeOnlyWhilePending", testNextCheckAndProbe},
		{"CreateIfRunning", testCreateIfRunning},
		{"TheBoundHoldsUnderRacingRegistrations", testPendingBound},
		{"PendingSchedule", testPendingSchedule},
		{"PendingBySubject", testPendingBySubject},
		{"PendingByPartitionKey", testPendingByKey},
		{"ListFilters", testListFilters},
		{"ListPageCursors", testListPage},
		{"Counts", testCounts},
		{"PendingByKind", testPendingByKind},
		{"PendingCount", testPendingCount},
	}
}

// A row is created once, read back as written, settles once, and a
// transition of a settled row is refused.
func testCreateGetSettleOnce(e *env) {
	w := e.created("agent-1", t0)
	if err := e.b.Create(e.ctx, w); !errors.Is(err, store.ErrExists) {
		e.Fatalf("a second Create of the id: %v, want ErrExists", err)
	}
	got, err := e.b.Get(e.ctx, w.ID)
	if err != nil || got.ID != w.ID || got.State != store.Pending || got.Kind != w.Kind || got.Recipient != w.Recipient ||
		time.Duration(got.Every) != time.Minute || !got.ExpiresAt.Equal(*w.ExpiresAt) || string(got.Params) != string(w.Params) {
		e.Fatalf("Get: %+v %v", got, err)
	}
	if err := e.b.CarryBaseline(e.ctx, w.ID, json.RawMessage(`{"title":"a"}`), 2, "seen"); err != nil {
		e.Fatal(err)
	}
	settled, err := e.b.Settle(e.ctx, w.ID, store.Settlement{State: store.Fired, Receipt: store.ReceiptUnknown,
		Outcome: &store.Outcome{Result: "fired"}, SettledAt: t0.Add(time.Hour), Attempts: 3, LastNote: "done"})
	if err != nil || settled.State != store.Fired || settled.Receipt != store.ReceiptUnknown || settled.Attempts != 3 ||
		string(settled.Baseline) != `{"title":"a"}` || settled.SettledAt == nil || !settled.SettledAt.Equal(t0.Add(time.Hour)) {
		e.Fatalf("Settle: %+v %v", settled, err)
	}
	if _, err := e.b.Settle(e.ctx, w.ID, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0}); !errors.Is(err, store.ErrNotPending) {
		e.Fatalf("a second Settle: %v, want ErrNotPending", err)
	}
	if err := e.b.CarryBaseline(e.ctx, w.ID, nil, 0, ""); !errors.Is(err, store.ErrNotPending) {
		e.Fatalf("a baseline after the settlement: %v, want ErrNotPending", err)
	}
	if got, _ := e.b.Get(e.ctx, w.ID); got.State != store.Fired || got.LastNote != "done" {
		e.Fatalf("a refused transition changed the row: %+v", got)
	}
	got, err = e.b.SetReceipt(e.ctx, w.ID, store.ReceiptDelivered)
	if err != nil || got.Receipt != store.ReceiptDelivered || got.State != store.Fired {
		e.Fatalf("SetReceipt: %+v %v", got, err)
	}
	absent := e.id(t0)
	if _, err := e.b.Get(e.ctx, absent); !errors.Is(err, store.ErrNotFound) {
		e.Fatalf("Get of an absent id: %v, want ErrNotFound", err)
	}
	if _, err := e.b.SetReceipt(e.ctx, absent, store.ReceiptDelivered); !errors.Is(err, store.ErrNotFound) {
		e.Fatalf("SetReceipt of an absent id: %v, want ErrNotFound", err)
	}
	if err := e.b.CarryBaseline(e.ctx, absent, nil, 0, ""); !errors.Is(err, store.ErrNotFound) {
		e.Fatalf("CarryBaseline of an absent id: %v, want ErrNotFound", err)
	}
}

// A fired or expired row whose delivery was rejected becomes
// undeliverable, and is listed under its new state only.
func testRejectedReceipt(e *env) {
	w := e.created("a", t0)
	if _, err := e.b.Settle(e.ctx, w.ID, store.Settlement{State: store.Expired, Receipt: store.ReceiptUnknown, SettledAt: t0}); err != nil {
		e.Fatal(err)
	}
	got, err := e.b.SetReceipt(e.ctx, w.ID, store.ReceiptRejected)
	if err != nil || got.State != store.Undeliverable || got.Receipt != store.ReceiptRejected {
		e.Fatalf("%+v %v", got, err)
	}
	if ws := e.list(store.Filter{State: store.Undeliverable}); len(ws) != 1 {
		e.Fatalf("listed undeliverable: %d rows, want 1", len(ws))
	}
	if ws := e.list(store.Filter{State: store.Expired}); len(ws) != 0 {
		e.Fatalf("still listed expired: %d rows", len(ws))
	}
}

// Transitions that make no sense are refused and write nothing.
func testBadTransitions(e *env) {
	w := e.watch("a", t0)
	if err := e.b.Create(e.ctx, store.Watch{ID: w.ID, State: "snoozed", Receipt: store.ReceiptNone}); err == nil {
		e.Fatal("created a row in an unknown state")
	}
	if err := e.b.Create(e.ctx, w); err != nil {
		e.Fatal(err)
	}
	if _, err := e.b.SetReceipt(e.ctx, w.ID, store.ReceiptDelivered); err == nil {
		e.Fatal("a receipt for a pending row")
	}
	if _, err := e.b.Settle(e.ctx, w.ID, store.Settlement{State: store.Pending, Receipt: store.ReceiptNone, SettledAt: t0}); err == nil {
		e.Fatal("settled to pending")
	}
	if got, _ := e.b.Get(e.ctx, w.ID); got.State != store.Pending || got.Receipt != store.ReceiptNone {
		e.Fatalf("a refused transition changed the row: %+v", got)
	}
}

// A cancel and a settlement of one row at once: exactly one wins, the
// other gets ErrNotPending, and a cancel that wins leaves nothing mailed.
func testSettleCancelRace(e *env) {
	e.running("a", "")
	const n = 64
	rows := make([]store.Watch, n)
	for i := range rows {
		rows[i] = e.created("a", t0)
	}
	type result struct{ settled, cancelled error }
	res := make([]result, n)
	var wg sync.WaitGroup
	for i, w := range rows {
		m := e.fired()
		m.WatchID = w.ID
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, _, res[i].settled = e.b.SettleAndMail(e.ctx, w.ID, store.Settlement{State: store.Fired, Outcome: &m.Outcome, SettledAt: t0}, m)
		}()
		go func() {
			defer wg.Done()
			_, res[i].cancelled = e.b.Settle(e.ctx, w.ID, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0})
		}()
	}
	wg.Wait()
	fired := 0
	for i, r := range res {
		switch {
		case r.settled == nil && errors.Is(r.cancelled, store.ErrNotPending):
			fired++
			if got, _ := e.b.Get(e.ctx, rows[i].ID); got.State != store.Fired {
				e.Fatalf("row %d: the settlement won but the row is %s", i, got.State)
			}
		case r.cancelled == nil && errors.Is(r.settled, store.ErrNotPending):
			if got, _ := e.b.Get(e.ctx, rows[i].ID); got.State != store.Cancelled {
				e.Fatalf("row %d: the cancel won but the row is %s", i, got.State)
			}
		default:
			e.Fatalf("row %d: settle %v, cancel %v: want exactly one to win, the other ErrNotPending", i, r.settled, r.cancelled)
		}
	}
	if msgs := e.mailbox("a"); len(msgs) != fired {
		e.Fatalf("%d messages for %d settlements that won", len(msgs), fired)
	}
}

// A durable next check and a probe record apply only while the row is
// pending; a baseline keeps the next check and clears the fault; a
// settlement carries its own fault and ends the next check.
func testNextCheckAndProbe(e *env) {
	a, b := e.created("r", t0), e.created("r", t0)
	next := t0.Add(time.Hour)
	if err := e.b.SetNextCheck(e.ctx, a.ID, next); err != nil {
		e.Fatal(err)
	}
	if got, _ := e.b.Get(e.ctx, a.ID); !got.NextCheck.Equal(next) {
		e.Fatalf("Get: next check %v, want %v", got.NextCheck, next)
	}
	if err := e.b.CarryBaseline(e.ctx, a.ID, []byte(`{}`), 3, "moved"); err != nil {
		e.Fatal(err)
	}
	if sa := e.schedules()[a.ID]; !sa.Next.Equal(next) || sa.Attempts != 3 || sa.Every != time.Minute {
		e.Fatalf("a's schedule after a baseline: %+v", sa)
	}
	if err := e.b.SetNextCheck(e.ctx, a.ID, time.Time{}); err != nil {
		e.Fatal(err)
	}
	if sa := e.schedules()[a.ID]; !sa.Next.IsZero() {
		e.Fatalf("a's next check was not cleared: %+v", sa)
	}

	f := &store.Fault{Reason: "timeout", Message: "observe ran past 5s"}
	next = t0.Add(90 * time.Second)
	if err := e.b.RecordProbe(e.ctx, b.ID, store.Probe{Attempts: 4, Note: "run 7 in progress", Fault: f, NextCheck: next}); err != nil {
		e.Fatal(err)
	}
	got, err := e.b.Get(e.ctx, b.ID)
	if err != nil || got.Attempts != 4 || got.LastNote != "run 7 in progress" || !got.LastFault.Equal(f) || !got.NextCheck.Equal(next) {
		e.Fatalf("after RecordProbe: %+v %v", got, err)
	}
	if sb := e.schedules()[b.ID]; sb.Attempts != 4 || !sb.Next.Equal(next) {
		e.Fatalf("b's schedule after RecordProbe: %+v", sb)
	}
	if err := e.b.CarryBaseline(e.ctx, b.ID, []byte(`{}`), 5, "ok"); err != nil {
		e.Fatal(err)
	}
	if got, _ := e.b.Get(e.ctx, b.ID); got.LastFault != nil || !got.NextCheck.Equal(next) {
		e.Fatalf("after a baseline: %+v", got)
	}
	settled, err := e.b.Settle(e.ctx, b.ID, store.Settlement{State: store.Expired, Receipt: store.ReceiptNone, SettledAt: t0, Attempts: 6, LastNote: "n", LastFault: f})
	if err != nil || !settled.LastFault.Equal(f) || !settled.NextCheck.IsZero() {
		e.Fatalf("settled: %+v %v", settled, err)
	}
	for _, id := range []store.ID{b.ID} {
		if err := e.b.SetNextCheck(e.ctx, id, next); !errors.Is(err, store.ErrNotPending) {
			e.Fatalf("SetNextCheck of a settled row: %v, want ErrNotPending", err)
		}
		if err := e.b.RecordProbe(e.ctx, id, store.Probe{Attempts: 9}); !errors.Is(err, store.ErrNotPending) {
			e.Fatalf("RecordProbe of a settled row: %v, want ErrNotPending", err)
		}
	}
	if got, _ := e.b.Get(e.ctx, b.ID); got.Attempts != 6 || !got.NextCheck.IsZero() {
		e.Fatalf("a refused record changed the settled row: %+v", got)
	}
	absent := e.id(t0)
	if err := e.b.SetNextCheck(e.ctx, absent, next); !errors.Is(err, store.ErrNotPending) && !errors.Is(err, store.ErrNotFound) {
		e.Fatalf("SetNextCheck of an absent id: %v, want ErrNotPending or ErrNotFound", err)
	}
	if err := e.b.RecordProbe(e.ctx, absent, store.Probe{}); !errors.Is(err, store.ErrNotPending) && !errors.Is(err, store.ErrNotFound) {
		e.Fatalf("RecordProbe of an absent id: %v, want ErrNotPending or ErrNotFound", err)
	}
	if _, ok := e.schedules()[absent]; ok {
		e.Fatal("a refused next check made an absent id pending")
	}
}

// A row is written only while its recipient runs, in the transaction
// that checks it: a *store.NotRunningError naming the status otherwise.
func testCreateIfRunning(e *env) {
	e.running("a", "")
	if err := e.b.CreateIfRunning(e.ctx, e.watch("a", t0), 0); err != nil {
		e.Fatal(err)
	}
	for _, status := range []store.RecipientStatus{store.StatusPaused, store.StatusStopped} {
		e.setStatus("a", status)
		err := e.b.CreateIfRunning(e.ctx, e.watch("a", t0), 0)
		var nr *store.NotRunningError
		if !errors.As(err, &nr) || nr.Status != status || nr.Recipient != "a" || !errors.Is(err, store.ErrNotRunning) {
			e.Fatalf("%s: %v, want a *NotRunningError", status, err)
		}
	}
	var nr *store.NotRunningError
	if err := e.b.CreateIfRunning(e.ctx, e.watch("nobody", t0), 0); !errors.As(err, &nr) || nr.Status != "" {
		e.Fatalf("an absent recipient: %v, want a *NotRunningError with no status", err)
	}
	if rows := e.list(store.Filter{}); len(rows) != 1 {
		e.Fatalf("%d rows written, want the one for a running recipient", len(rows))
	}
	w := e.watch("a", t0)
	e.setStatus("a", store.StatusRunning)
	if err := e.b.CreateIfRunning(e.ctx, w, 0); err != nil {
		e.Fatal(err)
	}
	if err := e.b.CreateIfRunning(e.ctx, w, 0); !errors.Is(err, store.ErrExists) {
		e.Fatalf("a second CreateIfRunning of the id: %v, want ErrExists", err)
	}
}

// A registration bounded by maxPending lands only while its recipient
// holds fewer pending rows, decided in its own transaction: of many
// racing for the last places, exactly those places land and the others
// are a *store.TooManyPendingError; a cancel frees a place; an unbounded
// one (maxPending 0) is not held.
func testPendingBound(e *env) {
	e.running("a", "")
	const bound, racing = 5, 12
	for range bound - 2 {
		if err := e.b.CreateIfRunning(e.ctx, e.watch("a", t0), bound); err != nil {
			e.Fatal(err)
		}
	}
	ws := make([]store.Watch, racing)
	for i := range ws {
		ws[i] = e.watch("a", t0)
	}
	errs := make([]error, racing)
	var wg sync.WaitGroup
	for i := range ws {
		wg.Go(func() { errs[i] = e.b.CreateIfRunning(e.ctx, ws[i], bound) })
	}
	wg.Wait()
	landed := 0
	for _, err := range errs {
		var tmp *store.TooManyPendingError
		switch {
		case err == nil:
			landed++
		case errors.As(err, &tmp) && errors.Is(err, store.ErrTooManyPending) && tmp.Recipient == "a" && tmp.Max == bound:
		default:
			e.Fatalf("a racing registration: %v", err)
		}
	}
	if landed != 2 {
		e.Fatalf("%d of %d racing registrations landed with 2 places left", landed, racing)
	}
	if n, err := e.b.CountPending(e.ctx, "a", 0); err != nil || n != bound || len(e.list(store.Filter{Recipient: "a", State: store.Pending})) != bound {
		e.Fatalf("%d pending (%v), want the bound %d", n, err, bound)
	}
	pending := e.list(store.Filter{Recipient: "a", State: store.Pending})
	if _, err := e.b.Settle(e.ctx, pending[0].ID, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0}); err != nil {
		e.Fatal(err)
	}
	if err := e.b.CreateIfRunning(e.ctx, e.watch("a", t0), bound); err != nil {
		e.Fatalf("after a cancel freed a place: %v", err)
	}
	if err := e.b.CreateIfRunning(e.ctx, e.watch("a", t0), bound); !errors.Is(err, store.ErrTooManyPending) {
		e.Fatalf("at the bound again: %v", err)
	}
	if err := e.b.CreateIfRunning(e.ctx, e.watch("a", t0), 0); err != nil {
		e.Fatalf("an unbounded registration at the bound: %v", err)
	}
}

// ForEachPending sees exactly the pending rows, each with its every,
// deadline, attempts and next check.
func testPendingSchedule(e *env) {
	a, b, c := e.watch("r", t0), e.watch("r", t0), e.watch("r", t0)
	b.Every, b.ExpiresAt, b.Standing = store.Duration(5*time.Second), nil, true
	for _, w := range []store.Watch{a, b, c} {
		if err := e.b.Create(e.ctx, w); err != nil {
			e.Fatal(err)
		}
	}
	if err := e.b.CarryBaseline(e.ctx, b.ID, []byte(`{}`), 7, ""); err != nil {
		e.Fatal(err)
	}
	next := t0.Add(10 * time.Minute)
	if err := e.b.SetNextCheck(e.ctx, a.ID, next); err != nil {
		e.Fatal(err)
	}
	if _, err := e.b.Settle(e.ctx, c.ID, store.Settlement{State: store.Fired, Receipt: store.ReceiptUnknown, SettledAt: t0}); err != nil {
		e.Fatal(err)
	}
	got := map[store.ID]store.Schedule{}
	held, err := e.b.ForEachPending(e.ctx, func(sc store.Schedule) error {
		if _, dup := got[sc.ID]; dup {
			e.Fatalf("%s seen twice", sc.ID)
		}
		got[sc.ID] = sc
		return nil
	})
	if err != nil || held != 0 || len(got) != 2 {
		e.Fatalf("%d schedules, %d held, %v; want the 2 pending rows", len(got), held, err)
	}
	if sa := got[a.ID]; sa.Every != time.Minute || !sa.Expires.Equal(*a.ExpiresAt) || sa.Attempts != 0 || !sa.Next.Equal(next) {
		e.Fatalf("a: %+v", sa)
	}
	if sb := got[b.ID]; sb.Every != 5*time.Second || !sb.Expires.IsZero() || sb.Attempts != 7 || !sb.Next.IsZero() {
		e.Fatalf("b: %+v", sb)
	}
	stop := errors.New("stop")
	if _, err := e.b.ForEachPending(e.ctx, func(store.Schedule) error { return stop }); !errors.Is(err, stop) {
		e.Fatalf("fn's error: %v, want it returned", err)
	}
}

// A pushed watch is found by its subject while it is pending, and no
// longer once it settles; a subject is matched whole.
func testPendingBySubject(e *env) {
	a, b, other := e.watch("agent-1", t0), e.watch("agent-2", t0), e.watch("agent-1", t0)
	a.Subject, b.Subject, other.Subject = "work/1", "work/1", "work/10"
	for _, w := range []store.Watch{a, b, other, e.watch("agent-3", t0)} {
		if err := e.b.Create(e.ctx, w); err != nil {
			e.Fatal(err)
		}
	}
	got, err := e.b.PendingBySubject(e.ctx, "work/1")
	if err != nil || len(got) != 2 || !slices.Contains(got, a.ID) || !slices.Contains(got, b.ID) {
		e.Fatalf("work/1: %v %v", got, err)
	}
	if _, err := e.b.Settle(e.ctx, a.ID, store.Settlement{State: store.Fired, Receipt: store.ReceiptUnknown, SettledAt: t0}); err != nil {
		e.Fatal(err)
	}
	if got, _ := e.b.PendingBySubject(e.ctx, "work/1"); len(got) != 1 || got[0] != b.ID {
		e.Fatalf("after settling one: %v", got)
	}
	if got, _ := e.b.PendingBySubject(e.ctx, "work/"); len(got) != 0 {
		e.Fatalf("a prefix of a subject matched: %v", got)
	}
}

// A watch with a partition key is found by its kind and key while it is
// pending (the index is written with the pending entry, in the same
// transaction), and no longer once it settles; a key is matched whole, and
// only among its kind's watches.
func testPendingByKey(e *env) {
	const sha = "https://api.github.com/repos/o/r/commits/0123456789abcdef0123456789abcdef01234567"
	a, b, other, otherKind := e.watch("agent-1", t0), e.watch("agent-2", t0), e.watch("agent-1", t0), e.watch("agent-1", t0)
	a.Kind, b.Kind, other.Kind, otherKind.Kind = "ci", "ci", "ci", "http"
	a.PartitionKey, b.PartitionKey, other.PartitionKey, otherKind.PartitionKey = sha, sha, sha[:len(sha)-1], sha
	for _, w := range []store.Watch{a, b, other, otherKind, e.watch("agent-3", t0)} {
		if err := e.b.Create(e.ctx, w); err != nil {
			e.Fatal(err)
		}
	}
	got, err := e.b.PendingByKey(e.ctx, "ci", []string{sha, sha, "https://nothing"})
	if err != nil || len(got) != 2 || !slices.Contains(got, a.ID) || !slices.Contains(got, b.ID) {
		e.Fatalf("ci %s: %v %v, want %s and %s once each", sha, got, err, a.ID, b.ID)
	}
	if got, _ := e.b.PendingByKey(e.ctx, "http", []string{sha}); len(got) != 1 || got[0] != otherKind.ID {
		e.Fatalf("http: %v", got)
	}
	if rows, _, err := e.b.List(e.ctx, store.Filter{Recipient: "agent-1"}); err != nil || !slices.ContainsFunc(rows, func(w store.Watch) bool { return w.ID == a.ID && w.PartitionKey == sha }) {
		e.Fatalf("the row does not keep its key: %v %v", rows, err)
	}
	if _, err := e.b.Settle(e.ctx, a.ID, store.Settlement{State: store.Fired, Receipt: store.ReceiptUnknown, SettledAt: t0}); err != nil {
		e.Fatal(err)
	}
	if got, _ := e.b.PendingByKey(e.ctx, "ci", []string{sha}); len(got) != 1 || got[0] != b.ID {
		e.Fatalf("after settling one: %v", got)
	}
	if _, err := e.b.Settle(e.ctx, b.ID, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0}); err != nil {
		e.Fatal(err)
	}
	if got, _ := e.b.PendingByKey(e.ctx, "ci", []string{sha}); len(got) != 0 {
		e.Fatalf("after settling both: %v", got)
	}
}

// List filters by recipient (whole ids: one that is a prefix of another
// lists only its own rows), state, kind and who registered, oldest first.
func testListFilters(e *env) {
	var alice []store.Watch
	for i := range 5 {
		alice = append(alice, e.created("alice", t0.Add(time.Duration(i)*time.Second)))
	}
	e.created("bob", t0)
	e.created("alice2", t0)
	other := e.watch("bob", t0)
	other.Kind, other.RegisteredBy = "github.pr", "ops"
	if err := e.b.Create(e.ctx, other); err != nil {
		e.Fatal(err)
	}
	if _, err := e.b.Settle(e.ctx, alice[1].ID, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0}); err != nil {
		e.Fatal(err)
	}
	got, held, err := e.b.List(e.ctx, store.Filter{Recipient: "alice"})
	if err != nil || held != 0 || len(got) != 5 {
		e.Fatalf("alice: %d rows, %d held, %v", len(got), held, err)
	}
	for i := range got {
		if got[i].ID != alice[i].ID {
			e.Fatalf("alice's rows are not oldest first at %d", i)
		}
	}
	for name, c := range map[string]struct {
		f    store.Filter
		want int
	}{
		"alice pending": {store.Filter{Recipient: "alice", State: store.Pending}, 4},
		"pending":       {store.Filter{State: store.Pending}, 7},
		"cancelled":     {store.Filter{State: store.Cancelled}, 1},
		"all":           {store.Filter{}, 8},
		"kind":          {store.Filter{Kind: "github.pr"}, 1},
		"bob timers":    {store.Filter{Recipient: "bob", Kind: "timer"}, 1},
		"registered":    {store.Filter{RegisteredBy: "ops"}, 1},
		"nobody":        {store.Filter{Recipient: "ali"}, 0},
	} {
		if got := e.list(c.f); len(got) != c.want {
			e.Fatalf("%s: %d rows, want %d", name, len(got), c.want)
		}
	}
	n := 0
	if _, err := e.b.ForEach(e.ctx, store.Filter{Recipient: "alice", State: store.Pending}, func(store.Watch) error { n++; return nil }); err != nil || n != 4 {
		e.Fatalf("ForEach alice pending: %d, %v", n, err)
	}
}

// ListPage walks the rows oldest first from a cursor: following Next
// page by page gives exactly List's rows, once each, and the last page's
// Next is zero; any id is a position; a limit below 1 is refused.
func testListPage(e *env) {
	var all []store.Watch
	for i := range 23 {
		rid := []string{"a", "b", "ab"}[i%3]
		w := e.created(rid, t0.Add(time.Duration(i)*time.Millisecond))
		if i%4 == 0 {
			if _, err := e.b.Settle(e.ctx, w.ID, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0}); err != nil {
				e.Fatal(err)
			}
		}
		all = append(all, w)
	}
	for name, f := range map[string]store.Filter{
		"all": {}, "recipient": {Recipient: "a"}, "state": {State: store.Pending},
		"recipient and state": {Recipient: "ab", State: store.Cancelled}, "kind": {Kind: "timer"},
	} {
		want := e.list(f)
		var got []store.Watch
		after, pages := store.ID{}, 0
		for {
			p, err := e.b.ListPage(e.ctx, store.Query{Filter: f, After: after, Limit: 4})
			if err != nil {
				e.Fatalf("%s: %v", name, err)
			}
			if len(p.Watches) > 4 {
				e.Fatalf("%s: a page of %d rows, limit 4", name, len(p.Watches))
			}
			got = append(got, p.Watches...)
			if pages++; pages > 100 {
				e.Fatalf("%s: the cursor does not move", name)
			}
			if p.Next == (store.ID{}) {
				break
			}
			after = p.Next
		}
		if len(got) != len(want) {
			e.Fatalf("%s: the pages hold %d rows, List %d", name, len(got), len(want))
		}
		for i := range got {
			if got[i].ID != want[i].ID {
				e.Fatalf("%s: row %d is %s in the pages, %s in List", name, i, got[i].ID, want[i].ID)
			}
		}
	}
	// Any id is a position: after the 10th row's id come the rows after it.
	p, err := e.b.ListPage(e.ctx, store.Query{After: all[9].ID, Limit: 1})
	if err != nil || len(p.Watches) != 1 || p.Watches[0].ID != all[10].ID {
		e.Fatalf("after row 9: %+v %v", p.Watches, err)
	}
	// Match keeps what it accepts.
	p, err = e.b.ListPage(e.ctx, store.Query{Limit: 100, Match: func(w store.Watch) bool { return w.ID == all[5].ID }})
	if err != nil || len(p.Watches) != 1 || p.Watches[0].ID != all[5].ID {
		e.Fatalf("Match: %+v %v", p.Watches, err)
	}
	if _, err := e.b.ListPage(e.ctx, store.Query{Limit: 0}); err == nil {
		e.Fatal("a page of limit 0")
	}
}

// CountByState counts every readable row by state; CountPending a
// recipient's pending rows, at least upTo when it stops there.
func testCounts(e *env) {
	for range 3 {
		e.created("a", t0)
	}
	w := e.created("a", t0)
	e.created("ab", t0)
	if _, err := e.b.Settle(e.ctx, w.ID, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0}); err != nil {
		e.Fatal(err)
	}
	byState, err := e.b.CountByState(e.ctx)
	if err != nil || byState[store.Pending] != 4 || byState[store.Cancelled] != 1 {
		e.Fatalf("CountByState: %v %v", byState, err)
	}
	if n, err := e.b.CountPending(e.ctx, "a", 0); err != nil || n != 3 {
		e.Fatalf("CountPending(a): %d %v, want 3", n, err)
	}
	if n, err := e.b.CountPending(e.ctx, "a", 2); err != nil || n < 2 {
		e.Fatalf("CountPending(a, up to 2): %d %v, want at least 2", n, err)
	}
	if n, err := e.b.CountPending(e.ctx, "nobody", 0); err != nil || n != 0 {
		e.Fatalf("CountPending(nobody): %d %v", n, err)
	}
}

// CountPendingByKind counts the pending rows by kind: a registration
// (Create, CreateIfRunning) adds one to its kind, every way out of
// pending (Settle, a cancel, SettleAndMail, SettleAndMail to a recipient
// that stopped) takes it away, a carried baseline leaves it, a kind with
// none pending is absent, a held-aside row is not counted, and the counts
// are the same after a reopen.
func testPendingByKind(e *env) {
	e.running("a", "http://127.0.0.1:1/hook")
	e.running("b", "")
	of := func(kind, recipient string) store.Watch {
		e.Helper()
		w := e.watch(recipient, t0)
		w.Kind = kind
		return w
	}
	want := map[string]int{}
	check := func(at string) {
		e.Helper()
		got, err := e.b.CountPendingByKind(e.ctx)
		if err != nil {
			e.Fatalf("%s: %v", at, err)
		}
		for k, n := range want {
			if n == 0 {
				delete(want, k)
			}
		}
		if len(got) != len(want) {
			e.Fatalf("%s: CountPendingByKind %v, want %v", at, got, want)
		}
		for k, n := range want {
			if got[k] != n {
				e.Fatalf("%s: CountPendingByKind %v, want %v", at, got, want)
			}
		}
	}
	check("empty")
	var timers, prs []store.Watch
	for range 3 {
		w := of("timer", "a")
		if err := e.b.Create(e.ctx, w); err != nil {
			e.Fatal(err)
		}
		timers = append(timers, w)
	}
	for range 3 {
		w := of("github_pr", "b")
		if err := e.b.CreateIfRunning(e.ctx, w, 0); err != nil {
			e.Fatal(err)
		}
		prs = append(prs, w)
	}
	settled := of("url_up", "a")
	settled.State, settled.Receipt = store.Fired, store.ReceiptDelivered
	at := t0
	settled.SettledAt = &at
	if err := e.b.Create(e.ctx, settled); err != nil {
		e.Fatal(err)
	}
	want["timer"], want["github_pr"] = 3, 3
	check("created")

	if _, err := e.b.Settle(e.ctx, timers[0].ID, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0}); err != nil {
		e.Fatal(err)
	}
	want["timer"]--
	check("cancelled")
	if _, err := e.b.Settle(e.ctx, timers[1].ID, store.Settlement{State: store.Expired, Receipt: store.ReceiptUnknown, SettledAt: t0}); err != nil {
		e.Fatal(err)
	}
	want["timer"]--
	check("settled")
	m := e.fired()
	if _, _, err := e.b.SettleAndMail(e.ctx, timers[2].ID, store.Settlement{State: store.Fired, Outcome: &m.Outcome, SettledAt: t0}, m); err != nil {
		e.Fatal(err)
	}
	want["timer"]--
	check("settled and mailed")
	if _, err := e.b.CarryAndMail(e.ctx, prs[0].ID, json.RawMessage(`{"sha":"1"}`), 1, "seen", nil); err != nil {
		e.Fatal(err)
	}
	check("carried")
	e.setStatus("b", store.StatusPaused)
	m = e.fired()
	if _, _, err := e.b.SettleAndMail(e.ctx, prs[1].ID, store.Settlement{State: store.Fired, Outcome: &m.Outcome, SettledAt: t0}, m); err != nil {
		e.Fatal(err)
	}
	want["github_pr"]--
	check("settled undeliverable")
	// A refused transition moves nothing.
	if _, err := e.b.Settle(e.ctx, timers[0].ID, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0}); !errors.Is(err, store.ErrNotPending) {
		e.Fatalf("a second cancel: %v, want ErrNotPending", err)
	}
	check("refused")

	if e.o.HoldAside != nil && e.o.StillHeld != nil {
		e.o.HoldAside(e.T, e.b, of("timer", "a"))
		check("held aside")
	} else {
		e.Log("the backend gives no HoldAside hook: a held-aside row's count is not checked")
	}
	e.reopen()
	check("reopened")
	w := of("timer", "a")
	if err := e.b.Create(e.ctx, w); err != nil {
		e.Fatal(err)
	}
	want["timer"]++
	check("created after the reopen")
}

// CountPending follows every way in and out of a recipient's pending
// rows exactly, as the registration bound needs it: a registration
// (Create, CreateIfRunning, concurrent ones too) adds one, every way out
// of pending (a cancel, an expiry, SettleAndMail, SettleAndMail to a
// recipient that stopped, concurrent cancels) takes one away, a carried
// baseline and a refused transition move nothing, another recipient's
// rows are not counted, upTo stops it no lower than upTo, and the count
// is the same after a reopen.
func testPendingCount(e *env) {
	e.running("a", "http://127.0.0.1:1/hook")
	e.running("b", "")
	e.running("c", "")
	want := map[string]int{}
	check := func(at string) {
		e.Helper()
		for _, r := range []string{"a", "b", "c", "nobody"} {
			n, err := e.b.CountPending(e.ctx, r, 0)
			if err != nil || n != want[r] {
				e.Fatalf("%s: CountPending(%s) %d %v, want %d", at, r, n, err, want[r])
			}
			if want[r] > 1 {
				if n, err := e.b.CountPending(e.ctx, r, want[r]-1); err != nil || n < want[r]-1 {
					e.Fatalf("%s: CountPending(%s, up to %d) %d %v", at, r, want[r]-1, n, err)
				}
			}
		}
	}
	check("empty")
	var as, bs []store.Watch
	for range 3 {
		w := e.watch("a", t0)
		if err := e.b.Create(e.ctx, w); err != nil {
			e.Fatal(err)
		}
		as = append(as, w)
		w = e.watch("b", t0)
		if err := e.b.CreateIfRunning(e.ctx, w, 0); err != nil {
			e.Fatal(err)
		}
		bs = append(bs, w)
	}
	settled := e.watch("a", t0)
	settled.State, settled.Receipt = store.Fired, store.ReceiptDelivered
	at := t0
	settled.SettledAt = &at
	if err := e.b.Create(e.ctx, settled); err != nil {
		e.Fatal(err)
	}
	want["a"], want["b"] = 3, 3
	check("created")

	if _, err := e.b.Settle(e.ctx, as[0].ID, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0}); err != nil {
		e.Fatal(err)
	}
	want["a"]--
	check("cancelled")
	if _, err := e.b.Settle(e.ctx, as[1].ID, store.Settlement{State: store.Expired, Receipt: store.ReceiptUnknown, SettledAt: t0}); err != nil {
		e.Fatal(err)
	}
	want["a"]--
	check("expired")
	m := e.fired()
	if _, _, err := e.b.SettleAndMail(e.ctx, as[2].ID, store.Settlement{State: store.Fired, Outcome: &m.Outcome, SettledAt: t0}, m); err != nil {
		e.Fatal(err)
	}
	want["a"]--
	check("settled and mailed")
	if _, err := e.b.CarryAndMail(e.ctx, bs[0].ID, json.RawMessage(`{"sha":"1"}`), 1, "seen", nil); err != nil {
		e.Fatal(err)
	}
	check("carried")
	e.setStatus("b", store.StatusPaused)
	m = e.fired()
	if _, _, err := e.b.SettleAndMail(e.ctx, bs[1].ID, store.Settlement{State: store.Fired, Outcome: &m.Outcome, SettledAt: t0}, m); err != nil {
		e.Fatal(err)
	}
	want["b"]--
	check("settled undeliverable")
	if _, err := e.b.Settle(e.ctx, as[0].ID, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0}); !errors.Is(err, store.ErrNotPending) {
		e.Fatalf("a second cancel: %v, want ErrNotPending", err)
	}
	if err := e.b.CreateIfRunning(e.ctx, e.watch("b", t0), 0); err == nil {
		e.Fatal("a registration for a paused recipient landed")
	}
	check("refused")

	// Concurrent registrations and cancels for one recipient.
	const burst = 6
	cs := make([]store.Watch, burst)
	for i := range cs {
		cs[i] = e.watch("c", t0)
	}
	var wg sync.WaitGroup
	errs := make(chan error, burst)
	for _, w := range cs {
		wg.Go(func() { errs <- e.b.CreateIfRunning(e.ctx, w, 0) })
	}
	wg.Wait()
	for range burst {
		if err := <-errs; err != nil {
			e.Fatal(err)
		}
	}
	want["c"] = burst
	check("a burst of registrations")
	for _, w := range cs[:burst/2] {
		wg.Go(func() {
			_, err := e.b.Settle(e.ctx, w.ID, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0})
			errs <- err
		})
	}
	wg.Wait()
	for range burst / 2 {
		if err := <-errs; err != nil {
			e.Fatal(err)
		}
	}
	want["c"] -= burst / 2
	check("a burst of cancels")

	e.reopen()
	check("reopened")
	if err := e.b.Create(e.ctx, e.watch("a", t0)); err != nil {
		e.Fatal(err)
	}
	want["a"]++
	check("created after the reopen")
}
