package cluster

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/fakeclock"
)

// A node whose plugin set differs from the cluster's refuses
// registrations, naming both digests and the kinds that differ; the
// others admit. Until its first pass it cannot tell, and admits.
func TestANodeWithAnotherPluginSetAdmitsNothing(t *testing.T) {
	kv := bucket(t)
	clock := fakeclock.At(time.Unix(1_800_000_000, 0))
	leases := Leases(4)
	clusterKinds := []string{"ci 1.0.0 " + strings.Repeat("a", 64), "observe.thread 1.0.0 ", "timer 1.0.0 " + strings.Repeat("b", 64)}
	mk := func(name, digest string, kinds []string) *Node {
		t.Helper()
		n, err := New(Config{KV: kv, TTL: testTTL, Info: Info{Node: name, Plugins: digest, Kinds: kinds}, Leases: leases, Holder: newHolder(), Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	a := mk("a", "d1"+strings.Repeat("0", 62), clusterKinds)
	b := mk("b", "d1"+strings.Repeat("0", 62), clusterKinds)
	c := mk("c", "d2"+strings.Repeat("0", 62), []string{"ci 1.1.0 " + strings.Repeat("c", 64), "http 1.0.0 " + strings.Repeat("d", 64), "observe.thread 1.0.0 "})
	if err := c.Admits(); err != nil {
		t.Fatalf("before its first pass: %v", err)
	}
	for range 2 {
		turn(t, a)
		turn(t, b)
		turn(t, c)
	}
	for _, n := range []*Node{a, b} {
		if err := n.Admits(); err != nil {
			t.Fatalf("%s: %v", n.Name(), err)
		}
	}
	err := c.Admits()
	var pe *PluginSetError
	if !errors.As(err, &pe) || !errors.Is(err, ErrPluginSetMismatch) {
		t.Fatalf("c admits: %v; want a *PluginSetError", err)
	}
	want := []string{"ci: 1.1.0 cccccccccccc here, 1.0.0 aaaaaaaaaaaa on the cluster", "http: only here", "timer: not here"}
	if pe.Node != "c" || pe.Plugins[:2] != "d2" || pe.Cluster[:2] != "d1" || strings.Join(pe.Differ, "|") != strings.Join(want, "|") {
		t.Fatalf("refusal %+v; want c, d2…, d1… and %v", pe, want)
	}
	for _, s := range append(want, "d20000000000", "d10000000000", "node c") {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("%q does not say %q", err, s)
		}
	}
}

// A node whose plugin set changes (a reload) publishes it at its next
// pass: brought to the cluster's set it admits and holds partitions
// again; moved off it, it is refused and gives them up.
func TestSetPluginsRepublishesTheSet(t *testing.T) {
	kv := bucket(t)
	clock := fakeclock.At(time.Unix(1_800_000_000, 0))
	leases := Leases(4)
	mk := func(name, digest string) (*Node, *recordingHolder) {
		t.Helper()
		h := newHolder()
		n, err := New(Config{KV: kv, TTL: testTTL, Info: Info{Node: name, Plugins: digest}, Leases: leases, Holder: h, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		return n, h
	}
	a, _ := mk("a", "d1")
	b, _ := mk("b", "d1")
	c, hc := mk("c", "d2")
	rounds := func() {
		for range 3 {
			turn(t, a)
			turn(t, b)
			turn(t, c)
		}
	}
	rounds()
	if c.Admits() == nil || hc.count() != 0 {
		t.Fatalf("c with another set admits (%v) or holds %d leases", c.Admits(), hc.count())
	}
	// No time passes: the new set goes out at once, not at the next
	// renewal a third of the TTL on.
	c.SetPlugins("d1", []string{"ci 1.0.0 x"})
	rounds()
	if err := c.Admits(); err != nil {
		t.Fatalf("c with the cluster's set: %v", err)
	}
	if hc.count() == 0 {
		t.Fatal("c with the cluster's set holds no lease")
	}
	for _, ns := range a.Status().Nodes {
		if ns.Node == "c" && (ns.Refused || ns.Plugins != "d1" || len(ns.Kinds) != 1) {
			t.Fatalf("a sees c as %+v", ns)
		}
	}
	c.SetPlugins("d3", nil)
	rounds()
	if c.Admits() == nil || hc.count() != 0 {
		t.Fatalf("c moved off the cluster's set admits (%v) or holds %d leases", c.Admits(), hc.count())
	}
}

// Admits runs on every registration: with three nodes and 64 partitions
// in the view it decodes nothing and allocates little.
func BenchmarkAdmits(b *testing.B) {
	kv := bucket(b)
	clock := fakeclock.At(time.Unix(1_800_000_000, 0))
	leases := Leases(64, "router", "upkeep")
	var nodes []*Node
	for _, name := range []string{"a", "b", "c"} {
		n, err := New(Config{KV: kv, TTL: testTTL, Info: Info{Node: name, Plugins: "d1", Kinds: []string{"ci 1.0.0 x", "http 1.0.0 y"}}, Leases: leases, Holder: newHolder(), Clock: clock})
		if err != nil {
			b.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	for range 3 {
		for _, n := range nodes {
			turn(b, n)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := nodes[0].Admits(); err != nil {
			b.Fatal(err)
		}
	}
}
