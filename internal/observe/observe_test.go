package observe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/hosttest"

	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/store"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

type rig struct {
	t     *testing.T
	clock *fakeclock.Clock
	stack *apitest.Stack
	ob    *Observer
}

// helpConfig is one scope whose source slack-help two principals report.
func helpConfig(reporters ...string) Config {
	return Config{Scopes: map[string]Scope{"support": {
		Observe: []Entry{{Sources: []Source{{Name: "slack-help", Reporters: reporters}}}},
		Routes:  []Route{{Source: "slack-help"}},
	}}}
}

func newRig(t *testing.T, cfg Config, opts ...func(*Options)) *rig {
	t.Helper()
	return newRigOn(t, nil, cfg, opts...)
}

// newRigOn is newRig over the store open opens (nil: badger).
func newRigOn(t *testing.T, open func(context.Context) (*store.Store, error), cfg Config, opts ...func(*Options)) *rig {
	t.Helper()
	clock := fakeclock.At(t0)
	o := Options{Clock: clock, IDs: hosttest.IDs(3), Principal: store.ValidRecipientID}
	for _, f := range opts {
		f(&o)
	}
	// The stack's scheduler serves the kinds of the registry, where the
	// observer registers its own; the observer wakes the scheduler.
	reg := kind.NewRegistry()
	stack := apitest.NewStack(t, apitest.Config{Plugins: reg, Clock: clock, OpenStore: open})
	o.Store = stack.Store
	ob, err := New(o, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := ob.Register(reg); err != nil {
		t.Fatal(err)
	}
	ob.SetWaker(stack.Scheduler)
	return &rig{t: t, clock: clock, stack: stack, ob: ob}
}

func (r *rig) record(principal string, rec Record) (Recorded, error) {
	r.t.Helper()
	return r.ob.Record(context.Background(), principal, "support", rec)
}

func (r *rig) mustRecord(principal string, rec Record) Recorded {
	r.t.Helper()
	got, err := r.record(principal, rec)
	if err != nil {
		r.t.Fatalf("record %+v by %s: %v", rec, principal, err)
	}
	return got
}

func (r *rig) route() {
	r.t.Helper()
	if _, err := r.ob.RouteAll(context.Background()); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) open() []store.Work {
	r.t.Helper()
	ws, err := r.ob.ListWork(context.Background(), "support", store.WorkOpen)
	if err != nil {
		r.t.Fatal(err)
	}
	return ws
}

// complete completes the Work as whoever claims it now.
func (r *rig) complete(id store.ID) {
	r.t.Helper()
	ctx := context.Background()
	w, _, err := r.ob.GetWork(ctx, id)
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.ob.CompleteWorkAs(ctx, id, w.ClaimedBy); err != nil {
		r.t.Fatal(err)
	}
}

func wantCode(t *testing.T, err error, code string) *api.Error {
	t.Helper()
	var e *api.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("err = %v, want %s", err, code)
	}
	return e
}

// Two principals report one source (the agent watcher, then the script
// that replaces it): repeats are duplicates, there is one Work per thread
// throughout, and a principal that is no reporter is refused.
func TestObservedSourceSurvivesReplacingTheObserver(t *testing.T) {
	r := newRig(t, helpConfig("agent-watcher", "help-script"))
	first := r.mustRecord("agent-watcher", Record{Item: "m1", Thread: "T1", Text: "printer on fire\nsince 9am"})
	if first.Duplicate || first.ThreadKey != "observe/support/slack-help/T1" || first.Event.Actor != "agent-watcher" {
		t.Fatalf("first: %+v", first)
	}
	r.mustRecord("agent-watcher", Record{Item: "m2", Thread: "T2", Text: "vpn down"})
	r.route()
	// The script takes over and rereads the source: the same items are
	// duplicates, whoever reports them.
	for _, rec := range []Record{{Item: "m1", Thread: "T1", Text: "printer on fire\nsince 9am"}, {Item: "m2", Thread: "T2", Text: "vpn down"}} {
		got := r.mustRecord("help-script", rec)
		if !got.Duplicate || got.Event.Actor != "agent-watcher" {
			t.Fatalf("reread %s: %+v", rec.Item, got)
		}
	}
	r.mustRecord("help-script", Record{Item: "m3", Thread: "T1", Text: "still burning"})
	r.route()
	works := r.open()
	if len(works) != 2 {
		t.Fatalf("%d works, want one per thread: %+v", len(works), works)
	}
	byTitle := map[string]store.Work{}
	for _, w := range works {
		byTitle[w.Title] = w
	}
	if w := byTitle["printer on fire"]; w.Inputs != 2 || w.ThreadKey != "observe/support/slack-help/T1" {
		t.Fatalf("T1 work: %+v", w)
	}
	_, err := r.record("mallory", Record{Item: "m9", Thread: "T1", Text: "x"})
	wantCode(t, err, api.CodeNotAReporter)
	_, err = r.record("help-script", Record{Item: "m9", Thread: "T1", Text: "x", Source: "other-source"})
	wantCode(t, err, api.CodeNotAReporter)
	if _, err := r.ob.Record(context.Background(), "help-script", "nowhere", Record{Item: "m", Thread: "T"}); !errors.Is(err, ErrUnknownScope) {
		t.Fatalf("unknown scope: %v", err)
	}
}

// A, B, A as three revisions are three events; changed text or another
// thread under an existing revision is refused.
func TestObservedRevisions(t *testing.T) {
	r := newRig(t, helpConfig("watcher"))
	var seqs []uint64
	for i, text := range []string{"A", "B", "A"} {
		got := r.mustRecord("watcher", Record{Item: "m1", Thread: "T", Text: text, Revision: fmt.Sprint("r", i)})
		if got.Duplicate {
			t.Fatalf("revision %d is a duplicate", i)
		}
		seqs = append(seqs, got.Event.Seq)
	}
	if seqs[0] == seqs[1] || seqs[1] == seqs[2] || seqs[0] == seqs[2] {
		t.Fatalf("three revisions share events: %v", seqs)
	}
	if got := r.mustRecord("watcher", Record{Item: "m1", Thread: "T", Text: "B", Revision: "r1"}); !got.Duplicate || got.Event.Seq != seqs[1] {
		t.Fatalf("exact repeat: %+v", got)
	}
	_, err := r.record("watcher", Record{Item: "m1", Thread: "T", Text: "C", Revision: "r1"})
	wantCode(t, err, api.CodeOnceConflict)
	_, err = r.record("watcher", Record{Item: "m1", Thread: "other", Text: "B", Revision: "r1"})
	wantCode(t, err, api.CodeOnceConflict)
	r.route()
	if ws := r.open(); len(ws) != 1 || ws[0].Inputs != 3 {
		t.Fatalf("works %+v", ws)
	}
}

// An item accepted while its source was declared, then routed after the
// source was removed (the route kept), starts no Work.
func TestObservedSourceRemovedBeforeRouting(t *testing.T) {
	r := newRig(t, helpConfig("watcher"))
	r.mustRecord("watcher", Record{Item: "m1", Thread: "T", Text: "hello"})
	cfg := helpConfig("watcher")
	sc := cfg.Scopes["support"]
	sc.Observe = nil // the route stays; the source is gone
	cfg.Scopes["support"] = sc
	if err := r.ob.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	r.route()
	if ws := r.open(); len(ws) != 0 {
		t.Fatalf("a removed source started work: %+v", ws)
	}
	// Put back, later items route again; the dropped one stays dropped.
	if err := r.ob.SetConfig(helpConfig("watcher")); err != nil {
		t.Fatal(err)
	}
	r.mustRecord("watcher", Record{Item: "m2", Thread: "T", Text: "again"})
	r.route()
	if ws := r.open(); len(ws) != 1 || ws[0].Inputs != 1 || ws[0].Title != "again" {
		t.Fatalf("works %+v", ws)
	}
}

// The responder parks on its thread. A later run by another reporter
// records the opener again and a follow-up: only the follow-up is new, it
// wakes the Work, and it is the wake's only input.
func TestObservedThreadParksAndWakes(t *testing.T) {
	r := newRig(t, helpConfig("watcher", "script"))
	ctx := context.Background()
	r.mustRecord("watcher", Record{Item: "m1", Thread: "T", Text: "opener"})
	r.route()
	w := r.open()[0]
	if _, _, err := r.ob.ClaimWork(ctx, w.ID, "responder"); err != nil {
		t.Fatal(err)
	}
	watch, err := r.stack.Scheduler.Register(ctx, scheduler.Registration{
		Kind: WorkKind, Params: json.RawMessage(`{"work_id":"` + w.ID.String() + `"}`), Recipient: store.Recipient{ID: "responder"},
		Caller: kind.HostCaller{},
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(watch.Params) != `{"work_id":"`+w.ID.String()+`","after":1}` || watch.Subject != Subject(w.ID) {
		t.Fatalf("stored watch %+v", watch)
	}
	r.stack.Scheduler.Tick(ctx, r.clock.Now()) // the registration probe: nothing new
	if got, _ := r.stack.Store.Get(ctx, watch.ID); got.State != store.Pending {
		t.Fatalf("parked watch %+v", got)
	}
	// Another reporter's run: the opener again (a duplicate, wakes
	// nothing), then a follow-up.
	r.clock.Add(time.Minute)
	if got := r.mustRecord("script", Record{Item: "m1", Thread: "T", Text: "opener"}); !got.Duplicate {
		t.Fatal("the re-recorded opener is not a duplicate")
	}
	r.route()
	if next, _ := r.stack.Scheduler.NextWake(); !next.After(r.clock.Now()) {
		t.Fatalf("a duplicate woke the watch (next wake %v)", next)
	}
	r.mustRecord("script", Record{Item: "m2", Thread: "T", Text: "follow-up"})
	r.route()
	if next, _ := r.stack.Scheduler.NextWake(); next.After(r.clock.Now()) {
		t.Fatalf("the follow-up did not wake the watch (next wake %v)", next)
	}
	r.stack.Scheduler.Tick(ctx, r.clock.Now())
	msgs, err := r.stack.Delivery.Read(ctx, "responder", 0, 10, 0)
	if err != nil || len(msgs) != 1 || msgs[0].Type != store.MessageFired || msgs[0].Outcome.Result != "new_items" {
		t.Fatalf("mail %+v %v", msgs, err)
	}
	var d ThreadDetail
	if err := json.Unmarshal(msgs[0].Outcome.Detail, &d); err != nil || len(d.Items) != 1 || d.Items[0].Item != "m2" || d.Items[0].Text != "follow-up" || d.Last != 2 {
		t.Fatalf("wake detail %+v %v", d, err)
	}
	if got, _, _ := r.ob.GetWork(ctx, w.ID); got.Consumed != 2 {
		t.Fatalf("consumed %d after the wake", got.Consumed)
	}
	// The next wait starts after the follow-up.
	next, err := r.stack.Scheduler.Register(ctx, scheduler.Registration{
		Kind: WorkKind, Params: json.RawMessage(`{"work_id":"` + w.ID.String() + `"}`), Recipient: store.Recipient{ID: "responder"},
		Caller: kind.HostCaller{},
	})
	if err != nil || !strings.Contains(string(next.Params), `"after":2`) {
		t.Fatalf("next wait %+v %v", next, err)
	}
	// After the Work completes, later items start nothing and the parked
	// watch is told.
	r.complete(w.ID)
	r.stack.Scheduler.Tick(ctx, r.clock.Now())
	r.mustRecord("script", Record{Item: "m3", Thread: "T", Text: "after the end"})
	r.route()
	if ws := r.open(); len(ws) != 0 {
		t.Fatalf("a completed thread started work: %+v", ws)
	}
	if got, _ := r.stack.Store.Get(ctx, next.ID); got.State != store.Fired || got.Outcome.Result != "completed" {
		t.Fatalf("the parked watch on a completed work: %+v", got)
	}
	skipped, _ := r.stack.Store.ReadEvents(ctx, SkippedStream, 0, 10)
	if len(skipped) != 1 {
		t.Fatalf("skipped items recorded: %+v", skipped)
	}
}

func TestThreadWatchAdmission(t *testing.T) {
	r := newRig(t, helpConfig("watcher"))
	ctx := context.Background()
	r.mustRecord("watcher", Record{Item: "m1", Thread: "T", Text: "x"})
	r.route()
	w := r.open()[0]
	for name, c := range map[string]struct{ params, code string }{
		"no work":      {`{"work_id":"01m8nhtng4ra8tgz0tmrscbt6g"}`, api.CodeNotFound},
		"bad id":       {`{"work_id":"nope"}`, api.CodeInvalidParams},
		"after beyond": {`{"work_id":"` + w.ID.String() + `","after":5}`, api.CodeInvalidParams},
		"unknown":      {`{"work_id":"` + w.ID.String() + `","x":1}`, api.CodeInvalidParams},
	} {
		_, err := r.stack.Scheduler.Register(ctx, scheduler.Registration{Kind: WorkKind, Params: json.RawMessage(c.params), Recipient: store.Recipient{ID: "a"}, Caller: kind.HostCaller{}})
		var ref *api.Error
		if !errors.As(err, &ref) || ref.Code != c.code {
			t.Errorf("%s: %v, want %s", name, err, c.code)
		}
	}
	// A completed Work takes no new wait.
	r.mustRecord("watcher", Record{Item: "m2", Thread: "T2", Text: "other"})
	r.route()
	var other store.Work
	for _, ow := range r.open() {
		if ow.ID != w.ID {
			other = ow
		}
	}
	r.complete(other.ID)
	_, err := r.stack.Scheduler.Register(ctx, scheduler.Registration{Kind: WorkKind, Params: json.RawMessage(`{"work_id":"` + other.ID.String() + `"}`), Recipient: store.Recipient{ID: "a"}, Caller: kind.HostCaller{}})
	var ref *api.Error
	if !errors.As(err, &ref) || ref.Field != "params.work_id" || !strings.Contains(ref.Message, "completed") {
		t.Fatalf("a wait on a completed work: %v", err)
	}
	// An explicit after of 0 carries the opener at once.
	watch, err := r.stack.Scheduler.Register(ctx, scheduler.Registration{Kind: WorkKind, Params: json.RawMessage(`{"work_id":"` + w.ID.String() + `","after":0}`), Recipient: store.Recipient{ID: "a"}, Caller: kind.HostCaller{}})
	if err != nil {
		t.Fatal(err)
	}
	r.stack.Scheduler.Tick(ctx, r.clock.Now())
	if got, _ := r.stack.Store.Get(ctx, watch.ID); got.State != store.Fired {
		t.Fatalf("after 0: %+v", got)
	}
}

// countingMetrics counts the observer's reports.
type countingMetrics struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *countingMetrics) add(k string) {
	c.mu.Lock()
	c.n[k]++
	c.mu.Unlock()
}
func (c *countingMetrics) Record(outcome string) { c.add("record:" + outcome) }
func (c *countingMetrics) Route(action string)   { c.add("route:" + action) }

func TestMetricsCountRecordsAndRoutes(t *testing.T) {
	m := &countingMetrics{n: map[string]int{}}
	r := newRig(t, helpConfig("watcher"), func(o *Options) { o.Metrics = m })
	r.mustRecord("watcher", Record{Item: "m1", Thread: "T", Text: "a"})
	r.mustRecord("watcher", Record{Item: "m1", Thread: "T", Text: "a"})
	_, _ = r.record("watcher", Record{Item: "m1", Thread: "T", Text: "b"})
	_, _ = r.record("mallory", Record{Item: "m2", Thread: "T"})
	r.mustRecord("watcher", Record{Item: "m3", Thread: "T", Text: "c"})
	r.route()
	want := map[string]int{"record:recorded": 2, "record:duplicate": 1, "record:once_conflict": 1, "record:not_a_reporter": 1,
		"route:created": 1, "route:appended": 1}
	for k, v := range want {
		if m.n[k] != v {
			t.Errorf("%s = %d, want %d (all: %v)", k, m.n[k], v, m.n)
		}
	}
}

func TestRecordingIsRateLimitedPerPrincipal(t *testing.T) {
	r := newRig(t, helpConfig("watcher", "script"), func(o *Options) { o.Rate, o.Burst = 2, 2 })
	for i := range 2 {
		r.mustRecord("watcher", Record{Item: fmt.Sprint(i), Thread: "T"})
	}
	_, err := r.record("watcher", Record{Item: "x", Thread: "T"})
	if e := wantCode(t, err, api.CodeRateLimited); e.RetryAfter <= 0 || e.RetryAfter > time.Second {
		t.Fatalf("retry after %s", e.RetryAfter)
	}
	r.mustRecord("script", Record{Item: "y", Thread: "T"}) // another principal's own budget
	r.clock.Add(500 * time.Millisecond)
	r.mustRecord("watcher", Record{Item: "z", Thread: "T"})
}

func TestRecordSourceSelection(t *testing.T) {
	cfg := Config{Scopes: map[string]Scope{"s": {Observe: []Entry{
		{Sources: []Source{{Name: "a", Reporters: []string{"p"}}}},
		{Sources: []Source{{Name: "b", Reporters: []string{"p"}}, {Name: "a", Reporters: []string{"q"}}}},
	}}}}
	r := newRig(t, cfg)
	ctx := context.Background()
	_, err := r.ob.Record(ctx, "p", "s", Record{Item: "i", Thread: "t"})
	if e := wantCode(t, err, api.CodeInvalidField); e.Field != "source" {
		t.Fatalf("field %s", e.Field)
	}
	if got, err := r.ob.Record(ctx, "p", "s", Record{Item: "i", Thread: "t", Source: "b"}); err != nil || !strings.HasPrefix(got.ThreadKey, "observe/s/b/") {
		t.Fatalf("%+v %v", got, err)
	}
	// Entries combine: q reports a through the second entry alone.
	if got, err := r.ob.Record(ctx, "q", "s", Record{Item: "i", Thread: "t"}); err != nil || got.ThreadKey != "observe/s/a/t" {
		t.Fatalf("%+v %v", got, err)
	}
}

func TestConfigErrorsNameTheEntry(t *testing.T) {
	tests := map[string]struct {
		cfg  Config
		path string
	}{
		"bad scope":        {Config{Scopes: map[string]Scope{"Support": {}}}, "scopes.Support"},
		"no sources":       {Config{Scopes: map[string]Scope{"s": {Observe: []Entry{{}}}}}, "scopes.s.observe[0].sources"},
		"bad source":       {Config{Scopes: map[string]Scope{"s": {Observe: []Entry{{Sources: []Source{{Name: "Slack Help", Reporters: []string{"p"}}}}}}}}, "scopes.s.observe[0].sources[0].name"},
		"long source":      {Config{Scopes: map[string]Scope{"s": {Observe: []Entry{{Sources: []Source{{Name: strings.Repeat("a", 65), Reporters: []string{"p"}}}}}}}}, "scopes.s.observe[0].sources[0].name"},
		"no reporters":     {Config{Scopes: map[string]Scope{"s": {Observe: []Entry{{Sources: []Source{{Name: "a"}}}}}}}, "scopes.s.observe[0].sources[0].reporters"},
		"bad reporter":     {Config{Scopes: map[string]Scope{"s": {Observe: []Entry{{Sources: []Source{{Name: "a", Reporters: []string{"a b"}}}}}}}}, "scopes.s.observe[0].sources[0].reporters[0]"},
		"route twice":      {Config{Scopes: map[string]Scope{"s": {Routes: []Route{{Source: "a"}, {Source: "a"}}}}}, "scopes.s.routes[1].source"},
		"bad route source": {Config{Scopes: map[string]Scope{"s": {Routes: []Route{{Source: "A"}}}}}, "scopes.s.routes[0].source"},
	}
	for name, tt := range tests {
		err := tt.cfg.Validate(store.ValidRecipientID)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Path != tt.path {
			t.Errorf("%s: %v, want an error at %s", name, err, tt.path)
		}
	}
	if err := helpConfig("p").Validate(store.ValidRecipientID); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeRecord(t *testing.T) {
	ok := `{"item":"m1","thread":"T","text":"hi","revision":"r1","source":"slack-help"}`
	if r, err := DecodeRecord([]byte(ok)); err != nil || r.Item != "m1" || r.Revision != "r1" {
		t.Fatalf("%+v %v", r, err)
	}
	for body, field := range map[string]string{
		`{"item":"","thread":"T"}`: "item",
		`{"item":"m","thread":""}`: "thread",
		`{"thread":"T"}`:           "item",
		`{"item":"` + strings.Repeat("x", 257) + `","thread":"T"}`:                 "item",
		`{"item":"m","thread":"` + strings.Repeat("x", 257) + `"}`:                 "thread",
		`{"item":"m","thread":"T","revision":"` + strings.Repeat("x", 129) + `"}`:  "revision",
		`{"item":"m","thread":"T","text":"` + strings.Repeat("x", 16<<10+1) + `"}`: "text",
		`{"item":"m","thread":"T","text":"\udc00"}`:                                "",
		`{"item":"m","thread":"T","reporter":"p"}`:                                 "reporter",
		`{"item":1,"thread":"T"}`:                                                  "item",
		`{"item":"m","thread":"T","source":"Bad Source"}`:                          "source",
	} {
		_, err := DecodeRecord([]byte(body))
		var e *api.Error
		if !errors.As(err, &e) || e.Code != api.CodeInvalidField || (field != "" && e.Field != field) {
			t.Errorf("%.60s: %v, want invalid_field %s", body, err, field)
		}
	}
	// Invalid UTF-8 in raw bytes is refused naming the field.
	if _, err := DecodeRecord([]byte("{\"item\":\"m\",\"thread\":\"T\",\"text\":\"\xff\"}")); err == nil {
		t.Error("invalid UTF-8 accepted")
	}
	for _, body := range []string{``, `nope`, `{"item":"m","thread":"T"} {}`, `[]`, `null`} {
		_, err := DecodeRecord([]byte(body))
		if err == nil {
			t.Errorf("%q accepted", body)
		}
		var e *api.Error
		if !errors.As(err, &e) || e.Code != api.CodeMalformedJSON {
			t.Errorf("%q: %v, want %s", body, err, api.CodeMalformedJSON)
		}
	}
}

func TestOnceIsUnambiguous(t *testing.T) {
	if Once("s", "a", "bc", "") == Once("s", "ab", "c", "") || Once("s", "a", "b", "c") == Once("s", "a", "bc", "") {
		t.Fatal("two identities share a digest")
	}
	if Once("s", "a", "b", "r") != Once("s", "a", "b", "r") {
		t.Fatal("not deterministic")
	}
}

func TestTitle(t *testing.T) {
	for in, want := range map[string]string{
		"first line\nsecond":     "first line",
		"  padded \r\nx":         "padded",
		"":                       "(untitled)",
		"\nsecond":               "(untitled)",
		strings.Repeat("é", 150): strings.Repeat("é", 100),
	} {
		if got := Title(in); got != want {
			t.Errorf("Title(%.20q) = %.20q, want %.20q", in, got, want)
		}
	}
}
