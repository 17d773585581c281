package store

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// A wake to one recipient more than MaxWorkCursors drops the cursor
// furthest behind (the first by name among equals), so the Work record
// stays bounded and the recipient dropped is the one whose next wait
// repeats the least.
func TestWorkCursorsAreBounded(t *testing.T) {
	w := Work{Inputs: 1000}
	for i := range MaxWorkCursors {
		w.Consume(fmt.Sprintf("r%02d", i), 10+i%3)
	}
	w.Consume("newcomer", 500)
	if len(w.Cursors) != MaxWorkCursors || w.ConsumedBy("newcomer") != 500 {
		t.Fatalf("%d cursors, the newcomer's %d", len(w.Cursors), w.ConsumedBy("newcomer"))
	}
	if _, kept := w.Cursors["r00"]; kept {
		t.Fatal("the cursor furthest behind (r00, first among equals) was kept")
	}
	if w.ConsumedBy("r03") != 10 || w.ConsumedBy("r01") != 11 {
		t.Fatalf("another cursor was dropped: %v", w.Cursors)
	}
	// A recipient already there moves without dropping anyone.
	w.Consume("r01", 900)
	if len(w.Cursors) != MaxWorkCursors || w.ConsumedBy("r03") != 10 {
		t.Fatalf("moving a kept cursor dropped one: %v", w.Cursors)
	}
}

// Whatever wakes and claims come in whatever order: no recipient's
// consumed input moves back (unless its cursor was dropped for the bound)
// or past the inputs, a wake to one recipient moves no other's, the
// claimer's is Consumed and has no cursor, and the cursors stay bounded.
func TestWorkConsumedIsPerRecipientProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := Work{State: WorkOpen}
		names := []string{"a", "b", "c", "d"}
		for range rapid.IntRange(1, 60).Draw(t, "steps") {
			before := map[string]int{}
			for _, n := range names {
				before[n] = w.ConsumedBy(n)
			}
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				w.Inputs++
			case 1:
				r := rapid.SampledFrom(names).Draw(t, "recipient")
				w.Consume(r, rapid.IntRange(-1, w.Inputs+2).Draw(t, "n"))
				for _, n := range names {
					if n != r && w.ConsumedBy(n) != before[n] {
						t.Fatalf("a wake to %s moved %s from %d to %d", r, n, before[n], w.ConsumedBy(n))
					}
				}
			case 2:
				if w.ClaimedBy == "" {
					w.Claim(rapid.SampledFrom(names).Draw(t, "claimer"), time.Unix(0, 0))
					if w.ConsumedBy(w.ClaimedBy) != w.Inputs {
						t.Fatalf("the claimer was not given every input: %+v", w)
					}
				}
			}
			for _, n := range names {
				if got := w.ConsumedBy(n); got < before[n] || got > w.Inputs {
					t.Fatalf("%s's consumed input moved from %d to %d (inputs %d)", n, before[n], got, w.Inputs)
				}
			}
			if _, has := w.Cursors[w.ClaimedBy]; has && w.ClaimedBy != "" {
				t.Fatalf("the claimer keeps a cursor: %+v", w)
			}
			if len(w.Cursors) > MaxWorkCursors {
				t.Fatalf("%d cursors", len(w.Cursors))
			}
		}
	})
}
