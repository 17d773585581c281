package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/fakeclock"
)

// A node whose plugin set digest differs from the one most live nodes
// publish is assigned nothing: it holds no lease, the others split them
// all, and the status shows it refused.
func TestANodeWithAnotherPluginSetHoldsNothing(t *testing.T) {
	kv := bucket(t)
	clock := fakeclock.At(time.Unix(1_800_000_000, 0))
	leases := Leases(8, "router")
	mk := func(name, digest string) (*Node, *recordingHolder) {
		t.Helper()
		h := newHolder()
		n, err := New(Config{KV: kv, TTL: testTTL, Info: Info{Node: name, Plugins: digest}, Leases: leases, Holder: h, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		return n, h
	}
	a, ha := mk("a", "d1")
	b, hb := mk("b", "d1")
	c, hc := mk("c", "d2")
	for range 3 {
		turn(t, a)
		turn(t, b)
		turn(t, c)
	}
	exclusive(t, leases, a, b, c)
	if hc.count() != 0 {
		t.Fatalf("c, with another plugin set, holds %d leases", hc.count())
	}
	if ha.count()+hb.count() != len(leases) {
		t.Fatalf("a holds %d and b %d of %d leases", ha.count(), hb.count(), len(leases))
	}
	st := c.Status()
	if st.Plugins != "d1" {
		t.Fatalf("the cluster's digest is %q, want d1", st.Plugins)
	}
	for _, ns := range st.Nodes {
		if ns.Refused != (ns.Node == "c") {
			t.Fatalf("node %s refused %v", ns.Node, ns.Refused)
		}
	}
	// The majority leaves: c is the cluster now and takes everything.
	a.Leave(context.Background())
	b.Leave(context.Background())
	turn(t, c)
	if hc.count() != len(leases) {
		t.Fatalf("c alone holds %d of %d leases", hc.count(), len(leases))
	}
}

// The cluster's digest is the most common, the smallest on a tie.
func TestClusterDigest(t *testing.T) {
	for _, c := range []struct {
		in   map[string]string
		want string
	}{
		{map[string]string{}, ""},
		{map[string]string{"a": "x", "b": "y", "c": "y"}, "y"},
		{map[string]string{"a": "y", "b": "x"}, "x"},
		{map[string]string{"a": "b", "b": "a", "c": "b", "d": "a"}, "a"},
	} {
		if got := ClusterDigest(c.in); got != c.want {
			t.Errorf("ClusterDigest(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}
