// Package overview composes GET /api/v1/overview from what the host
// already counts: the metrics' in-memory counters (probes, faults and
// call latency per kind, probe lag, the ready queue, pushes entering each
// state), the scheduler's heap (how many watches are armed, when it next
// wakes), the outbox's memory (pushes held and retrying), the fetch dead
// letters' last sequence number (one key), the store's counts by state
// and of the pending watches by kind, and, for a store that measures one,
// its data directory's free space and whether clients' writes are refused
// for want of it (the store's last measurement, at most a second old).
//
// It must never walk the watch rows per request: an overview is what an
// operator's console polls, and a poll whose cost grows with the pending
// watches is the cost model vigil exists to avoid. The counts by state
// read the state index's keys, and the pending by kind the store's
// pending-by-kind index's (no row is decoded), both together and at most
// once per MaxAge however often the overview is asked for; the answer
// says when they were counted.
//
// Rejected alternative: a gauge per state kept up to date by every
// transition (one more write on the hot path of every settle, and a
// count that drifts after a crash unless it is rebuilt by the same walk
// at start), or parsing /metrics' text (the overview would depend on a
// format meant for Prometheus, and on vigil_watches, which walks).
package overview
