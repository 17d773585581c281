// Package scheduler decides when each watch is probed, settles it, and
// hands its outcome to delivery: one goroutine over one min-heap keyed on
// next_due, for the whole host.
//
// The cost model is the design. Waiting must be free: the host's cost
// grows with the work that is due, never with how many watches are
// pending. So:
//   - One heap, one wake channel that Register and Cancel signal, and at
//     most one timer, armed for the heap's minimum. No goroutine, timer or
//     ticker per watch, and nothing periodic: with nothing pending there is
//     no timer at all and NextWake reports none.
//   - Due probes run on a fixed worker pool (Config.Workers, default 1). A
//     probe is one bounded plugin call; a burst of due watches queues.
//   - A pending answer rewrites nothing. next_due, the attempt count and
//     the last note live in memory; the store is written on state changes
//     only (register, settle, receipt, a baseline that moved: a standing
//     watch's snapshot, or what any kind keeps between probes).
//   - Prime re-arms recovered watches with jitter across each one's own
//     interval, so a restart with many watches does not probe them all in
//     the same instant.
//   - A pushed kind (built into the host, e.g. observe.thread) is probed
//     once at registration and then only when Poke names its subject, or
//     at its deadline: the component that changes the subject wakes the
//     watches waiting on it, so a parked wait costs nothing until then.
//
// The ordering rules, each paid for by a lost or doubled message:
//   - The outcome and its mail are one store transaction (Deliver.Settle:
//     settle-if-still-pending together with the mailbox append and the
//     push's outbox record), so a crash leaves either a pending watch,
//     probed again after the restart, or a settled one with its message:
//     never an outcome without its mail. The webhook POST leaves later from
//     delivery's outbox, never from a probe.
//   - A recipient that is not running when the watch settles makes it
//     undeliverable, in the same transaction, neither success nor failure
//     of the watch.
//   - Registration writes the row only if the recipient is running in the
//     transaction that writes it (Recipients.CreateIfRunning), so a pause
//     landing after the early check leaves no live watch behind.
//   - Every wait has a deadline, resolved here, the one place that knows
//     now: the plugin's natural deadline (a timer's instant plus a minute)
//     or the open-ended default. An expiry is settled and delivered like
//     an outcome.
//   - Cancel and a probe's settlement share one lock, and both are
//     conditional transitions in the store: whichever commits first wins,
//     and a cancel that wins keeps the row cancelled with nothing mailed.
//   - A standing watch's new baseline and its change mail are one
//     transaction (Deliver.Carry), conditional on the watch still pending,
//     so a crash neither loses nor repeats a notice and a cancel that won
//     sends no stale change.
//
// What it must never do: decide whether something settled (that is the
// plugin's answer), or how a message reaches its recipient (that is the
// Deliverer's).
//
// Prime (ready) is split from Start (running) so tests drive Tick with a
// fake clock and one consumer of the heap; only the loop's own test calls
// Start.
package scheduler
