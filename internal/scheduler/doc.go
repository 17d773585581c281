// Package scheduler decides when each watch is probed, settles it, and
// hands its outcome to delivery: one loop over one min-heap keyed on
// next_due, for the whole host. Waiting must be free: the cost grows with
// the work that is due, never with how many watches are pending.
//
// What it owns:
//   - Registration: the request's bounds (kind grammar, kind.CheckParams,
//     cadence and deadline), admission through the kinds, the deadline
//     resolved here (the kind's natural one, else the open-ended default),
//     and the row written only while its recipient runs and, for a
//     client's registration (Registration.Bounded), only while the
//     recipient holds fewer than Config.MaxPending pending watches: both
//     decided in the transaction that writes it, so racing registrations
//     cannot pass the bound.
//   - A new watch armed at its kind's first check (admit's next_check: a
//     timer's instant), clamped to [now, the deadline] and kept as the
//     row's durable next check; a kind that cannot tell is probed at once.
//   - The window (window.go): in memory only the watches due within
//     Config.Horizon ahead of now (15 min by default), read from the
//     store's due index by Prime (the first window, the overdue with it)
//     and by Run's loader, Config.Lead before the window's edge, at most
//     Config.WindowMax a read. A registration or re-arm due beyond the
//     window is written to the index only (the row's durable next check)
//     and leaves memory; a cancel, a poke or a gained partition finds a
//     watch there as well as in memory.
//   - The heap, its wake channel and at most one timer (at the earliest
//     of the heap's minimum and the loader's turn; none with nothing
//     pending); a ready queue
//     drained by a fixed pool of long-lived workers, fair by kind and by
//     recipient (none holds more than Workers-1), faults backed off.
//   - Writes on changes only: a pending answer that repeats the last one
//     rewrites nothing; next_due, attempts and the last probe's time live
//     in memory (Seen); a next check that differs from the cadence is kept
//     with the row's schedule, so Prime re-arms each watch where it was.
//   - Expiry as an observation, then a verdict: the probe at the deadline
//     is the final one, and a late probe never turns a met condition into
//     expired. Cancel and settlement race through the store's conditional
//     transitions; whichever commits first wins.
//   - Events (pokekeys.go): PokeKeys makes the pending watches of a kind
//     with one of an event's partition keys due now (the store's index
//     by partition key), coalesced as Poke is; the poked probe's fetches
//     carry the time since the poke as their cadence, so the look reads
//     anew; a hooked kind's watches registered without every get the
//     hook's fallback cadence (SetFallbacks).
//   - Pushed kinds, probed only when Poke names their subject; on a
//     cluster, only the partitions its Ownership holds (Gain, Drop, Adopt),
//     asked before a probe and before its write.
//
// What it must never do: decide whether something settled (the kind's
// answer) or how a message reaches its recipient (the Deliverer's); hold
// its lock across a store commit, a plugin call or a delivery; start a
// goroutine or a timer per watch or per batch; log a full disk
// (store.ErrStorageFull) per watch per attempt (once, until a write is
// taken again).
//
// Tick is the deterministic entry point for tests: it drains what is due
// on the workers' own code, on a fake clock, without Run.
//
// Rejected: a batch per wake-up, drained before the next (the design
// before this one). A batch waits for its slowest probe, so one kind that
// times out made every timer behind it late; long-lived workers pulling
// from a ready queue hold back only the slow kind's own watches.
package scheduler
