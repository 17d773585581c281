package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestEventsAppendInOrderPerStream(t *testing.T) {
	s := openTest(t, t.TempDir())
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for i, stream := range []string{"a", "b", "a"} {
		e, dup, err := s.AppendEvent(ctx, Event{Stream: stream, Key: fmt.Sprint(i), Type: "t", OccurredAt: at, Payload: []byte(`{}`)})
		if err != nil || dup {
			t.Fatalf("append %d: %v dup=%v", i, err, dup)
		}
		want := map[int]uint64{0: 1, 1: 1, 2: 2}[i]
		if e.Seq != want {
			t.Fatalf("append %d: seq %d, want %d", i, e.Seq, want)
		}
	}
	got, err := s.ReadEvents(ctx, "a", 0, 10)
	if err != nil || len(got) != 2 || got[0].Key != "0" || got[1].Key != "2" {
		t.Fatalf("ReadEvents a = %+v, %v", got, err)
	}
	got, _ = s.ReadEvents(ctx, "a", 1, 10)
	if len(got) != 1 || got[0].Seq != 2 {
		t.Fatalf("ReadEvents after 1 = %+v", got)
	}
}

func TestEventsKeyIsIdempotent(t *testing.T) {
	s := openTest(t, t.TempDir())
	ctx := context.Background()
	e := Event{Stream: "s", Key: "k", Type: "t", OccurredAt: time.Unix(0, 0).UTC(), Payload: []byte(`{"x":1}`), Actor: "alice", Run: "run-1"}
	first, dup, err := s.AppendEvent(ctx, e)
	if err != nil || dup {
		t.Fatal(err, dup)
	}
	// A repeat by another actor, in another run, is a repeat: neither is
	// an identity, and the first event's are kept.
	e.Actor, e.Run = "bob", "run-2"
	again, dup, err := s.AppendEvent(ctx, e)
	if err != nil || !dup || again.Seq != first.Seq || again.Actor != "alice" || again.Run != "run-1" {
		t.Fatalf("repeat: %+v dup=%v err=%v", again, dup, err)
	}
	e.Payload = []byte(`{"x":2}`)
	prev, dup, err := s.AppendEvent(ctx, e)
	if !errors.Is(err, ErrEventConflict) || dup || prev.Seq != first.Seq {
		t.Fatalf("conflict: %+v dup=%v err=%v", prev, dup, err)
	}
	got, _ := s.ReadEvents(ctx, "s", 0, 10)
	if len(got) != 1 {
		t.Fatalf("stream holds %d events, want 1", len(got))
	}
	byKey, err := s.EventByKey(ctx, "s", "k")
	if err != nil || byKey.Seq != first.Seq {
		t.Fatalf("EventByKey = %+v, %v", byKey, err)
	}
	if _, err := s.EventByKey(ctx, "s", "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("EventByKey(missing) = %v", err)
	}
}

func TestEventsRefuseBadAppends(t *testing.T) {
	s := openTest(t, t.TempDir())
	for name, e := range map[string]Event{
		"no stream":  {Key: "k", Type: "t"},
		"nul stream": {Stream: "a\x00b", Key: "k", Type: "t"},
		"no key":     {Stream: "s", Type: "t"},
		"no type":    {Stream: "s", Key: "k"},
	} {
		if _, _, err := s.AppendEvent(context.Background(), e); err == nil {
			t.Errorf("%s: appended", name)
		}
	}
}

func TestPruneEventsStopsAtCutoff(t *testing.T) {
	s := openTest(t, t.TempDir())
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 2500 {
		if _, _, err := s.AppendEvent(ctx, Event{Stream: "s", Key: fmt.Sprint(i), Type: "t", OccurredAt: t0.Add(time.Duration(i) * time.Second), Payload: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.PruneEvents(ctx, "s", t0.Add(2100*time.Second))
	if err != nil || n != 2100 {
		t.Fatalf("pruned %d, %v; want 2100", n, err)
	}
	got, _ := s.ReadEvents(ctx, "s", 0, 1000)
	if len(got) != 400 || got[0].Key != "2100" {
		t.Fatalf("left %d events starting %+v", len(got), got[0])
	}
	// A pruned key may be used again; its new event takes the next seq.
	e, dup, err := s.AppendEvent(ctx, Event{Stream: "s", Key: "0", Type: "t", OccurredAt: t0, Payload: []byte(`{}`)})
	if err != nil || dup || e.Seq != 2501 {
		t.Fatalf("re-append: %+v dup=%v err=%v", e, dup, err)
	}
}
