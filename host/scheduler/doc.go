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
//   - The heap only moves what is due into a ready queue; a fixed pool of
//     long-lived workers (Config.Workers, default 4, at most 16, never
//     scaled with the watches) drains it continuously. No batch and no
//     barrier: a slow probe holds one worker, never the next due watch.
//     The workers belong to the scheduler: Run returns once
//     they have all exited.
//   - Fairness by kind and by recipient. A worker reads a due row (the
//     probe needs it anyway) and files it under its kind and recipient; a
//     free worker takes the oldest due watch of the kind, and within it
//     of the recipient, with the fewest probes in flight, and no kind and
//     no recipient holds more than Workers-1 at once. So a slow kind, or
//     a recipient with a thousand due watches, waits behind itself: alone
//     it can never hold the last worker. The ready queue costs
//     O(log n) in the due work per operation, nothing in the pending.
//   - A fault (timeout, trap, memory, off contract) or a plugin error
//     backs the watch off: from when the probe came back, its cadence
//     doubled once per fault in a row (twice the cadence after the
//     first), capped at Config.MaxBackoff, never past its deadline. The
//     count lives in memory; any answer ends it.
//   - A pending answer that repeats the last one rewrites nothing. The
//     store is written on changes only: register, settle, receipt, a
//     baseline that moved (a standing watch's snapshot, or what any kind
//     keeps between probes), a first probe, a note or a fault that
//     differs from the row's, and a next check that differs from the
//     row's durable one. next_due, the attempt count and when the last
//     probe ran live in memory between those writes (Seen).
//   - A next check is durable when the kind's hint differs from now +
//     every (earlier or later): it is written with the row's schedule, in
//     the pending index entry, once per new value, and the write is made
//     on the worker after the probe, never under the lock. A hint that is
//     only the cadence clears it.
//   - Prime arms each recovered watch at its durable next check; a watch
//     never probed at once (it was due at registration); only a watch
//     without a next check at a random point of its own interval, so a
//     restart does not probe those in the same instant. The overdue are
//     spread, oldest due first, at Config.OverdueRate a second (what the
//     workers are assumed to probe): a few within milliseconds, fewer than
//     the rate within a second, more over as long as the rate needs, and
//     never over their whole interval. A timer due during the downtime
//     fires within a second of the restart; one due after it fires on its
//     instant, with no probe before.
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
//     or the open-ended default. A natural deadline already past at
//     registration becomes the registration instant: the watch is probed
//     at once, not refused (a timer whose instant has passed fires). An
//     expires_at before the natural deadline is refused (invalid_field):
//     it ends the wait before the subject can settle, so the watch could
//     only expire.
//   - A registration is bounded before anything is written or any kind
//     is asked: a kind name of the grammar, params within the host's size
//     and depth (kind.CheckParams), a cadence from MinEvery to
//     MaxDeadline (a kind's longer default is held to it). A cadence
//     longer than the longest deadline would never probe before expiry.
//   - Expiry is an observation, then a verdict. A probe at or past the
//     deadline is the final one: a settled answer fires; a pending one (a
//     fault or a plugin error included) expires. A late probe never turns
//     a met condition into expired. The expiry's outcome summary carries
//     that observation's note ("…; last observed: CI run 7 in progress"),
//     which is also the row's last note. An expiry is settled and
//     delivered like an outcome.
//   - Cancel and a probe's settlement race through the store, not a lock:
//     the settlement is settle-if-still-pending together with its mailbox
//     append (Deliver.Settle, one transaction; store.ErrNotPending
//     otherwise), and cancel is cancel-if-still-pending. The store's
//     conditional transitions (badger's transactions; any backend must
//     pass store/storetest) make the two commits serial, so whichever
//     commits first wins and the loser writes and sends nothing: a cancel
//     that wins keeps the row cancelled with nothing mailed; a probe that
//     finishes after it is dropped. The scheduler's mutex guards the
//     in-memory heap, index and ready queue only, and is never held
//     across a store commit, a plugin call or a delivery.
//   - A standing watch's new baseline and its change mail are one
//     transaction (Deliver.Carry), conditional on the watch still pending,
//     so a crash neither loses nor repeats a notice and a cancel that won
//     sends no stale change. The change is mailed as changed, or as the
//     type a host kind's observation names (the phase reminder's
//     reminder); a plugin's observation names none.
//
// Waiting on a watch (GET /api/v1/watches/{id}?wait=) is told of each
// change here, where every change is made: after a registration, a
// cancel, and the end of each probe (its write, if any, and its re-arm),
// through a watchwait.Notifier (WaitChange). The last case has no store
// write when the probe saw nothing new, which is why the hook is the
// scheduler's and not the store's. On a cluster the owner's changes reach
// the other nodes' waiters through Config.OnChange and Notify (the core
// carries them, host/probeshare), and Seen is what the owner answers when
// another node shows the watch. A cancel of a watch another node holds
// keeps that owner's count (Config.OwnerSeen), else the row's.
// On a cluster (Config.Ownership set) the scheduler holds only the
// watches of the partitions its node holds leases on. A watch's partition
// is its id's slot modulo the partition count (store.ID.Partition): the
// slot is the hash of the partition key admit names (the resource the
// watch reads), else random, so every watch on one resource shares a
// partition and no entry grows a field for it. Register writes every
// watch and arms only its own; Gain arms a partition's pending watches
// when the node takes its lease, Drop forgets them when it loses it, and
// Adopt arms a watch another node registered in an owned partition. A
// probe asks Ownership before it calls the plugin and again before it
// writes: a partition that moved meanwhile gets nothing of the probe, and
// the backend's revision check refuses what slips between the two.
// An Ownership that is also a Gate may refuse registrations outright (a
// node whose plugin set is not the cluster's): Register asks it first,
// before it creates a recipient or calls admit, so a refused node writes
// nothing.
// A due
// watch whose read or settlement the store did not answer is tried again
// after the least interval (MinEvery), not its cadence: an election on
// the servers is over in seconds. On a cluster a row not found within
// seconds of its registration is read again rather than forgotten, since
// a node told of another's registration may read before the servers
// show it.
//
// What it must never do: decide whether something settled (that is the
// plugin's answer), or how a message reaches its recipient (that is the
// Deliverer's); hold its lock across a store commit, a plugin call or a
// delivery; or start a goroutine per watch or per batch outside Tick.
//
// Prime (ready) is split from Run (running) so tests drive Tick with a
// fake clock: Tick moves what is due into the ready queue and drains it on
// the workers' own code (the same fairness and caps), returning when it is
// done. The isolation tests run the scheduler's Run itself on the fake clock, waiting on
// channels for the probes they hold.
//
// Rejected alternatives:
//   - A batch per wake-up, drained before the next (the design before this
//     one): a batch waits for its slowest probe, so two watches of a kind
//     that times out made a timer seconds late.
//   - A lock shared by cancel and settlement (seed 002's words): it was
//     held across the store commit and so serialised every settlement on
//     the probes' path; the store's conditional transitions give the same
//     "one of them wins" without it.
//   - Keeping each watch's kind and recipient in its entry, to be fair
//     without reading the row: one pointer more takes the entry from the
//     48-byte size class to 64 and makes the collector scan it, for each
//     of a million pending watches, where reading the row of a due watch
//     is work the probe does anyway.
//   - Scaling the pool with the backlog: the pool is the host's bound on
//     concurrent plugin calls, and the caps already keep one worker free.
package scheduler
