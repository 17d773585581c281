// Package probeshare carries what only a pending watch's owner holds in
// memory between the nodes of a cluster: the probes so far and when the
// last began (scheduler.Seen), and the news that the owner changed a
// watch, which wakes the requests waiting on it on every node. It speaks
// core NATS on the store's connection (nothing of it is stored), under
// subjects that name the cluster's bucket:
//
//	vigil.<bucket>.seen.<node>             a request for Seen, answered by that node
//	vigil.<bucket>.changed.<node>.<id>     that node changed watch id
//	vigil.<bucket>.poke.<node>             that node took an event naming these keys (JSON)
//
// What it owns: two subscriptions per node (its request subject, and one
// wildcard over every node's changes), a third over every node's pokes
// when Config.Poked is set, made by Listen and ended by Close,
// and the readers Run runs. Asking is bounded (Config.Timeout) and
// optional: no answer in time, an error or no responder is ErrNoAnswer,
// and the caller shows the row's count. A request past MaxIDs or
// MaxRequestBytes, or malformed, is answered with a named code. A node
// skips its own change and poke messages; a lost one costs a wait its
// wake, or a watch its early look, never a wrong answer.
//
// What it must never do: decide who owns a watch (internal/cluster's leases
// do; the caller names the node to ask), write the store, or wait past its
// bound on a request's path.
//
// Rejected: a subscription per waited-on watch. It makes the servers'
// interest grow with the waiters, where one wildcard per node costs the
// same whatever is waited on (RATIONALE.md says why the owner is asked at
// all).
package probeshare
