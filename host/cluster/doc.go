// Package cluster is how vigil nodes sharing one NATS JetStream cluster
// divide the work: a fixed set of leases (the partitions of the watches,
// and the jobs that must run once per cluster), each held by one node at a
// time through a key in a JetStream key-value bucket whose TTL is the
// lease's.
//
// What it owns: the leases bucket (created on first start, verified on
// later ones; named after the store's bucket, LeaseBucket, so two
// clusters sharing one NATS system through different store buckets never
// hold each other's leases), each node's own key (how the others know it is live), and
// one goroutine per node (Run) that renews what the node holds, gives up
// what the assignment moves elsewhere and takes what moves to it. The
// assignment (Assign) is a pure function of the live nodes, so every node
// computes the same one and none tells another what to take: even within
// one lease, and moving little when a node comes or goes.
//
// The rules it keeps:
//   - Create to win, update on the revision to renew (JetStream's own KV
//     lease pattern): a lease changes hands only through the servers, and
//     a renewal by a node that lost it is refused by the revision another
//     node wrote.
//   - A lease is trusted only until the send time of its last renewal
//     plus the TTL minus a margin (River's leader rule): Holds answers
//     false from then on, and a pass that finds a lease overdue tells the
//     Holder it is lost before it writes anything. The servers expire the
//     key no sooner than the TTL after they received that renewal, so a
//     paused node stops before anyone else can have started.
//   - A node stopping cleanly (Run's context ends) deletes its leases and
//     its key, so the others take over at once; a node that dies leaves
//     them to expire, and the servers' expiry markers wake the others,
//     who take over within the TTL of the last renewal, with no polling.
//   - The view the watcher builds is checked against the servers where
//     it has gone quiet: a key not heard of for longer than the TTL is
//     read again (a live key is rewritten every third of the TTL), since
//     the watcher's consumer is recreated when the bucket's stream
//     changes leader and a deletion can fall in between; a lease the
//     view kept showing taken would otherwise be no one's. A renewal
//     that comes back after its trust ran out tells the holder the lease
//     is gained again, for what it dropped while Holds said no.
//   - A node holds leases only when its plugin set digest (Info.Plugins)
//     is the cluster's: the one most live nodes publish, the smallest on a
//     tie (ClusterDigest). The assignment is computed over those nodes
//     alone, so a node that lacks a plugin another admitted a watch with
//     owns none of the watches; it logs why once and its status shows it
//     refused. Nor does it take registrations (Admits answers a
//     *PluginSetError naming both digests and the kinds that differ): a
//     watch of a kind only it serves would be settled unwatchable by
//     whichever node owns it. A reload that changes its set is published
//     at once (SetPlugins), so it is refused, or admitted again, within a
//     pass. Rejected: distributing the plugins through JetStream's object
//     store, one more replicated thing that must agree before a watch is
//     safe (RATIONALE.md).
//
// What it must never do: decide ownership anywhere but in the servers (no
// node-to-node messages, no clock comparisons between nodes), or keep
// acting on a lease past its trust. Fencing the writes themselves is the
// store's: every transition a node writes is conditional on the row's
// revision, so a stale owner's write is refused even inside the margin.
//
// Rejected: a consensus of vigil's own (RAFT between vigil nodes), when
// JetStream already replicates the bucket; a single leader that hands out
// partitions, one more lease to lose and a hop for every move; expiry
// times written into the values and compared across nodes' clocks.
package cluster
