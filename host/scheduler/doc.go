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
//   - The outcome is persisted (receipt unknown) before it is delivered,
//     then the receipt is persisted. A crash between the two leaves fired
//     with receipt unknown, visible in listings, and unknown is never
//     retried: a second copy of a message whose first copy may have landed
//     is worse than an uncertain one.
//   - A rejected delivery settles undeliverable, neither success nor
//     failure of the watch.
//   - Every wait has a deadline, resolved here, the one place that knows
//     now: the plugin's natural deadline (a timer's instant plus a minute)
//     or the open-ended default. An expiry is settled and delivered like
//     an outcome.
//   - Cancel and a probe's settlement share one lock: a cancel that wins
//     keeps the row cancelled and nothing is mailed; a probe that finishes
//     after a cancel is dropped.
//   - A standing watch's new baseline is persisted before its change is
//     mailed, so a crash loses at most one notice and never repeats one.
//
// What it must never do: decide whether something settled (that is the
// plugin's answer), or how a message reaches its recipient (that is the
// Deliverer's).
//
// Prime (ready) is split from Start (running) so tests drive Tick with a
// fake clock and one consumer of the heap; only the loop's own test calls
// Start.
package scheduler
