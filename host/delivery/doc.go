// Package delivery puts a watch's outcome where its recipient will see it:
// the recipient's durable mailbox, always, and its webhook when it has one.
// It implements the scheduler's Deliverer and serves mailbox reads.
//
// What it guarantees:
//   - A message lands only in the mailbox of a recipient that is running
//     at that instant (the status is read in the append's transaction);
//     otherwise the receipt is rejected and the watch settles
//     undeliverable, neither success nor failure of the watch.
//   - Each mailbox numbers its messages from 1 without gaps, so a reader
//     that passes its cursor never misses or repeats one across reconnects.
//   - A webhook POST is signed per Standard Webhooks (webhook-id is the
//     message's stable id). A 2xx within the timeout is delivered; a
//     failure before anything was sent (refused connection, DNS failure,
//     a destination the guard refuses) or a 3xx/4xx is rejected; a timeout
//     or a connection broken after the request went out, or a 5xx, is
//     unknown, and unknown is never re-sent: a second copy of a message
//     whose first may have landed is worse than an uncertain one. The
//     mailbox copy is written first in every case.
//   - Send and Notify differ in who asked. Send carries the outcome of a
//     watch someone registered. Notify carries a message on the host's own
//     initiative (a standing watch's change) and re-reads the recipient's
//     status at the moment of the POST, so a notice never reaches, and
//     never revives, a recipient that stopped meanwhile.
//   - A long-poll reader waits on one channel per recipient that an append
//     closes, and on its own deadline: no polling loop, no goroutine or
//     timer per reader beyond that deadline.
//
// What it must never do: retry an unknown delivery, log a webhook secret
// or a message's outcome detail, or reach an address the guard refuses.
package delivery
