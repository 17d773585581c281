package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/fakeclock"
)

// HolderOf names the node each lease's view shows holding it, this node
// itself included; a lease left by an earlier process of a live node's
// name (another incarnation) is nobody's.
func TestHolderOfNamesTheLiveHolder(t *testing.T) {
	kv := bucket(t)
	clock := fakeclock.At(time.Unix(1_800_000_000, 0))
	leases := Leases(6)
	a, _ := node(t, kv, "a", clock, leases)
	b, _ := node(t, kv, "b", clock, leases)
	turn(t, a)
	turn(t, b)
	turn(t, a)
	turn(t, b)
	if err := a.sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, l := range leases {
		want := "b"
		if a.Holds(l) {
			want = "a"
		}
		if got, ok := a.HolderOf(l); !ok || got != want {
			t.Fatalf("a's HolderOf(%s) = %q, %v; want %s", l, got, ok, want)
		}
	}
	// b restarts under a new incarnation: until its new process takes
	// them, the old process's leases are nobody's.
	var bs []Lease
	for _, l := range leases {
		if !a.Holds(l) {
			bs = append(bs, l)
		}
	}
	if len(bs) == 0 {
		t.Fatal("b holds nothing")
	}
	b2, _ := node(t, kv, "b", clock, leases)
	b2.publish(context.Background(), clock.Now())
	if err := a.sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, l := range bs {
		if got, ok := a.HolderOf(l); ok {
			t.Fatalf("a's HolderOf(%s) = %q, an earlier process's lease", l, got)
		}
		// The new process itself does not take its predecessor's lease
		// for its own.
		if err := b2.sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got, ok := b2.HolderOf(l); ok {
			t.Fatalf("b's new process's HolderOf(%s) = %q, its predecessor's lease", l, got)
		}
	}
}
