// Package watchwait wakes the requests that wait on a watch's state
// (GET /api/v1/watches/{id}?wait=): an in-process notifier keyed by watch
// id, told of each change by the scheduler, which makes every change to a
// watch (its registration, a cancel, each probe and its settlement).
//
// What it guarantees:
//   - Nothing polls. A waiter takes its watch's channel (Wait) before it
//     reads the watch, so a change between the read and the wait is not
//     missed; Changed closes that channel, waking every waiter on the watch
//     at once, and the next waiter makes a new one.
//   - No goroutine or timer of its own: a waiter waits in its request's
//     goroutine, and the bound on how long is the request's.
//   - Changed never blocks beyond a map lookup under one mutex, so a probe's
//     path is never held up by waiters.
//   - The waiters are bounded (Limit, across all watches): one past the
//     bound is refused with ErrTooManyWaiters at once, never queued, and the
//     API answers it 503 too_many_waiters. A watch's entry lives only while
//     someone waits on it, so the map holds no more than the waiters.
//
// What it must never do: read or write the store, or decide what a change
// is. A waiter re-reads the watch and compares its version; a wake with
// nothing new (a probe that saw the same) costs one read, never a wrong
// answer.
//
// Why here and not in the store or delivery's mailbox hub. The mailbox hub
// wakes on an append, and a cancel or a pause appends nothing; a probe that
// only counts an attempt writes no row at all (writes follow state
// changes), so a hook on the store's commits would miss it. The scheduler
// sees both. Rejected: a waiter re-reading the watch every second, which
// costs CPU per waiting agent, the cost model seed 002 rules out.
package watchwait
