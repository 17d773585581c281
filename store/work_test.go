package store

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func newWorkStep(t *testing.T, seq uint64, thread, item string) RouteStep {
	t.Helper()
	id, err := NewID(t0, bytes.NewReader(make([]byte, 10)))
	if err != nil {
		t.Fatal(err)
	}
	id[15] = byte(seq) // distinct ids in one millisecond, in step order
	return RouteStep{
		Cursor: "observe", Seq: seq, ThreadKey: "observe/s/src/" + thread, OwnerKind: "observe.thread",
		New:   Work{ID: id, Scope: "s", Kind: "observe.thread", Title: "t-" + thread, CreatedAt: t0},
		Input: WorkInput{EventSeq: seq, Source: "src", Item: item, Thread: thread, Text: item, RecordedAt: t0},
	}
}

// routeOne applies one step in a batch of its own.
func routeOne(t *testing.T, s *Badger, st RouteStep) (RouteAction, Work, error) {
	t.Helper()
	res, err := s.RouteBatch(context.Background(), []RouteStep{st})
	if err != nil {
		return "", Work{}, err
	}
	return res[0].Action, res[0].Work, nil
}

func TestRouteCreatesAppendsAndSkips(t *testing.T) {
	s := openTest(t, t.TempDir())
	ctx := context.Background()
	act, w, err := routeOne(t, s, newWorkStep(t, 1, "T1", "a"))
	if err != nil || act != RouteCreated || w.Inputs != 1 || w.State != WorkOpen {
		t.Fatalf("first: %s %+v %v", act, w, err)
	}
	act, w2, err := routeOne(t, s, newWorkStep(t, 2, "T1", "b"))
	if err != nil || act != RouteAppended || w2.ID != w.ID || w2.Inputs != 2 {
		t.Fatalf("second: %s %+v %v", act, w2, err)
	}
	// A replay at or before the cursor routes nothing.
	if act, _, err := routeOne(t, s, newWorkStep(t, 2, "T1", "b")); err != nil || act != RouteDone {
		t.Fatalf("replay: %s %v", act, err)
	}
	// A dropped step moves the cursor and no Work.
	if act, _, err := routeOne(t, s, RouteStep{Cursor: "observe", Seq: 3, Drop: true}); err != nil || act != RouteDropped {
		t.Fatalf("drop: %s %v", act, err)
	}
	if cur, _ := s.RouterCursor(ctx, "observe"); cur != 3 {
		t.Fatalf("cursor %d", cur)
	}
	ins, err := s.WorkInputs(ctx, w.ID, 0)
	if err != nil || len(ins) != 2 || ins[0].N != 1 || ins[1].Item != "b" {
		t.Fatalf("inputs %+v %v", ins, err)
	}
	if ins, _ := s.WorkInputs(ctx, w.ID, 1); len(ins) != 1 || ins[0].N != 2 {
		t.Fatalf("inputs after 1: %+v", ins)
	}
	// Completed: later items of the thread start nothing.
	if _, err := s.CompleteWork(ctx, w.ID, t0); err != nil {
		t.Fatal(err)
	}
	if act, _, err := routeOne(t, s, newWorkStep(t, 4, "T1", "c")); err != nil || act != RouteSkipped {
		t.Fatalf("after completion: %s %v", act, err)
	}
	// Another kind of owner takes no input.
	step := newWorkStep(t, 5, "T2", "x")
	step.OwnerKind = "other.kind"
	if act, _, _ := routeOne(t, s, step); act != RouteCreated {
		t.Fatalf("T2 opener: %s", act)
	}
	step = newWorkStep(t, 6, "T2", "y")
	step.OwnerKind = "other.kind"
	if act, _, _ := routeOne(t, s, step); act != RouteSkipped {
		t.Fatalf("T2 follow-up to an observe.thread owner under another kind: %s", act)
	}
	open, _ := s.ListWork(ctx, "s", WorkOpen)
	done, _ := s.ListWork(ctx, "s", WorkCompleted)
	all, _ := s.ListWork(ctx, "s", "")
	if len(open) != 1 || len(done) != 1 || len(all) != 2 || all[0].ID != w.ID {
		t.Fatalf("open %d, completed %d, all %+v", len(open), len(done), all)
	}
}

func TestClaimAndCompleteWork(t *testing.T) {
	s := openTest(t, t.TempDir())
	ctx := context.Background()
	_, w, _ := routeOne(t, s, newWorkStep(t, 1, "T", "a"))
	_, _, _ = routeOne(t, s, newWorkStep(t, 2, "T", "b"))
	c, err := s.ClaimWork(ctx, w.ID, "agent-1", t0.Add(time.Minute))
	if err != nil || c.ClaimedBy != "agent-1" || c.Consumed != 2 || c.ClaimedAt == nil {
		t.Fatalf("claim: %+v %v", c, err)
	}
	if _, err := s.ClaimWork(ctx, w.ID, "agent-1", t0); err != nil {
		t.Fatalf("re-claim by the holder: %v", err)
	}
	if _, err := s.ClaimWork(ctx, w.ID, "agent-2", t0); !errors.Is(err, ErrWorkConflict) {
		t.Fatalf("claim by another: %v", err)
	}
	if c, _ := s.ConsumeWork(ctx, w.ID, 1); c.Consumed != 2 {
		t.Fatalf("consumed moved back to %d", c.Consumed)
	}
	if c, _ := s.ConsumeWork(ctx, w.ID, 99); c.Consumed != 2 {
		t.Fatalf("consumed past the inputs: %d", c.Consumed)
	}
	// Completing on the condition of who holds it: what the caller was
	// allowed against must still hold in the transaction that completes.
	for _, holder := range []string{"", "agent-2"} {
		if _, err := s.CompleteWorkAs(ctx, w.ID, t0, holder); !errors.Is(err, ErrWorkConflict) {
			t.Fatalf("complete as if held by %q: %v", holder, err)
		}
	}
	if _, err := s.CompleteWorkAs(ctx, w.ID, t0, "agent-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CompleteWork(ctx, w.ID, t0); !errors.Is(err, ErrWorkConflict) {
		t.Fatalf("complete twice: %v", err)
	}
	if _, err := s.ClaimWork(ctx, w.ID, "agent-1", t0); !errors.Is(err, ErrWorkConflict) {
		t.Fatalf("claim completed: %v", err)
	}
	if _, err := s.GetWork(ctx, ID{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing work: %v", err)
	}
}

func TestRouteBatchRefusesBadSteps(t *testing.T) {
	s := openTest(t, t.TempDir())
	for name, st := range map[string]RouteStep{
		"no cursor":       {Seq: 1, ThreadKey: "k"},
		"no thread key":   {Cursor: "c", Seq: 1},
		"long thread key": {Cursor: "c", Seq: 1, ThreadKey: strings.Repeat("k", 1025)},
	} {
		if _, err := s.RouteBatch(context.Background(), []RouteStep{st}); err == nil {
			t.Errorf("%s: routed", name)
		}
	}
	if cur, _ := s.RouterCursor(context.Background(), "c"); cur != 0 {
		t.Fatalf("a refused step moved the cursor to %d", cur)
	}
}

// A batch routes in order: a later step feeds the Work an earlier step of
// the same transaction created, and the cursor ends at the last step.
func TestRouteBatch(t *testing.T) {
	s := openTest(t, t.TempDir())
	ctx := context.Background()
	var steps []RouteStep
	for i := range 70 { // more than one transaction's worth
		thread := "T" + string(rune('a'+i%3))
		st := newWorkStep(t, uint64(i+1), thread, "m")
		st.Input.Text = strings.Repeat("x", 16<<10)
		steps = append(steps, st)
	}
	res, err := s.RouteBatch(ctx, steps)
	if err != nil || len(res) != 70 {
		t.Fatalf("%d results, %v", len(res), err)
	}
	created := 0
	for _, r := range res {
		if r.Action == RouteCreated {
			created++
		}
	}
	if created != 3 || res[3].Action != RouteAppended || res[3].Work.ID != res[0].Work.ID {
		t.Fatalf("created %d; step 4: %+v", created, res[3])
	}
	if cur, _ := s.RouterCursor(ctx, "observe"); cur != 70 {
		t.Fatalf("cursor %d", cur)
	}
	if ins, _ := s.WorkInputs(ctx, res[0].Work.ID, 0); len(ins) != 24 || ins[23].N != 24 {
		t.Fatalf("thread a has %d inputs", len(ins))
	}
	// Replayed, the whole batch is done.
	again, err := s.RouteBatch(ctx, steps[:5])
	if err != nil || again[4].Action != RouteDone {
		t.Fatalf("replay %+v %v", again, err)
	}
}
