// Package recipients owns who watches belong to: recipients' status,
// webhook, workspace and attached refs, their phase and activity reports,
// and the reconciliation that keeps their watches in line with their
// lifecycle. A watch belongs to its recipient, the one its outcome is
// delivered to, not whoever registered it.
//
// What it owns:
//   - When a recipient stops running, every pending watch of it is
//     cancelled, with the reason as the row's last note.
//   - While it runs, it has exactly the standing watches its record asks
//     for (one per ref, and the phase reminder when it opted in), said in
//     one place (standing); reconciliation compares the stored record with
//     the stored watches and repairs the difference, so it is idempotent,
//     and runs over every recipient at start (on a cluster, under a job
//     lease).
//   - Phase and activity reports: bounded, on an existing recipient, kept
//     across a PUT of the record; who reported and whether as the
//     recipient itself or seeding it.
//   - The bounds: refs and pending watches per recipient (CheckPending
//     reads the count the store keeps; a client's registration is held to
//     it again in its own transaction), every field of a PUT, a webhook secret
//     of Standard Webhooks' sizes; with WithDestinations, a webhook URL the
//     delivery guard refuses whatever DNS answers is refused at PUT. Each
//     refusal names its field or setting; nothing of a refused PUT is
//     stored.
//
// What it must never do: decide a watch's outcome or deliver anything
// (cancelling is the scheduler's transition; this package says which);
// hold rules of its own on destinations (the guard decides).
//
// Rejected: a reconciler per standing kind. Two of them would race over
// one recipient's watches; one list of entries, each deriving its watches
// from the record, makes a third standing kind one entry.
package recipients
