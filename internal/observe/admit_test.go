package observe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/store"
)

// scopeReader is a caller whose grant reads the Work of one scope and
// nothing else; asked keeps what it was asked about.
type scopeReader struct {
	scope string
	asked *[]kind.Object
}

func (c scopeReader) MayRead(o kind.Object) error {
	if c.asked != nil {
		*c.asked = append(*c.asked, o)
	}
	if o.Class == kind.ObjectWork && o.Scope == c.scope {
		return nil
	}
	return fmt.Errorf("may not see Work %s of scope %s", o.ID, o.Scope)
}

// unknownWork is a well-formed Work id no Work has.
const unknownWork = "01m8nhtng4ra8tgz0tmrscbt6g"

// admitAs asks the thread kind to admit params for recipient as caller.
func (r *rig) admitAs(caller kind.Caller, recipient, params string) (kind.Admission, error) {
	return r.ob.Thread().Admit(context.Background(), kind.AdmitRequest{Params: json.RawMessage(params), Recipient: recipient, Caller: caller})
}

// envelope is the API's answer to err, as the error handler writes it.
func envelope(t *testing.T, err error) string {
	t.Helper()
	var e *api.Error
	if !errors.As(err, &e) {
		t.Fatalf("not an API error: %v", err)
	}
	b, _ := json.Marshal(api.ErrorEnvelope{Error: *e})
	return string(b)
}

// A Work its caller may not read is refused exactly as an unknown id:
// the same 404 envelope, byte for byte once the id is swapped, and before
// anything else about the Work is told (that it is completed, how many
// inputs it has). The reason is kept for the log; a registration naming
// no caller reads nothing; one that may read the Work is admitted, and
// the caller was asked about that Work, its scope and its claimer.
func TestThreadAdmitsOnlyAWorkItsCallerMayRead(t *testing.T) {
	r := newRig(t, helpConfig("watcher"))
	ctx := context.Background()
	r.mustRecord("watcher", Record{Item: "m1", Thread: "T", Text: "secret opener"})
	r.mustRecord("watcher", Record{Item: "m2", Thread: "T2", Text: "another"})
	r.route()
	open := r.open()
	w, done := open[0], open[1]
	if _, _, err := r.ob.ClaimWork(ctx, w.ID, "agent-1"); err != nil {
		t.Fatal(err)
	}
	r.complete(done.ID)
	outsider := scopeReader{scope: "elsewhere"}
	_, unknownErr := r.admitAs(outsider, "b", `{"work_id":"`+unknownWork+`"}`)
	want := envelope(t, unknownErr)
	if !strings.Contains(want, `"code":"not_found"`) || envelope(t, NoWork(unknownWork)) != want {
		t.Fatalf("an unknown id: %s", want)
	}
	for name, c := range map[string]struct {
		caller kind.Caller
		params string
		id     store.ID
	}{
		"open":                       {outsider, `{"work_id":"` + w.ID.String() + `"}`, w.ID},
		"completed":                  {outsider, `{"work_id":"` + done.ID.String() + `"}`, done.ID},
		"after beyond its inputs":    {outsider, `{"work_id":"` + w.ID.String() + `","after":9}`, w.ID},
		"no caller":                  {nil, `{"work_id":"` + w.ID.String() + `"}`, w.ID},
		"no caller, completed":       {nil, `{"work_id":"` + done.ID.String() + `"}`, done.ID},
		"a principal of no grant at": {scopeReader{}, `{"work_id":"` + w.ID.String() + `"}`, w.ID},
	} {
		_, err := r.admitAs(c.caller, "b", c.params)
		var hidden *kind.HiddenError
		if !errors.As(err, &hidden) || hidden.Reason == nil {
			t.Errorf("%s: %v, want a hidden refusal with its reason", name, err)
			continue
		}
		if got := strings.ReplaceAll(envelope(t, err), c.id.String(), unknownWork); got != want {
			t.Errorf("%s: answers\n%s\nwhere an unknown id answers\n%s", name, got, want)
		}
	}
	var asked []kind.Object
	adm, err := r.admitAs(scopeReader{scope: "support", asked: &asked}, "b", `{"work_id":"`+w.ID.String()+`"}`)
	if err != nil || adm.Subject != Subject(w.ID) {
		t.Fatalf("a reader of the scope: %+v %v", adm, err)
	}
	if len(asked) != 1 || asked[0] != (kind.Object{Class: kind.ObjectWork, ID: w.ID.String(), Scope: "support", Recipient: "agent-1"}) {
		t.Fatalf("the caller was asked about %+v", asked)
	}
	// Through the scheduler: refused, and nothing written, not even the
	// recipient a first registration would make.
	_, err = r.stack.Scheduler.Register(ctx, scheduler.Registration{Kind: WorkKind, Params: json.RawMessage(`{"work_id":"` + w.ID.String() + `","after":0}`),
		Recipient: store.Recipient{ID: "b"}, RegisteredBy: "b", Caller: outsider})
	if got := strings.ReplaceAll(envelope(t, err), w.ID.String(), unknownWork); got != want {
		t.Fatalf("registered through the scheduler: %s", got)
	}
	if ws, _, _ := r.stack.Store.List(ctx, store.Filter{}); len(ws) != 0 {
		t.Fatalf("a refused wait wrote %+v", ws)
	}
	if _, err := r.stack.Store.GetRecipient(ctx, "b"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused wait made its recipient: %v", err)
	}
}

// Each recipient waits from the inputs it has been given: a reader's wake
// moves its own cursor, never the Work's consumed input, so the claimer's
// wait registered after it still carries item 1, and the reader's next
// wait starts after what it was given.
func TestThreadWaitStartsFromItsRecipientsOwnInputs(t *testing.T) {
	r := newRig(t, helpConfig("watcher"))
	ctx := context.Background()
	r.mustRecord("watcher", Record{Item: "m1", Thread: "T", Text: "opener"})
	r.route()
	w := r.open()[0]
	register := func(recipient string) store.Watch {
		t.Helper()
		watch, err := r.stack.Scheduler.Register(ctx, scheduler.Registration{Kind: WorkKind, Params: json.RawMessage(`{"work_id":"` + w.ID.String() + `"}`),
			Recipient: store.Recipient{ID: recipient}, Caller: scopeReader{scope: "support"}})
		if err != nil {
			t.Fatal(err)
		}
		return watch
	}
	carried := func(recipient string, from uint64) []int {
		t.Helper()
		msgs, err := r.stack.Delivery.Read(ctx, recipient, from, 10, 0)
		if err != nil || len(msgs) != 1 || msgs[0].Outcome.Result != "new_items" {
			t.Fatalf("%s's mail: %+v %v", recipient, msgs, err)
		}
		var d ThreadDetail
		if err := json.Unmarshal(msgs[0].Outcome.Detail, &d); err != nil {
			t.Fatal(err)
		}
		var ns []int
		for _, it := range d.Items {
			ns = append(ns, it.N)
		}
		return ns
	}
	reader := register("reader")
	if string(reader.Params) != `{"work_id":"`+w.ID.String()+`","after":0}` {
		t.Fatalf("the reader's wait: %s", reader.Params)
	}
	r.stack.Scheduler.Tick(ctx, r.clock.Now())
	if got := carried("reader", 0); len(got) != 1 || got[0] != 1 {
		t.Fatalf("the reader was given %v", got)
	}
	got, _, _ := r.ob.GetWork(ctx, w.ID)
	if got.Consumed != 0 || got.ConsumedBy("reader") != 1 {
		t.Fatalf("after the reader's wake: consumed %d, the reader's %d", got.Consumed, got.ConsumedBy("reader"))
	}
	// The Work's own agent, waiting after the reader, is given item 1.
	own := register("agent-1")
	if !strings.Contains(string(own.Params), `"after":0`) {
		t.Fatalf("the agent's wait: %s", own.Params)
	}
	r.stack.Scheduler.Tick(ctx, r.clock.Now())
	if got := carried("agent-1", 0); len(got) != 1 || got[0] != 1 {
		t.Fatalf("the agent registered after the reader was given %v", got)
	}
	// The reader's next wait starts after what it was given; it wakes on
	// item 2 alone.
	next := register("reader")
	if !strings.Contains(string(next.Params), `"after":1`) {
		t.Fatalf("the reader's next wait: %s", next.Params)
	}
	r.mustRecord("watcher", Record{Item: "m2", Thread: "T", Text: "follow-up"})
	r.route()
	r.stack.Scheduler.Tick(ctx, r.clock.Now())
	if got := carried("reader", 1); len(got) != 1 || got[0] != 2 {
		t.Fatalf("the reader's second wake carried %v", got)
	}
}

// A crash between routing an item and poking the Work's waits leaves a
// wait parked behind; the start's recovery pokes every open Work, so a
// reader's wait behind is woken even when the Work's claimer has since
// been given everything (its consumed input says nothing of the reader's).
func TestRecoveryWakesAReaderBehindAClaimerCaughtUp(t *testing.T) {
	r := newRig(t, helpConfig("watcher"))
	ctx := context.Background()
	r.mustRecord("watcher", Record{Item: "m1", Thread: "T", Text: "opener"})
	r.route()
	w := r.open()[0]
	reader, err := r.stack.Scheduler.Register(ctx, scheduler.Registration{Kind: WorkKind, Params: json.RawMessage(`{"work_id":"` + w.ID.String() + `","after":1}`),
		Recipient: store.Recipient{ID: "reader"}, Caller: kind.HostCaller{}})
	if err != nil {
		t.Fatal(err)
	}
	r.stack.Scheduler.Tick(ctx, r.clock.Now()) // parked: nothing after 1
	// Item 2 is routed, and the poke is lost (the crash).
	r.ob.SetWaker(nil)
	r.mustRecord("watcher", Record{Item: "m2", Thread: "T", Text: "follow-up"})
	r.route()
	r.ob.SetWaker(r.stack.Scheduler)
	if _, _, err := r.ob.ClaimWork(ctx, w.ID, "agent-1"); err != nil { // the claimer is given both
		t.Fatal(err)
	}
	r.stack.Scheduler.Tick(ctx, r.clock.Now())
	if got, _ := r.stack.Store.Get(ctx, reader.ID); got.State != store.Pending {
		t.Fatalf("the reader's wait before the recovery: %s", got.State)
	}
	r.ob.recoverWakes(ctx)
	r.stack.Scheduler.Tick(ctx, r.clock.Now())
	if got, _ := r.stack.Store.Get(ctx, reader.ID); got.State != store.Fired {
		t.Fatalf("the reader's wait after the recovery: %s", got.State)
	}
}
