package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigilhq/vigil/store"
)

func idemCases() []testCase {
	return []testCase{
		{"KeyedCreateWritesOnce", testIdemCreate},
		{"EveryKeyedWriteAnswersOnce", testIdemEachWrite},
		{"ConcurrentKeyedWritesMakeOne", testIdemConcurrent},
		{"RefusedWriteKeepsNoKey", testIdemRefused},
		{"DuplicateEventKeepsNoKey", testIdemDuplicateEvent},
		{"OnlyTheNamedWritesKeepKeys", testIdemOnlyNamed},
		{"KeysRetainedAndPruned", testIdemRetention},
		{"KeysSurviveReopen", testIdemReopen},
		{"LargeAnswersKeptWithinTheBound", testIdemLargeAnswer},
	}
}

// keyed is ctx carrying an idempotency key of principal for the request
// req (its fingerprint) at at, whose answer is the written value as JSON
// with status 201.
func (e *env) keyed(principal, key, req string, at time.Time) (context.Context, *store.Idem) {
	i := &store.Idem{
		Principal: principal, Key: key, Fingerprint: store.FingerprintOf("POST", "/x", []byte(req)), At: at,
		Answer: func(v any) (store.Answer, error) {
			b, err := json.Marshal(v)
			return store.Answer{Status: 201, Location: "/x/1", Body: b}, err
		},
	}
	return store.WithIdem(e.ctx, i), i
}

// replayed fails unless err is a *store.Replay answering want's record.
func (e *env) replayed(what string, err error, want store.IdemRecord) {
	e.Helper()
	var rp *store.Replay
	if !errors.As(err, &rp) {
		e.Fatalf("%s again under its key: %v, want a *store.Replay", what, err)
	}
	if rp.Record.Answer.Status != want.Answer.Status || string(rp.Record.Answer.Body) != string(want.Answer.Body) ||
		rp.Record.Answer.Location != want.Answer.Location || rp.Record.Fingerprint != want.Fingerprint || !rp.Record.At.Equal(want.At) {
		e.Fatalf("%s replayed %+v, want the first answer %+v", what, rp.Record, want)
	}
}

func (e *env) idem(principal, key string) store.IdemRecord {
	e.Helper()
	r, err := e.b.GetIdem(e.ctx, principal, key)
	if err != nil {
		e.Fatalf("the record of key %q of %s: %v", key, principal, err)
	}
	return r
}

func (e *env) noIdem(principal, key string) {
	e.Helper()
	if r, err := e.b.GetIdem(e.ctx, principal, key); !errors.Is(err, store.ErrNotFound) {
		e.Fatalf("key %q of %s: %+v %v, want ErrNotFound", key, principal, r, err)
	}
}

// A registration under a key keeps the key's record (the answer rendered
// from the row written) in its transaction; the same request under the
// key again writes nothing and is answered that record; another request
// under the key is ErrIdemReused and writes nothing; another principal's
// key of the same name is its own.
func testIdemCreate(e *env) {
	e.running("a", "")
	ctx, _ := e.keyed("p", "k1", "req-1", t0)
	w1 := e.watch("a", t0)
	if err := e.b.CreateIfRunning(ctx, w1, 0); err != nil {
		e.Fatal(err)
	}
	rec := e.idem("p", "k1")
	want, _ := json.Marshal(w1)
	if rec.Answer.Status != 201 || string(rec.Answer.Body) != string(want) || rec.Answer.Location != "/x/1" ||
		rec.Principal != "p" || rec.Key != "k1" || !rec.At.Equal(t0) || rec.Fingerprint != store.FingerprintOf("POST", "/x", []byte("req-1")) {
		e.Fatalf("record %+v, want the answer of %s", rec, want)
	}
	w2 := e.watch("a", t0)
	e.replayed("a registration", e.b.CreateIfRunning(ctx, w2, 0), rec)
	e.replayed("a registration through Create", e.b.Create(ctx, w2), rec)
	if _, err := e.b.Get(e.ctx, w2.ID); !errors.Is(err, store.ErrNotFound) {
		e.Fatalf("the repeat's row: %v, want none", err)
	}
	if n, err := e.b.CountPending(e.ctx, "a", 0); err != nil || n != 1 {
		e.Fatalf("pending of a: %d %v, want 1", n, err)
	}

	other, _ := e.keyed("p", "k1", "req-2", t0)
	w3 := e.watch("a", t0)
	if err := e.b.CreateIfRunning(other, w3, 0); !errors.Is(err, store.ErrIdemReused) {
		e.Fatalf("another request under the key: %v, want ErrIdemReused", err)
	}
	if _, err := e.b.Get(e.ctx, w3.ID); !errors.Is(err, store.ErrNotFound) {
		e.Fatalf("the refused request's row: %v, want none", err)
	}
	if got := e.idem("p", "k1"); string(got.Answer.Body) != string(want) {
		e.Fatalf("the refused request changed the record: %+v", got)
	}

	q, _ := e.keyed("q", "k1", "req-1", t0)
	w4 := e.watch("a", t0)
	if err := e.b.CreateIfRunning(q, w4, 0); err != nil {
		e.Fatalf("another principal's key of the same name: %v", err)
	}
	if _, err := e.b.Get(e.ctx, w4.ID); err != nil {
		e.Fatal(err)
	}
	// Create keeps a key too (a scheduler without recipients).
	c, _ := e.keyed("p", "k2", "req-3", t0)
	w5 := e.watch("a", t0)
	if err := e.b.Create(c, w5); err != nil {
		e.Fatal(err)
	}
	e.replayed("a Create", e.b.Create(c, e.watch("a", t0)), e.idem("p", "k2"))
}

// Each write a creating route makes keeps its key, and answers a repeat
// under it with the first answer before anything else it checks (a
// completed Work, an event already there): the repeat changes nothing.
func testIdemEachWrite(e *env) {
	e.running("a", "")
	_, w, _ := e.routeOne(e.workStep(1, "T", "x"))
	ev := store.Event{Stream: "observe", Key: "i1", Type: "recorded", OccurredAt: t0, Payload: json.RawMessage(`{"item":"1"}`)}
	steps := []struct {
		name  string
		do    func(ctx context.Context) (any, error)
		check func()
	}{
		{"AppendEvent", func(ctx context.Context) (any, error) {
			out, dup, err := e.b.AppendEvent(ctx, ev)
			if err == nil && dup {
				err = errors.New("answered duplicate")
			}
			ev.Key = "i2" // the repeat would be a new event: still the first answer
			return out, err
		}, func() {
			evs, err := e.b.ReadEvents(e.ctx, "observe", 0, 10)
			if err != nil || len(evs) != 1 {
				e.Fatalf("events after the repeat: %v %v, want one", evs, err)
			}
		}},
		{"ClaimWork", func(ctx context.Context) (any, error) {
			return e.b.ClaimWork(ctx, w.ID, "a", t0)
		}, nil},
		{"CompleteWorkAs", func(ctx context.Context) (any, error) {
			return e.b.CompleteWorkAs(ctx, w.ID, t0, "a")
		}, nil},
		{"ReportPhase", func(ctx context.Context) (any, error) {
			return e.b.ReportPhase(ctx, "a", store.Phase{Name: "build", Text: "first", ReportedBy: "a", ReportedAt: t0})
		}, func() {
			r, _ := e.b.GetRecipient(e.ctx, "a")
			if r.Phase == nil || r.Phase.Text != "first" {
				e.Fatalf("phase after the repeat: %+v", r.Phase)
			}
		}},
		{"ReportActivity", func(ctx context.Context) (any, error) {
			return e.b.ReportActivity(ctx, "a", 1, 2, t0)
		}, func() {
			r, _ := e.b.GetRecipient(e.ctx, "a")
			if r.Activity.Replies != 1 || r.Activity.ToolCalls != 2 {
				e.Fatalf("activity after the repeat: %+v", r.Activity)
			}
		}},
	}
	for i, st := range steps {
		key := fmt.Sprintf("k%d", i)
		ctx, _ := e.keyed("p", key, st.name, t0)
		got, err := st.do(ctx)
		if err != nil {
			e.Fatalf("%s under a key: %v", st.name, err)
		}
		want, _ := json.Marshal(got)
		rec := e.idem("p", key)
		if string(rec.Answer.Body) != string(want) {
			e.Fatalf("%s kept the answer %s, want %s (what it wrote)", st.name, rec.Answer.Body, want)
		}
		_, err = st.do(ctx)
		e.replayed(st.name, err, rec)
		if st.check != nil {
			st.check()
		}
	}
}

// Writes under one key at once: exactly one commits, every other is
// answered its record, and one row is written. Each is for a recipient
// of its own, so nothing but the key is shared (no lock a backend holds
// per recipient orders them).
func testIdemConcurrent(e *env) {
	ctx, idem := e.keyed("p", "k", "req", t0)
	const n = 8
	// The answer is rendered inside each write's transaction, after its
	// key was checked and before it commits. The first n renderings wait
	// for one another, so every write has found the key free; then the
	// first to render commits, and the others commit only once it has
	// returned: only the commit's condition on the key (what the
	// transaction read) can refuse them. A bound keeps a backend that
	// orders the writes anyway from hanging.
	var arrived atomic.Int32
	all, firstDone := make(chan struct{}), make(chan struct{})
	var first atomic.Value
	wait := func(ch chan struct{}) {
		select {
		case <-ch:
		case <-time.After(2 * time.Second):
		}
	}
	render := idem.Answer
	idem.Answer = func(v any) (store.Answer, error) {
		k := arrived.Add(1)
		if k == 1 {
			first.Store(v.(store.Watch).ID)
		}
		if k == n {
			close(all)
		}
		if k <= n {
			wait(all)
			if k > 1 {
				wait(firstDone)
			}
		}
		return render(v)
	}
	ws := make([]store.Watch, n)
	for i := range ws {
		r := fmt.Sprintf("a%d", i)
		e.running(r, "")
		ws[i] = e.watch(r, t0)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = e.b.CreateIfRunning(ctx, ws[i], 0)
			if id, _ := first.Load().(store.ID); id == ws[i].ID {
				close(firstDone)
			}
		})
	}
	wg.Wait()
	if arrived.Load() < n {
		e.Fatalf("%d writes rendered an answer, want every one of %d", arrived.Load(), n)
	}
	won := -1
	for i, err := range errs {
		var rp *store.Replay
		switch {
		case err == nil && won >= 0:
			e.Fatalf("writes %d and %d under one key both committed", won, i)
		case err == nil:
			won = i
		case errors.Is(err, store.ErrBusy):
			// Lost the race more times than the backend retries: nothing
			// written, as ErrBusy says.
		case !errors.As(err, &rp):
			e.Fatalf("write %d: %v, want a *store.Replay", i, err)
		}
	}
	if won < 0 {
		e.Fatal("no write under the key committed")
	}
	rows := e.list(store.Filter{State: store.Pending})
	if len(rows) != 1 || rows[0].ID != ws[won].ID {
		e.Fatalf("rows %v, want only the winner's %s", rows, ws[won].ID)
	}
	want, _ := json.Marshal(ws[won])
	if rec := e.idem("p", "k"); string(rec.Answer.Body) != string(want) {
		e.Fatalf("the key answers %s, want the winner's %s", rec.Answer.Body, want)
	}
}

// A write that is refused keeps no key: the request may come again and
// be written once it can be.
func testIdemRefused(e *env) {
	e.running("a", "")
	e.setStatus("a", store.StatusPaused)
	ctx, _ := e.keyed("p", "k", "req", t0)
	var nr *store.NotRunningError
	if err := e.b.CreateIfRunning(ctx, e.watch("a", t0), 0); !errors.As(err, &nr) {
		e.Fatalf("a keyed registration for a paused recipient: %v, want *store.NotRunningError", err)
	}
	e.noIdem("p", "k")
	e.setStatus("a", store.StatusRunning)
	if err := e.b.CreateIfRunning(ctx, e.watch("a", t0), 0); err != nil {
		e.Fatalf("the same request once the recipient runs: %v", err)
	}
	e.idem("p", "k")
}

// A keyed append of an event already there writes nothing, so keeps no
// key: the answer is the duplicate's, and so is a repeat's.
func testIdemDuplicateEvent(e *env) {
	ev := store.Event{Stream: "observe", Key: "i1", Type: "recorded", OccurredAt: t0, Payload: json.RawMessage(`{"item":"1"}`)}
	if _, _, err := e.b.AppendEvent(e.ctx, ev); err != nil {
		e.Fatal(err)
	}
	ctx, _ := e.keyed("p", "k", "req", t0)
	if _, dup, err := e.b.AppendEvent(ctx, ev); err != nil || !dup {
		e.Fatalf("a keyed repeat of an event: dup %v %v, want a duplicate", dup, err)
	}
	e.noIdem("p", "k")
}

// Only the writes of the creating routes keep a key: any other write
// made with a context that carries one (a settlement, a mailbox append,
// a recipient's reminder or record, the Work's other transitions) keeps
// nothing and is not refused by it.
func testIdemOnlyNamed(e *env) {
	e.running("a", "")
	ctx, _ := e.keyed("p", "k", "req", t0)
	w := e.created("a", t0)
	m := e.fired()
	if _, _, err := e.b.SettleAndMail(ctx, w.ID, store.Settlement{State: store.Fired, Outcome: &m.Outcome, SettledAt: t0}, m); err != nil {
		e.Fatal(err)
	}
	if _, _, err := e.b.AppendIfRunning(ctx, "a", e.fired()); err != nil {
		e.Fatal(err)
	}
	if _, err := e.b.SetReminder(ctx, "a", time.Hour); err != nil {
		e.Fatal(err)
	}
	if _, err := e.b.EnsureRecipient(ctx, "b", t0); err != nil {
		e.Fatal(err)
	}
	_, wk, _ := e.routeOne(e.workStep(1, "T", "x"))
	if _, err := e.b.ConsumeWork(ctx, wk.ID, "a", 1); err != nil {
		e.Fatal(err)
	}
	if _, err := e.b.CompleteWork(ctx, wk.ID, t0); err != nil {
		e.Fatal(err)
	}
	e.noIdem("p", "k")
}

// Keys are a retained class ordered by when their request came: Oldest
// reads the oldest, OnRetained tells of each, PruneOldest deletes those
// before a cutoff (after which the key is free again), never a later one.
func testIdemRetention(e *env) {
	e.running("a", "")
	if _, ok := e.oldest(store.RetainedIdem); ok {
		e.Fatal("an oldest key in an empty store")
	}
	var mu sync.Mutex
	var told []time.Time
	e.b.OnRetained(func(c store.Retained, at time.Time) {
		if c == store.RetainedIdem {
			mu.Lock()
			told = append(told, at)
			mu.Unlock()
		}
	})
	late, _ := e.keyed("p", "late", "req", t0.Add(2*time.Hour))
	if err := e.b.CreateIfRunning(late, e.watch("a", t0), 0); err != nil {
		e.Fatal(err)
	}
	early, _ := e.keyed("p", "early", "req", t0)
	if err := e.b.CreateIfRunning(early, e.watch("a", t0), 0); err != nil {
		e.Fatal(err)
	}
	e.b.OnRetained(nil)
	mu.Lock()
	if len(told) != 2 || !told[0].Equal(t0.Add(2*time.Hour)) || !told[1].Equal(t0) {
		e.Fatalf("told %v, want the two keys' times", told)
	}
	mu.Unlock()
	if at, ok := e.oldest(store.RetainedIdem); !ok || !at.Equal(t0) {
		e.Fatalf("oldest key %v %v, want %v", at, ok, t0)
	}
	if n, err := e.b.PruneOldest(e.ctx, store.RetainedIdem, t0.Add(time.Hour), 10); err != nil || n != 1 {
		e.Fatalf("prune before +1h: %d %v, want 1", n, err)
	}
	e.noIdem("p", "early")
	e.idem("p", "late")
	if at, ok := e.oldest(store.RetainedIdem); !ok || !at.Equal(t0.Add(2*time.Hour)) {
		e.Fatalf("oldest key after the prune %v %v", at, ok)
	}
	// A pruned key names nothing: the request under it is written anew.
	if err := e.b.CreateIfRunning(early, e.watch("a", t0), 0); err != nil {
		e.Fatalf("a request under a pruned key: %v", err)
	}
	if n := len(e.list(store.Filter{Recipient: "a"})); n != 3 {
		e.Fatalf("%d rows, want 3", n)
	}
}

// A key's record survives a restart.
func testIdemReopen(e *env) {
	e.running("a", "")
	ctx, _ := e.keyed("p", "k", "req", t0)
	if err := e.b.CreateIfRunning(ctx, e.watch("a", t0), 0); err != nil {
		e.Fatal(err)
	}
	rec := e.idem("p", "k")
	e.reopen()
	e.replayed("a registration after a reopen", e.b.CreateIfRunning(ctx, e.watch("a", t0), 0), rec)
}

// A keyed write's answer is kept within the store's bound on a value
// (Store.MaxValue), whatever its size, and the write commits: a JSON
// answer of three quarters of the bound (whose base64 was over what a
// JetStream message holds) is kept whole, byte for byte; one over the
// bound is kept without its body (Answer.Unkept says its size), and the
// same request again is a Replay of that record, writing nothing.
func testIdemLargeAnswer(e *env) {
	e.running("a", "")
	_, w, _ := e.routeOne(e.workStep(1, "T", "x"))
	limit := e.b.MaxValue()
	for _, tc := range []struct {
		name string
		size int
		kept bool
	}{
		{"three quarters of the bound", limit / 4 * 3, true},
		{"over the bound", limit + 1, false},
	} {
		body, err := json.Marshal(map[string]string{"text": strings.Repeat("x", tc.size)})
		if err != nil {
			e.Fatal(err)
		}
		key := "large-" + strconv.Itoa(tc.size)
		i := &store.Idem{
			Principal: "p", Key: key, Fingerprint: store.FingerprintOf("POST", "/claim", []byte(key)), At: t0,
			Answer: func(any) (store.Answer, error) { return store.Answer{Status: 200, Body: body}, nil },
		}
		ctx := store.WithIdem(e.ctx, i)
		if _, err := e.b.ClaimWork(ctx, w.ID, "a", t0); err != nil {
			e.Fatalf("%s: a claim whose answer is %d bytes: %v, want it made", tc.name, len(body), err)
		}
		rec := e.idem("p", key)
		switch {
		case tc.kept && (string(rec.Answer.Body) != string(body) || rec.Answer.Unkept != 0):
			e.Fatalf("%s: kept %d bytes of the answer (unkept %d), want its %d bytes", tc.name, len(rec.Answer.Body), rec.Answer.Unkept, len(body))
		case !tc.kept && (len(rec.Answer.Body) != 0 || rec.Answer.Unkept != len(body) || rec.Answer.Status != 200):
			e.Fatalf("%s: kept %d bytes of the answer (unkept %d, status %d), want status 200, no body, unkept %d", tc.name, len(rec.Answer.Body), rec.Answer.Unkept, rec.Answer.Status, len(body))
		}
		_, err = e.b.ClaimWork(ctx, w.ID, "a", t0)
		var rp *store.Replay
		if !errors.As(err, &rp) || rp.Record.Answer.Unkept != rec.Answer.Unkept || string(rp.Record.Answer.Body) != string(rec.Answer.Body) {
			e.Fatalf("%s: the claim again under its key: %v, want a Replay of its record", tc.name, err)
		}
	}
}
