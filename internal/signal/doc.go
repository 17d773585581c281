// Package signal is the host kind signal: a wait completed from outside.
// Registering one answers a capability URL (/api/v1/signals/{token},
// internal/captoken); whoever holds the URL completes the wait with an
// outcome (one of those the registration offered: approve or deny unless
// it names its own) and optional data, validated against the JSON Schema
// the registration gave. No bearer token is asked: the URL is the
// capability, shown once in the registration's answer, kept by the store
// as its hash only, never logged.
//
// # What it guarantees
//
//   - A completion settles the watch fired, with the outcome and data in
//     the message, through the store's settle-and-mail (one transaction,
//     Scheduler.Complete): the message is in the mailbox before the
//     sender is answered.
//   - On a cluster any node takes a completion (its URL reaches whichever
//     node serves the request): the store's answer-and-mail is not fenced
//     on the watch's owner, and its conditional read of the row decides
//     it against the owner's own settlement.
//   - The first completion wins: a second (or one after the deadline's
//     expiry, or a cancel) is refused with CodeAlreadySettled and the
//     watch as it settled, so the sender learns what was decided.
//   - A signal nobody completes expires at its deadline and is mailed,
//     as every watch is: the kind is never probed before it (its first
//     check is the deadline) and answers pending then.
//   - An unknown token and a malformed one answer alike (CodeNotFound),
//     before any store read for a malformed one.
//
// # Rejected
//
// Letting the completion only poke the watch, for its observe to read
// what was sent: the sent outcome would need a record of its own, and the
// wait a probe, where the completion is the fact itself; the store's
// conditional settlement already decides between it and an expiry.
package signal
