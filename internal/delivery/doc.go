// Package delivery puts a watch's outcome where its recipient will see it:
// the recipient's durable mailbox, always, in the transaction that settles
// the watch, and its webhook, later, from an outbox of its own. Delivery
// implements the scheduler's Deliverer and serves mailbox reads; Outbox
// sends the webhook pushes (docs/webhooks.md).
//
// What it owns:
//   - Settle and Carry, one store transaction each: the watch's new state
//     (only while it is still pending), its message, and the push record
//     when the recipient has an active webhook. A recipient not running at
//     that instant makes the watch undeliverable. Mailboxes number their
//     messages from 1 without gaps; long polls wake on an append.
//   - The Outbox: a fixed pool of workers, one request in flight per
//     recipient, first attempts in mailbox order, retries on the Standard
//     Webhooks schedule from one heap with at most one timer. A push is
//     marked sending durably before its request goes out; Run (on a
//     cluster, Gain, per push partition) records every push found sending
//     unknown and never sends it again. A request whose headers went out
//     without an answer is unknown; a 5xx, a 429 or an unreachable
//     receiver is retried; another 4xx is failed, a 410 disables the
//     webhook. Errors are classified by type, never by their text.
//   - On a cluster, only the pushes of the push partitions its node holds
//     (Claim, Gain, Drop), told of each by the store's feed.
//
// What it must never do: send an unknown push again; send anything from a
// probe's path; mail a recipient that is not running; write an outcome
// without its mail.
//
// Rejected: a goroutine per POST, started by the settlement. It has no
// order, no bound and nothing to stop at shutdown, and a crash between the
// settlement and the POST loses the push; an outbox record written in the
// settlement's transaction survives the crash and is sent by workers the
// host bounds.
package delivery
