package cluster

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

func TestAssignIsEvenAndTotal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := rapid.SliceOfNDistinct(rapid.StringMatching(`[a-z0-9]{1,8}`), 1, 9, rapid.ID[string]).Draw(t, "nodes")
		leases := Leases(rapid.IntRange(0, 300).Draw(t, "partitions"), rapid.SliceOfDistinct(rapid.StringMatching(`[a-z]{1,6}`), rapid.ID[string]).Draw(t, "jobs")...)
		got := Assign(nodes, leases)
		if len(got) != len(leases) {
			t.Fatalf("%d of %d leases assigned", len(got), len(leases))
		}
		load := map[string]int{}
		for _, l := range leases {
			n, ok := got[l]
			if !ok || !slices.Contains(nodes, n) {
				t.Fatalf("lease %s assigned to %q, not a live node", l, n)
			}
			load[n]++
		}
		lo, hi := len(leases), 0
		for _, n := range nodes {
			lo, hi = min(lo, load[n]), max(hi, load[n])
		}
		if hi-lo > 1 {
			t.Fatalf("loads from %d to %d over %d nodes: not even", lo, hi, len(nodes))
		}
		// Every node computes the same answer whatever order it lists
		// the live nodes in.
		shuffled := rapid.Permutation(nodes).Draw(t, "order")
		if again := Assign(append(shuffled, shuffled[0]), leases); fmt.Sprint(again) != fmt.Sprint(got) {
			t.Fatalf("the assignment depends on the order the nodes are listed in")
		}
	})
}

// A node leaving moves its own leases and few others': the survivors keep
// most of what they held, so a failover is not a reshuffle.
func TestAssignMovesLittleWhenANodeLeaves(t *testing.T) {
	leases := Leases(64, "router", "upkeep")
	nodes := []string{"a", "b", "c", "d"}
	before := Assign(nodes, leases)
	after := Assign(nodes[1:], leases)
	kept, had := 0, 0
	for _, l := range leases {
		if before[l] == "a" {
			continue
		}
		had++
		if after[l] == before[l] {
			kept++
		}
	}
	if kept*4 < had*3 {
		t.Fatalf("the survivors kept %d of their %d leases; want at least three quarters", kept, had)
	}
}

func TestLeaseNames(t *testing.T) {
	if p, ok := PartitionLease(17).Partition(); !ok || p != 17 {
		t.Fatalf("PartitionLease(17).Partition() = %d, %v", p, ok)
	}
	for _, l := range []Lease{JobLease("router"), "p.", "p.x", "p.-1", "n.a"} {
		if _, ok := l.Partition(); ok {
			t.Fatalf("%q read as a partition", l)
		}
	}
}
