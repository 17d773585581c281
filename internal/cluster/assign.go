package cluster

import (
	"hash/fnv"
	"slices"
	"strconv"
)

// Lease names one thing a single node may hold at a time: a partition of
// the watches, or a job that must run once per cluster.
type Lease string

// PartitionLease is partition p's lease.
func PartitionLease(p int) Lease { return Lease("p." + strconv.Itoa(p)) }

// JobLease is the lease of the cluster-wide job name (the observe router,
// the retention upkeep).
func JobLease(name string) Lease { return Lease("j." + name) }

// Partition is the partition a lease names, false for a job's lease.
func (l Lease) Partition() (int, bool) {
	s := string(l)
	if len(s) < 3 || s[:2] != "p." {
		return 0, false
	}
	p, err := strconv.Atoi(s[2:])
	if err != nil || p < 0 {
		return 0, false
	}
	return p, true
}

// Leases is the lease set of a cluster with n partitions and the jobs
// named, partitions first.
func Leases(n int, jobs ...string) []Lease {
	out := make([]Lease, 0, n+len(jobs))
	for p := range n {
		out = append(out, PartitionLease(p))
	}
	for _, j := range jobs {
		out = append(out, JobLease(j))
	}
	return out
}

// Assign says which of nodes should hold each lease. Every node computes
// it from the same live set and gets the same answer, so no node has to
// tell another what to take.
//
// Each node gets len(leases)/len(nodes) leases, and the first
// len(leases)%len(nodes) nodes by their own hash one more: no two nodes
// differ by more than one. Within those quotas each lease goes to the node
// that ranks it highest (rendezvous hashing), so a node joining or leaving
// moves about the leases it takes or gives up, not a reshuffle of all of
// them. Rejected: lease i to node i mod n, even but moving almost every
// lease when one node goes; plain rendezvous hashing, stable but uneven by
// a quarter at 64 partitions over three nodes.
func Assign(nodes []string, leases []Lease) map[Lease]string {
	out := make(map[Lease]string, len(leases))
	if len(nodes) == 0 {
		return out
	}
	nodes = slices.Clone(nodes)
	slices.Sort(nodes)
	nodes = slices.Compact(nodes)
	byHash := slices.Clone(nodes)
	slices.SortFunc(byHash, func(a, b string) int { return cmpHash(hash(a, ""), hash(b, ""), a, b) })
	quota := make(map[string]int, len(nodes))
	for i, n := range byHash {
		quota[n] = len(leases) / len(nodes)
		if i < len(leases)%len(nodes) {
			quota[n]++
		}
	}
	ranked := make([]string, len(nodes))
	for _, l := range leases {
		copy(ranked, nodes)
		slices.SortFunc(ranked, func(a, b string) int { return cmpHash(hash(a, l), hash(b, l), a, b) })
		for _, n := range ranked {
			if quota[n] > 0 {
				quota[n]--
				out[l] = n
				break
			}
		}
	}
	return out
}

// cmpHash orders by hash, highest first, and by name on a tie.
func cmpHash(ha, hb uint64, a, b string) int {
	switch {
	case ha > hb:
		return -1
	case ha < hb:
		return 1
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func hash(node string, l Lease) uint64 {
	h := fnv.New64a()
	h.Write([]byte(node))
	h.Write([]byte{0})
	h.Write([]byte(l))
	// FNV's high bits mix poorly for short keys that differ at the end;
	// one round of a 64-bit finalizer spreads them.
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}
