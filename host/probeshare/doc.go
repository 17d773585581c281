// Package probeshare carries what only a pending watch's owner holds in
// memory between the nodes of a cluster: the probes so far and when the
// last began (scheduler.Seen), which the owner writes to the row only
// when what its probes see changes, and the news that it changed a watch,
// which wakes the requests waiting on it (GET /api/v1/watches/{id}?wait=)
// on every node. It speaks core NATS (no JetStream: nothing of it is
// stored) on the store's connection, under subjects that name the
// cluster's bucket, so two clusters on one NATS system never hear each
// other:
//
//	vigil.<bucket>.seen.<node>             a request for Seen, answered by that node
//	vigil.<bucket>.changed.<node>.<id>     that node changed watch id
//
// What it owns: two subscriptions per node (its request subject, and one
// wildcard over every node's changes) and the goroutine that reads each,
// started by Run and stopped when its context ends.
//
// The rules it keeps:
//   - Asking is bounded (Config.Timeout, default 250 ms) and optional: a
//     node that does not answer in time, answers with an error, or has no
//     responder (it stopped) gives ErrNoAnswer at once or at the bound,
//     and the caller shows the row's count, saying so. A request names at
//     most MaxIDs watches and is at most MaxRequestBytes; one past either,
//     or malformed, is answered with a named error code, never guessed at.
//   - Waiting stays free. A node subscribes once for every watch, never
//     per pending watch or per waiter; a change costs one message to each
//     node, only when a probe, a registration or a cancel happened, and
//     nothing runs while nothing changes. The owner always publishes (it
//     cannot know who waits elsewhere); a node skips its own messages,
//     whose waiters the scheduler woke already.
//   - A lost message costs a wait its wake, never a wrong answer: the
//     waiter reads the watch again when its bound ends, as on one host.
//
// What it must never do: decide who owns a watch (host/cluster's leases
// do; the caller names the node to ask), write the store, or wait for an
// answer past its bound on a request's path.
//
// Rejected alternatives: persisting the count and the last probe time on
// every probe, which turns each probe that saw nothing new into a write
// (the store is written on changes only, and a million pending watches
// would cost a commit per probe); asking every node instead of the
// lease's holder, a fan-out per show; a JetStream stream for the change
// news, stored and acknowledged for a wake that is worth nothing a
// second later; and a subscription per waited-on watch, which makes the
// server's interest grow with the waiters.
package probeshare
