// Package recipients owns who watches belong to: recipients' status,
// webhook and attached refs, and the reconciliation that keeps their
// watches in line with their lifecycle.
//
// A watch belongs to its recipient, the one its outcome is delivered to:
// not whoever registered it, not whatever its predicate names. So:
//   - When a recipient stops being running, every pending watch whose
//     recipient it is (waits and standing watches alike) is cancelled, with
//     the reason as the row's last note. A probe that finishes after that
//     cancel mails nothing (the store's settle-if-pending decides: see
//     host/scheduler).
//   - While a recipient runs, it has exactly the standing watches its
//     record asks for: one per attached ref, and one phase reminder
//     (host/reminder) at its reminder_every when it opted in; none for a
//     ref it no longer has or an interval it left. Which standing watches
//     a record asks for is said in one place (standing, a list of entries
//     each deriving its watches from the record), so a third standing
//     kind is one entry there, never a second reconciler racing this one.
//     Nobody registers standing watches by hand: the reconciler's
//     registrations carry the reminder's mark, which its Admit requires.
//   - A recipient reports its phase (a name from a small grammar, bounded
//     text) and its activity counts (bounded steps, which only grow); the
//     record keeps who reported the phase and whether that principal acted
//     as the recipient itself (the API decides, and says so) or seeded it.
//     A report needs an existing recipient and creates none; a PUT of the
//     record keeps the reports and the opt-in (the store does, in the
//     transaction), so a client replacing its webhook cannot erase them.
//   - Reconciliation compares the stored record with the stored watches and
//     repairs the difference, so it is idempotent: a lost event, a crash or
//     a restart is repaired by the next pass. One pass runs over every
//     recipient at start (on a cluster, on one node at a time: the core
//     runs it under a job lease).
//   - A recipient is bounded: at most Limits.MaxRefs refs (a PUT past it
//     is refused whole) and Limits.MaxPending pending watches
//     (CheckPending refuses a registration at the bound from the count the
//     store keeps, and a client's registration is held to it again in its
//     own transaction, so racing ones cannot pass it). Both refusals name
//     the setting that raises them.
//   - Every field of a PUT is bounded: a webhook URL at most
//     MaxWebhookURL bytes and a secret whose key is of the Standard
//     Webhooks sizes (webhooks.CheckSecret: 24 to 64 bytes), a workspace
//     at most MaxWorkspace bytes, each ref's kind of the grammar and its
//     params within kind.CheckParams's bounds; each refusal names its
//     field, and nothing of a refused PUT is stored.
//   - With WithDestinations, a webhook URL whose host the delivery guard
//     refuses whatever DNS answers is refused at PUT, naming
//     webhook_allow: a literal address in any spelling, or a name whose
//     addresses are fixed (localhost), as netguard.LiteralResolver reads
//     them, when the guard's CheckAddr refuses every one of them. The
//     guard decides; this package holds no rules of its own.
//
// What it must never do: decide a watch's outcome, or deliver anything.
// Cancelling is the scheduler's transition; this package only says which.
package recipients
