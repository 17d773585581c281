// Package cluster is how vigil nodes sharing one NATS JetStream cluster
// divide the work: a fixed set of leases (the partitions of the watches,
// and the jobs that must run once per cluster), each held by one node at a
// time through a key in a JetStream key-value bucket whose TTL is the
// lease's.
//
// What it owns: the leases bucket (named after the store's, LeaseBucket),
// each node's own key (how the others know it is live, with its plugin set
// digest and kinds), and one loop per node (Run) that renews what the
// node holds, gives up what the assignment moves elsewhere and takes what
// moves to it. The assignment (Assign) is a pure function of the live
// nodes whose plugin set is the cluster's, so every node computes the same
// one; a node of another set holds nothing and refuses registrations
// (Admits). A lease changes hands only through the servers (create to
// win, update on the revision to renew), and is trusted only until its
// last renewal's send time plus the TTL minus a margin. A node stopping
// cleanly deletes its leases at once; a dead one leaves them to expire.
//
// What it must never do: decide ownership anywhere but in the servers (no
// node-to-node messages, no clock comparisons between nodes), or keep
// acting on a lease past its trust. Fencing the writes themselves is the
// store's (a partition's epoch, written by its holder).
//
// Rejected: a consensus of vigil's own (RAFT between vigil nodes), when
// JetStream already replicates the bucket; also a single leader handing
// out partitions (one more lease to lose and a hop for every move).
package cluster
