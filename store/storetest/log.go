package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/vigilhq/vigil/store"
)

func eventCases() []testCase {
	return []testCase{
		{"AppendInOrderPerStream", testEventsInOrder},
		{"IdempotentByKey", testEventsIdempotent},
		{"IdempotentUnderConcurrency", testEventsConcurrent},
		{"BadAppendsRefused", testEventsRefused},
		{"PruneEventsStopsAtCutoff", testPruneEvents},
	}
}

// Each stream numbers its events from 1, in append order; ReadEvents
// reads after a cursor.
func testEventsInOrder(e *env) {
	for i, stream := range []string{"a", "b", "a", "ab"} {
		ev, dup, err := e.b.AppendEvent(e.ctx, store.Event{Stream: stream, Key: fmt.Sprint(i), Type: "t", OccurredAt: t0, Payload: []byte(`{}`)})
		if err != nil || dup {
			e.Fatalf("append %d: %v dup=%v", i, err, dup)
		}
		if want := []uint64{1, 1, 2, 1}[i]; ev.Seq != want {
			e.Fatalf("append %d: seq %d, want %d", i, ev.Seq, want)
		}
	}
	got, err := e.b.ReadEvents(e.ctx, "a", 0, 10)
	if err != nil || len(got) != 2 || got[0].Key != "0" || got[1].Key != "2" {
		e.Fatalf("ReadEvents a = %+v, %v", got, err)
	}
	if got, _ = e.b.ReadEvents(e.ctx, "a", 1, 10); len(got) != 1 || got[0].Seq != 2 {
		e.Fatalf("ReadEvents after 1 = %+v", got)
	}
	if got, _ = e.b.ReadEvents(e.ctx, "a", 0, 1); len(got) != 1 || got[0].Seq != 1 {
		e.Fatalf("ReadEvents limit 1 = %+v", got)
	}
}

// An append of a key the stream holds is a duplicate, answered with the
// first event (whoever repeats it); the same key with another payload is
// ErrEventConflict; EventByKey finds the event.
func testEventsIdempotent(e *env) {
	ev := store.Event{Stream: "s", Key: "k", Type: "t", OccurredAt: time.Unix(0, 0).UTC(), Payload: []byte(`{"x":1}`), Actor: "alice", Run: "run-1"}
	first, dup, err := e.b.AppendEvent(e.ctx, ev)
	if err != nil || dup {
		e.Fatal(err, dup)
	}
	ev.Actor, ev.Run = "bob", "run-2"
	again, dup, err := e.b.AppendEvent(e.ctx, ev)
	if err != nil || !dup || again.Seq != first.Seq || again.Actor != "alice" || again.Run != "run-1" {
		e.Fatalf("repeat: %+v dup=%v err=%v", again, dup, err)
	}
	ev.Payload = []byte(`{"x":2}`)
	prev, dup, err := e.b.AppendEvent(e.ctx, ev)
	if !errors.Is(err, store.ErrEventConflict) || dup || prev.Seq != first.Seq {
		e.Fatalf("conflict: %+v dup=%v err=%v", prev, dup, err)
	}
	// The same key in another stream is another event.
	other := ev
	other.Stream = "s2"
	if o, dup, err := e.b.AppendEvent(e.ctx, other); err != nil || dup || o.Seq != 1 {
		e.Fatalf("the key in another stream: %+v dup=%v err=%v", o, dup, err)
	}
	if got, _ := e.b.ReadEvents(e.ctx, "s", 0, 10); len(got) != 1 || !bytes.Equal(got[0].Payload, []byte(`{"x":1}`)) {
		e.Fatalf("stream s holds %+v, want the first event alone", got)
	}
	byKey, err := e.b.EventByKey(e.ctx, "s", "k")
	if err != nil || byKey.Seq != first.Seq || byKey.Actor != "alice" {
		e.Fatalf("EventByKey = %+v, %v", byKey, err)
	}
	if _, err := e.b.EventByKey(e.ctx, "s", "nope"); !errors.Is(err, store.ErrNotFound) {
		e.Fatalf("EventByKey of an absent key: %v, want ErrNotFound", err)
	}
}

// Appends of one key at once make one event: exactly one is new, the
// others are its duplicates with its seq; keys of their own each get one
// seq, none shared or skipped.
func testEventsConcurrent(e *env) {
	const rounds, writers = 40, 8
	for r := range rounds {
		key := fmt.Sprint("k", r)
		evs := make([]store.Event, writers)
		dups := make([]bool, writers)
		errs := make([]error, writers)
		var wg sync.WaitGroup
		start := make(chan struct{}) // released together, so the appends overlap
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				evs[i], dups[i], errs[i] = e.b.AppendEvent(e.ctx, store.Event{Stream: "s", Key: key, Type: "t", OccurredAt: t0, Payload: []byte(`{}`)})
			}()
		}
		close(start)
		wg.Wait()
		fresh := 0
		for i := range writers {
			if errs[i] != nil {
				e.Fatalf("round %d: %v", r, errs[i])
			}
			if !dups[i] {
				fresh++
			}
			if evs[i].Seq != uint64(r+1) {
				e.Fatalf("round %d: writer %d got seq %d, want %d", r, i, evs[i].Seq, r+1)
			}
		}
		if fresh != 1 {
			e.Fatalf("round %d: %d appends of one key were new, want 1", r, fresh)
		}
	}
	got, err := e.b.ReadEvents(e.ctx, "s", 0, 1000)
	if err != nil || len(got) != rounds {
		e.Fatalf("the stream holds %d events, want %d: %v", len(got), rounds, err)
	}
}

func testEventsRefused(e *env) {
	for name, ev := range map[string]store.Event{
		"no stream":   {Key: "k", Type: "t"},
		"nul stream":  {Stream: "a\x00b", Key: "k", Type: "t"},
		"no key":      {Stream: "s", Type: "t"},
		"no type":     {Stream: "s", Key: "k"},
		"long stream": {Stream: strings.Repeat("s", store.MaxEventKey+1), Key: "k", Type: "t"},
		"long key":    {Stream: "s", Key: strings.Repeat("k", store.MaxEventKey+1), Type: "t"},
	} {
		if _, _, err := e.b.AppendEvent(e.ctx, ev); err == nil {
			e.Errorf("%s: appended", name)
		}
	}
}

// PruneEvents deletes a stream's events that occurred before its cutoff,
// past any one batch's size; a pruned key may be used again and takes the
// next seq, never an old one.
func testPruneEvents(e *env) {
	for i := range 2500 {
		if _, _, err := e.b.AppendEvent(e.ctx, store.Event{Stream: "s", Key: fmt.Sprint(i), Type: "t", OccurredAt: t0.Add(time.Duration(i) * time.Second), Payload: []byte(`{}`)}); err != nil {
			e.Fatal(err)
		}
	}
	if _, _, err := e.b.AppendEvent(e.ctx, store.Event{Stream: "other", Key: "0", Type: "t", OccurredAt: t0, Payload: []byte(`{}`)}); err != nil {
		e.Fatal(err)
	}
	n, err := e.b.PruneEvents(e.ctx, "s", t0.Add(2100*time.Second))
	if err != nil || n != 2100 {
		e.Fatalf("pruned %d, %v; want 2100", n, err)
	}
	got, _ := e.b.ReadEvents(e.ctx, "s", 0, 1000)
	if len(got) != 400 || got[0].Key != "2100" {
		e.Fatalf("left %d events", len(got))
	}
	if got, _ := e.b.ReadEvents(e.ctx, "other", 0, 10); len(got) != 1 {
		e.Fatal("pruning one stream pruned another")
	}
	ev, dup, err := e.b.AppendEvent(e.ctx, store.Event{Stream: "s", Key: "0", Type: "t", OccurredAt: t0, Payload: []byte(`{}`)})
	if err != nil || dup || ev.Seq != 2501 {
		e.Fatalf("re-append: %+v dup=%v err=%v, want seq 2501", ev, dup, err)
	}
}

func workCases() []testCase {
	return []testCase{
		{"RouteCreatesAppendsAndSkips", testRoute},
		{"ClaimAndComplete", testClaimAndComplete},
		{"ConsumedPerRecipient", testConsumedPerRecipient},
		{"RouteBatchRefusesBadSteps", testRouteRefused},
		{"RouteBatchInOrder", testRouteBatch},
	}
}

func (e *env) workStep(seq uint64, thread, item string) store.RouteStep {
	e.Helper()
	id, err := store.NewID(t0, bytes.NewReader(make([]byte, 10)))
	if err != nil {
		e.Fatal(err)
	}
	id[15] = byte(seq) // distinct ids in one millisecond, in step order
	return store.RouteStep{
		Cursor: "observe", Seq: seq, ThreadKey: "observe/s/src/" + thread, OwnerKind: "observe.thread",
		New:   store.Work{ID: id, Scope: "s", Kind: "observe.thread", Title: "t-" + thread, CreatedAt: t0},
		Input: store.WorkInput{EventSeq: seq, Source: "src", Item: item, Thread: thread, Text: item, RecordedAt: t0},
	}
}

func (e *env) routeOne(st store.RouteStep) (store.RouteAction, store.Work, error) {
	e.Helper()
	res, err := e.b.RouteBatch(e.ctx, []store.RouteStep{st})
	if err != nil {
		return "", store.Work{}, err
	}
	if len(res) != 1 {
		e.Fatalf("%d results for one step", len(res))
	}
	return res[0].Action, res[0].Work, nil
}

// A thread's first item creates its Work, the next ones append to it; a
// step at or before the router's cursor is done, a dropped step moves the
// cursor only; a completed Work takes nothing more, and an owner of
// another kind takes no input.
func testRoute(e *env) {
	act, w, err := e.routeOne(e.workStep(1, "T1", "a"))
	if err != nil || act != store.RouteCreated || w.Inputs != 1 || w.State != store.WorkOpen {
		e.Fatalf("first: %s %+v %v", act, w, err)
	}
	act, w2, err := e.routeOne(e.workStep(2, "T1", "b"))
	if err != nil || act != store.RouteAppended || w2.ID != w.ID || w2.Inputs != 2 {
		e.Fatalf("second: %s %+v %v", act, w2, err)
	}
	if act, _, err := e.routeOne(e.workStep(2, "T1", "b")); err != nil || act != store.RouteDone {
		e.Fatalf("replay: %s %v", act, err)
	}
	if act, _, err := e.routeOne(store.RouteStep{Cursor: "observe", Seq: 3, Drop: true}); err != nil || act != store.RouteDropped {
		e.Fatalf("drop: %s %v", act, err)
	}
	if cur, err := e.b.RouterCursor(e.ctx, "observe"); err != nil || cur != 3 {
		e.Fatalf("cursor %d %v", cur, err)
	}
	if cur, err := e.b.RouterCursor(e.ctx, "another"); err != nil || cur != 0 {
		e.Fatalf("a new cursor %d %v, want 0", cur, err)
	}
	ins, err := e.b.WorkInputs(e.ctx, w.ID, 0)
	if err != nil || len(ins) != 2 || ins[0].N != 1 || ins[1].Item != "b" {
		e.Fatalf("inputs %+v %v", ins, err)
	}
	if ins, _ := e.b.WorkInputs(e.ctx, w.ID, 1); len(ins) != 1 || ins[0].N != 2 {
		e.Fatalf("inputs after 1: %+v", ins)
	}
	if got, err := e.b.GetWork(e.ctx, w.ID); err != nil || got.Inputs != 2 {
		e.Fatalf("GetWork: %+v %v", got, err)
	}
	if _, err := e.b.CompleteWork(e.ctx, w.ID, t0); err != nil {
		e.Fatal(err)
	}
	if act, _, err := e.routeOne(e.workStep(4, "T1", "c")); err != nil || act != store.RouteSkipped {
		e.Fatalf("after completion: %s %v", act, err)
	}
	step := e.workStep(5, "T2", "x")
	step.OwnerKind = "other.kind"
	if act, _, _ := e.routeOne(step); act != store.RouteCreated {
		e.Fatalf("T2 opener: %s", act)
	}
	step = e.workStep(6, "T2", "y")
	step.OwnerKind = "other.kind"
	if act, _, _ := e.routeOne(step); act != store.RouteSkipped {
		e.Fatalf("T2 follow-up to an observe.thread owner under another kind: %s", act)
	}
	open, _ := e.b.ListWork(e.ctx, "s", store.WorkOpen)
	done, _ := e.b.ListWork(e.ctx, "s", store.WorkCompleted)
	all, _ := e.b.ListWork(e.ctx, "s", "")
	if len(open) != 1 || len(done) != 1 || len(all) != 2 || all[0].ID != w.ID {
		e.Fatalf("open %d, completed %d, all %+v", len(open), len(done), all)
	}
	if other, _ := e.b.ListWork(e.ctx, "t", ""); len(other) != 0 {
		e.Fatalf("another scope lists %+v", other)
	}
}

// A claim holds a Work for one recipient and consumes its inputs; only
// the holder may claim again or complete it (CompleteWorkAs checks the
// holder in its transaction); consumed never moves back nor past the
// inputs; a completed Work can be neither claimed nor completed.
func testClaimAndComplete(e *env) {
	_, w, _ := e.routeOne(e.workStep(1, "T", "a"))
	_, _, _ = e.routeOne(e.workStep(2, "T", "b"))
	c, err := e.b.ClaimWork(e.ctx, w.ID, "agent-1", t0.Add(time.Minute))
	if err != nil || c.ClaimedBy != "agent-1" || c.Consumed != 2 || c.ClaimedAt == nil {
		e.Fatalf("claim: %+v %v", c, err)
	}
	if _, err := e.b.ClaimWork(e.ctx, w.ID, "agent-1", t0); err != nil {
		e.Fatalf("a re-claim by the holder: %v", err)
	}
	if _, err := e.b.ClaimWork(e.ctx, w.ID, "agent-2", t0); !errors.Is(err, store.ErrWorkConflict) {
		e.Fatalf("a claim by another: %v, want ErrWorkConflict", err)
	}
	if c, _ := e.b.ConsumeWork(e.ctx, w.ID, "agent-1", 1); c.Consumed != 2 {
		e.Fatalf("consumed moved back to %d", c.Consumed)
	}
	if c, _ := e.b.ConsumeWork(e.ctx, w.ID, "agent-1", 99); c.Consumed != 2 {
		e.Fatalf("consumed past the inputs: %d", c.Consumed)
	}
	for _, holder := range []string{"", "agent-2"} {
		if _, err := e.b.CompleteWorkAs(e.ctx, w.ID, t0, holder); !errors.Is(err, store.ErrWorkConflict) {
			e.Fatalf("complete as if held by %q: %v, want ErrWorkConflict", holder, err)
		}
	}
	if _, err := e.b.CompleteWorkAs(e.ctx, w.ID, t0, "agent-1"); err != nil {
		e.Fatal(err)
	}
	if _, err := e.b.CompleteWork(e.ctx, w.ID, t0); !errors.Is(err, store.ErrWorkConflict) {
		e.Fatalf("complete twice: %v, want ErrWorkConflict", err)
	}
	if _, err := e.b.ClaimWork(e.ctx, w.ID, "agent-1", t0); !errors.Is(err, store.ErrWorkConflict) {
		e.Fatalf("claim a completed Work: %v, want ErrWorkConflict", err)
	}
	if _, err := e.b.GetWork(e.ctx, store.ID{}); !errors.Is(err, store.ErrNotFound) {
		e.Fatalf("an absent Work: %v, want ErrNotFound", err)
	}
	if _, err := e.b.ClaimWork(e.ctx, store.ID{}, "agent-1", t0); !errors.Is(err, store.ErrNotFound) {
		e.Fatalf("claim an absent Work: %v, want ErrNotFound", err)
	}
}

// What a Work's inputs a recipient has been given is that recipient's
// own: a wake to another recipient moves its cursor, never the claimer's
// Consumed, nor a third's; the claim gives the claimer everything and
// ends its cursor; nothing moves back or past the inputs; each survives
// the write as written.
func testConsumedPerRecipient(e *env) {
	_, w, _ := e.routeOne(e.workStep(1, "T", "a"))
	_, _, _ = e.routeOne(e.workStep(2, "T", "b"))
	c, err := e.b.ConsumeWork(e.ctx, w.ID, "reader", 1)
	if err != nil || c.Consumed != 0 || c.ConsumedBy("reader") != 1 || c.ConsumedBy("agent-1") != 0 {
		e.Fatalf("a reader's wake on unclaimed Work: %+v %v", c, err)
	}
	if c, _ = e.b.ConsumeWork(e.ctx, w.ID, "reader", 0); c.ConsumedBy("reader") != 1 {
		e.Fatalf("a cursor moved back: %+v", c)
	}
	if c, _ = e.b.ConsumeWork(e.ctx, w.ID, "agent-1", 1); c.ConsumedBy("agent-1") != 1 || c.Consumed != 0 {
		e.Fatalf("a second recipient's wake: %+v", c)
	}
	c, err = e.b.ClaimWork(e.ctx, w.ID, "agent-1", t0)
	if err != nil || c.Consumed != 2 || c.ConsumedBy("agent-1") != 2 || c.ConsumedBy("reader") != 1 || len(c.Cursors) != 1 {
		e.Fatalf("the claim: %+v %v", c, err)
	}
	if c, _ = e.b.ConsumeWork(e.ctx, w.ID, "reader", 99); c.ConsumedBy("reader") != 2 || c.Consumed != 2 {
		e.Fatalf("a reader's wake past the inputs: %+v", c)
	}
	_, _, _ = e.routeOne(e.workStep(3, "T", "c"))
	if c, _ = e.b.ConsumeWork(e.ctx, w.ID, "agent-1", 3); c.Consumed != 3 || c.ConsumedBy("reader") != 2 {
		e.Fatalf("the claimer's wake: %+v", c)
	}
	got, err := e.b.GetWork(e.ctx, w.ID)
	if err != nil || got.Consumed != 3 || got.ConsumedBy("reader") != 2 || got.ConsumedBy("nobody") != 0 {
		e.Fatalf("read back: %+v %v", got, err)
	}
}

// A step without a cursor or a thread key, or with a thread key too long,
// is refused and moves no cursor.
func testRouteRefused(e *env) {
	for name, st := range map[string]store.RouteStep{
		"no cursor":       {Seq: 1, ThreadKey: "k"},
		"no thread key":   {Cursor: "c", Seq: 1},
		"long thread key": {Cursor: "c", Seq: 1, ThreadKey: strings.Repeat("k", 1025)},
	} {
		if _, err := e.b.RouteBatch(e.ctx, []store.RouteStep{st}); err == nil {
			e.Errorf("%s: routed", name)
		}
	}
	if cur, _ := e.b.RouterCursor(e.ctx, "c"); cur != 0 {
		e.Fatalf("a refused step moved the cursor to %d", cur)
	}
}

// A batch routes in order, across as many transactions as its size needs:
// a later step feeds the Work an earlier one created, the cursor ends at
// the last step, and a replay of the batch is done.
func testRouteBatch(e *env) {
	var steps []store.RouteStep
	for i := range 70 {
		st := e.workStep(uint64(i+1), "T"+string(rune('a'+i%3)), "m")
		st.Input.Text = strings.Repeat("x", 16<<10)
		steps = append(steps, st)
	}
	res, err := e.b.RouteBatch(e.ctx, steps)
	if err != nil || len(res) != 70 {
		e.Fatalf("%d results, %v", len(res), err)
	}
	created := 0
	for _, r := range res {
		if r.Action == store.RouteCreated {
			created++
		}
	}
	if created != 3 || res[3].Action != store.RouteAppended || res[3].Work.ID != res[0].Work.ID {
		e.Fatalf("created %d; step 4: %+v", created, res[3])
	}
	if cur, _ := e.b.RouterCursor(e.ctx, "observe"); cur != 70 {
		e.Fatalf("cursor %d, want 70", cur)
	}
	if ins, _ := e.b.WorkInputs(e.ctx, res[0].Work.ID, 0); len(ins) != 24 || ins[23].N != 24 {
		e.Fatalf("thread a has %d inputs, want 24", len(ins))
	}
	again, err := e.b.RouteBatch(e.ctx, steps[:5])
	if err != nil || len(again) != 5 || again[4].Action != store.RouteDone {
		e.Fatalf("replay %+v %v", again, err)
	}
}
