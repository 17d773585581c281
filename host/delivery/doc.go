// Package delivery puts a watch's outcome where its recipient will see it:
// the recipient's durable mailbox, always, in the transaction that settles
// the watch, and its webhook, later, from an outbox of its own. Delivery
// implements the scheduler's Deliverer and serves mailbox reads; Outbox
// sends the webhook pushes.
//
// What it guarantees:
//   - Settle and Carry are one store transaction each: the watch's new
//     state (conditional on it still being pending), its message, and the
//     message's push record when the recipient has an active webhook. A
//     cancel that commits first wins and nothing is mailed; a failure
//     anywhere leaves none of it. A message lands only in the mailbox of a
//     recipient running at that instant; otherwise the watch settles
//     undeliverable, neither success nor failure of the watch. A mailed
//     watch's receipt is delivered: the mailbox is the durable channel.
//   - Each mailbox numbers its messages from 1 without gaps, so a reader
//     that passes its cursor never misses or repeats one across reconnects.
//     A message's at is when it was written.
//   - The Outbox sends each push on a small fixed pool of workers (4 by
//     default), never on a probe's path. A recipient has at most one
//     request in flight, so a slow receiver holds one worker, and its
//     first attempts go out in mailbox order; a push waiting for a retry
//     waits on the retry heap, not in its recipient's line, and holds back
//     nothing after it.
//   - A push is marked sending durably before its request goes out. Run
//     (on a cluster, Gain, for its partition) records every push found
//     sending unknown (a request may have gone out before the host
//     stopped) and never sends it again.
//   - A POST is signed per Standard Webhooks; webhook-id is the message's
//     stable id on every attempt. A 2xx is delivered. A send that never
//     reached the receiver (refused connection, failed name lookup, a
//     connect or TLS failure) and a 5xx or 429 (after Retry-After, if
//     later) are retried on the Standard Webhooks schedule, then failed.
//     Another 4xx or a 3xx is failed at once; a 410 also disables the
//     recipient's webhook, on the recipient. A request whose headers went
//     out and got no answer is unknown, never sent again. Errors are
//     classified by type and by whether the headers were written, never
//     by their text.
//   - Retries are scheduled by due time on one heap with at most one
//     timer, owned by the Outbox's loop: nothing periodic, and with no
//     retry waiting no timer at all.
//   - A change notice (Carry) is pushed only to a recipient running when
//     its turn comes: the outbox re-reads the recipient in the transaction
//     that marks the push sending, so a notice never reaches, and never
//     revives, a recipient that stopped meanwhile.
//   - A long-poll reader waits on one channel per recipient that an append
//     closes, and on its own deadline: no polling loop, no goroutine or
//     timer per reader beyond that deadline.
//   - The Outbox's goroutines (one loop, its workers) run in Run, which
//     returns once they have stopped; a request in flight when its context
//     ends is unknown if its headers went out, else put back for the next
//     start.
//
// On a cluster (OutboxConfig.Partitions) the Outbox of each node sends the
// pushes of the recipients whose push partition (store.PushPartition, the
// recipient id's slot modulo the partition count) its node holds, and no
// other: Enqueue ignores the rest; Claim (as the lease is gained) holds a
// partition, queuing what is told of it unsent; Gain recovers a claimed
// partition's pushes left sending (unknown) and loads its live ones
// before sending any of them; and Drop (as the lease is lost) forgets what
// it queued of a partition and starts no new attempt of it (one in flight
// finishes). Run then recovers nothing: a node that
// restarts never turns unknown a push another live node is sending. Which
// partitions are held is the cluster's (host/core gains and drops them
// with the leases), and two nodes never both begin one attempt because
// the store fences BeginPush on the push record.
//
// A long poll (Read with a wait) wakes on this process's appends through
// its hub, and, when the backend is a MailboxWaiter (store/natsstore), on
// any process's: on a cluster a watch is settled by its partition's
// owner, not by the node the reader polls.
//
// What it must never do: send an unknown push again, send anything from a
// probe's goroutine, log a webhook secret or a message's outcome detail,
// or reach an address the guard refuses.
//
// Why an outbox: the POST used to run on the probe's goroutine after the
// outcome was persisted with receipt unknown, so a receiver answering in
// 8 s delayed every watch behind it, and a crash between the commits left
// an outcome without its mail. Rejected alternative: a goroutine per POST,
// which has no order per recipient, no bound, and nothing to stop or
// recover at a restart. See RATIONALE.md and docs/webhooks.md.
package delivery
