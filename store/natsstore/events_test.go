package natsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/store"
)

func event(stream, key string, at time.Time) store.Event {
	return store.Event{Stream: stream, Key: key, Type: "observed", OccurredAt: at, Payload: json.RawMessage(`{"k":"` + key + `"}`)}
}

func TestEvents(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, Config{}, runServer(t))
	for i, k := range []string{"a", "b", "c"} {
		e, dup, err := s.AppendEvent(ctx, event("fetch", k, t0.Add(time.Duration(i)*time.Minute)))
		if err != nil || dup || e.Seq != uint64(i+1) {
			t.Fatalf("append %s: %+v %v %v", k, e, dup, err)
		}
	}
	if e, _, err := s.AppendEvent(ctx, event("other", "a", t0)); err != nil || e.Seq != 1 {
		t.Fatalf("another stream's first: %+v %v", e, err)
	}
	e, dup, err := s.AppendEvent(ctx, event("fetch", "b", t0.Add(time.Hour)))
	if err != nil || !dup || e.Seq != 2 {
		t.Fatalf("repeat: %+v %v %v", e, dup, err)
	}
	diff := event("fetch", "b", t0)
	diff.Payload = json.RawMessage(`{"k":"else"}`)
	if _, _, err := s.AppendEvent(ctx, diff); !errors.Is(err, store.ErrEventConflict) {
		t.Fatalf("conflicting repeat: %v", err)
	}
	for _, bad := range []store.Event{
		{Key: "k", Type: "t"},
		{Stream: "s", Type: "t"},
		{Stream: "s", Key: "k"},
		{Stream: "s\x00", Key: "k", Type: "t"},
		{Stream: "s", Key: strings.Repeat("k", store.MaxEventKey+1), Type: "t"},
	} {
		if _, _, err := s.AppendEvent(ctx, bad); err == nil {
			t.Errorf("bad event %+v taken", bad)
		}
	}
	// A long key is hashed into its token and still found.
	long := strings.Repeat("x", store.MaxEventKey)
	if _, _, err := s.AppendEvent(ctx, event("fetch", long, t0.Add(3*time.Minute))); err != nil {
		t.Fatal(err)
	}
	if got, err := s.EventByKey(ctx, "fetch", long); err != nil || got.Seq != 4 {
		t.Fatalf("by a long key: %+v %v", got, err)
	}
	if _, err := s.EventByKey(ctx, "fetch", "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("by an absent key: %v", err)
	}
	evs, err := s.ReadEvents(ctx, "fetch", 1, 2)
	if err != nil || len(evs) != 2 || evs[0].Key != "b" || evs[1].Key != "c" {
		t.Fatalf("read: %+v %v", evs, err)
	}
	n, err := s.PruneEvents(ctx, "fetch", t0.Add(90*time.Second))
	if err != nil || n != 2 {
		t.Fatalf("prune: %d %v", n, err)
	}
	if evs, err := s.ReadEvents(ctx, "fetch", 0, 10); err != nil || len(evs) != 2 || evs[0].Key != "c" {
		t.Fatalf("after prune: %+v %v", evs, err)
	}
	// A pruned key may be appended again, under the next seq.
	if e, dup, err := s.AppendEvent(ctx, event("fetch", "a", t0.Add(time.Hour))); err != nil || dup || e.Seq != 5 {
		t.Fatalf("append a pruned key: %+v %v %v", e, dup, err)
	}
}

// TestEventKeyIsIdempotentAcrossStores: two Stores append the same keys
// at once; each key lands once and the seqs are dense.
func TestEventKeyIsIdempotentAcrossStores(t *testing.T) {
	ctx := context.Background()
	srv := runServer(t)
	a, b := openStore(t, Config{}, srv), openStore(t, Config{}, srv)
	const n = 20
	var wg sync.WaitGroup
	for _, s := range []testStore{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				if _, _, err := s.AppendEvent(ctx, event("fetch", fmt.Sprint(i), t0)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	evs, err := a.ReadEvents(ctx, "fetch", 0, 100)
	if err != nil || len(evs) != n {
		t.Fatalf("%d events, want %d: %v", len(evs), n, err)
	}
	for i, e := range evs {
		if e.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
}

func workStep(seq uint64, thread, item string, ids io.Reader) store.RouteStep {
	id, _ := store.NewID(t0, ids)
	return store.RouteStep{
		Cursor: "router", Seq: seq, ThreadKey: thread, OwnerKind: "review",
		New:   store.Work{ID: id, Scope: "repo", Kind: "review", Title: item, CreatedAt: t0},
		Input: store.WorkInput{EventSeq: seq, EventKey: item, Item: item, Thread: thread, Text: "t", RecordedAt: t0},
	}
}

func TestWork(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, Config{}, runServer(t))
	ids := newIDs()
	steps := []store.RouteStep{
		workStep(1, "pr/1", "a", ids),
		workStep(2, "pr/1", "b", ids), // the same thread in the same batch
		workStep(3, "pr/2", "c", ids),
		{Cursor: "router", Seq: 4, Drop: true},
	}
	other := workStep(5, "pr/2", "d", ids)
	other.OwnerKind = "triage"
	steps = append(steps, other)
	got, err := s.RouteBatch(ctx, steps)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.RouteAction{store.RouteCreated, store.RouteAppended, store.RouteCreated, store.RouteDropped, store.RouteSkipped}
	for i, r := range got {
		if r.Action != want[i] {
			t.Fatalf("step %d: %s, want %s", i, r.Action, want[i])
		}
	}
	// Replaying routes nothing twice.
	again, err := s.RouteBatch(ctx, steps[:2])
	if err != nil || again[0].Action != store.RouteDone || again[1].Action != store.RouteDone {
		t.Fatalf("replay: %+v %v", again, err)
	}
	if cur, err := s.RouterCursor(ctx, "router"); err != nil || cur != 5 {
		t.Fatalf("cursor %d %v", cur, err)
	}
	w1 := got[0].Work.ID
	w, err := s.GetWork(ctx, w1)
	if err != nil || w.Inputs != 2 || w.State != store.WorkOpen {
		t.Fatalf("work %+v %v", w, err)
	}
	ins, err := s.WorkInputs(ctx, w1, 1)
	if err != nil || len(ins) != 1 || ins[0].N != 2 || ins[0].Item != "b" {
		t.Fatalf("inputs %+v %v", ins, err)
	}
	if w, err = s.ClaimWork(ctx, w1, "alice", t0); err != nil || w.ClaimedBy != "alice" || w.Consumed != 2 {
		t.Fatalf("claim %+v %v", w, err)
	}
	if _, err := s.ClaimWork(ctx, w1, "bob", t0); !errors.Is(err, store.ErrWorkConflict) {
		t.Fatalf("claim by another: %v", err)
	}
	if _, err := s.CompleteWorkAs(ctx, w1, t0, "bob"); !errors.Is(err, store.ErrWorkConflict) {
		t.Fatalf("complete as another: %v", err)
	}
	if w, err = s.ConsumeWork(ctx, w1, "alice", 1); err != nil || w.Consumed != 2 {
		t.Fatalf("consume backwards: %+v %v", w, err)
	}
	if w, err = s.CompleteWorkAs(ctx, w1, t0, "alice"); err != nil || w.State != store.WorkCompleted {
		t.Fatalf("complete %+v %v", w, err)
	}
	if _, err := s.CompleteWork(ctx, w1, t0); !errors.Is(err, store.ErrWorkConflict) {
		t.Fatalf("complete twice: %v", err)
	}
	open, err := s.ListWork(ctx, "repo", store.WorkOpen)
	if err != nil || len(open) != 1 || open[0].ID != got[2].Work.ID {
		t.Fatalf("open work %+v %v", open, err)
	}
	all, err := s.ListWork(ctx, "repo", "")
	if err != nil || len(all) != 2 || all[0].ID.String() >= all[1].ID.String() {
		t.Fatalf("all work %+v %v", all, err)
	}
	// Later items of a completed Work's thread are skipped.
	r, err := s.RouteBatch(ctx, []store.RouteStep{workStep(6, "pr/1", "e", ids)})
	if err != nil || r[0].Action != store.RouteSkipped {
		t.Fatalf("after completion: %+v %v", r, err)
	}
	if _, err := s.RouteBatch(ctx, []store.RouteStep{{Seq: 7, ThreadKey: "x"}}); err == nil {
		t.Fatal("a step without a cursor taken")
	}
	if _, err := s.GetWork(ctx, store.ID{9}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("absent work: %v", err)
	}
}

// TestRouteBatchOnceAcrossStores: two routers replay the same steps at
// once; every step is routed once.
func TestRouteBatchOnceAcrossStores(t *testing.T) {
	ctx := context.Background()
	srv := runServer(t)
	a, b := openStore(t, Config{}, srv), openStore(t, Config{}, srv)
	ids := newIDs()
	var steps []store.RouteStep
	for i := range 40 {
		steps = append(steps, workStep(uint64(i+1), fmt.Sprintf("pr/%d", i%5), fmt.Sprint(i), ids))
	}
	var wg sync.WaitGroup
	results := make([][]store.Routed, 2)
	for i, s := range []testStore{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := s.RouteBatch(ctx, steps)
			if err != nil {
				t.Error(err)
			}
			results[i] = r
		}()
	}
	wg.Wait()
	done := 0
	for i := range steps {
		if results[0][i].Action != store.RouteDone {
			done++
		}
		if results[1][i].Action != store.RouteDone {
			done++
		}
	}
	if done != len(steps) {
		t.Fatalf("%d steps routed, want %d", done, len(steps))
	}
	all, err := a.ListWork(ctx, "repo", "")
	if err != nil || len(all) != 5 {
		t.Fatalf("%d works, want 5: %v", len(all), err)
	}
	inputs := 0
	for _, w := range all {
		inputs += w.Inputs
	}
	if inputs != len(steps) {
		t.Fatalf("%d inputs, want %d", inputs, len(steps))
	}
}
