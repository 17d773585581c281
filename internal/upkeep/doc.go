// Package upkeep enforces retention while the host runs: settled rows,
// mailbox messages, final outbox records, fetch facts, dead letters and
// idempotency records are pruned once they are older than their class's
// retention, without a restart.
//
// What it owns: one loop (Run), and a small heap of the retained classes
// keyed by when each one's oldest record comes due (its time plus the
// class's retention), with at most one timer, armed for the minimum. A
// class is in the heap only while it holds a record; Notify, which the
// store calls after each commit that writes one, arms it again. When a
// class comes due, one bounded batch is pruned in its own transaction,
// oldest first, and the class's oldest is read again. On a store that is
// a Follower (a cluster's), it also follows every node's retained records
// while it runs, which on a cluster is while its node holds its job.
//
// What it must never do: prune observed items (the observe streams are
// the Once identities; pruning one would make an old thread new Work);
// delete anything but what is past its class's cutoff (never a pending
// row, a live push, a held-aside record); take a lock the scheduler,
// delivery or the store's appends take, or hold its own across a store
// call.
//
// Rejected: a periodic sweep (a ticker every hour, say). It wakes with
// nothing to do, is up to a period late, and walks each class to find
// what is old, where the oldest record of a class already says when the
// next prune is due.
package upkeep
