// Package reminder is the phase reminder: a standing kind built into the
// host (recipient.reminder, registered in the kind registry beside
// observe.thread) that asks a recipient still working on an old phase
// report to report its phase again. It is seed 002's phase_nudge in
// vigil's terms: a workspace is a recipient, the WORKING blend is the
// recipient's stored status and its activity counts, Grove's seeded scope
// is a phase set by a principal not acting as the recipient, and
// <grove-instruction kind="reminder"> is a mailbox message of type
// reminder.
//
// It is the first time the host speaks on its own initiative rather than
// on a registration or an outside change, so nobody chose to send this
// text, and it must never reach a recipient that is not demonstrably
// working. What it guarantees:
//   - Eligibility is one pure function, Decide, over Evidence, and each of
//     its clauses excludes a case a timer alone gets wrong: the recipient
//     is running and opted in (reminder_every on its record); its phase was
//     reported by the recipient itself, not seeded (having a phase is not
//     having reported one); the phase is not handoff or blocked; the report
//     is at least one interval old; it has not been reminded of this report;
//     and its activity (replies, tool calls) moved since the previous check,
//     which is what tells "working on" from a stall or one long tool call.
//   - One reminder per report, never one per interval: a three-hour build
//     is a long task, not a stale claim. The report reminded of
//     (reminded_for, the report's reported_at) and the counts last seen are
//     the watch's baseline, persisted on the row by the scheduler before
//     the message is mailed (one transaction), so a restart neither
//     re-reminds nor forgets.
//   - Evidence is read fresh from the store at each check (one recipient
//     read per opted-in recipient per interval, on a scheduler worker),
//     never from a cache or a projection that could still say running for
//     a recipient that stopped.
//   - Delivery is the notice path (delivery.Carry, store.CarryAndMail): the
//     message lands only in the mailbox of a recipient running in the
//     transaction that writes it, and its webhook push is a notice the
//     outbox sends only if the recipient still runs when its turn comes. A
//     reminder never revives a stopped recipient, and a record that is gone
//     is never recreated.
//   - The message is short (one sentence, the phase and how old its report
//     is), of its own type reminder, never peer mail and never a watch's
//     outcome.
//   - The kind declares itself standing in its Info. Its watches are the
//     reconciler's (host/recipients): Admit refuses a registration without
//     the reconciler's mark (WithReconciler), since a second watch for one
//     recipient would remind twice of one report.
//
// What it must never do: write anything itself (the scheduler persists
// the baseline and delivery mails), keep evidence between checks outside
// the baseline, or send to a recipient the store does not say is running.
//
// Rejected: reading the interval only from the watch's params. The params
// carry it (a changed interval is a new watch, whose row's cadence is that
// interval), but Decide reads the record's, so an opt-out takes effect at
// the next check even before the reconciler cancels the watch. A new
// watch (after an interval change, or a pause and a resume) starts with no
// baseline and reminds of nothing at its first check.
package reminder
