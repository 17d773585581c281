// Package heartbeat is the host kind heartbeat: silence noticed. A
// recipient declares heartbeats (a name, a period, a grace); a job pings
// each one's URL when it runs, and the recipient is mailed missed when no
// ping arrives within period plus grace of the last one, once per
// silence, and recovered at the next ping.
//
// This package holds the kind's rule (Decide, a pure function of the last
// ping, the heartbeat's period and grace, the time, and the baseline the
// previous check left), the kind itself, which reads the last ping fresh
// from the recipient's record at each check, and the service a ping URL
// (/api/v1/heartbeats/{token}, …/fail) calls: one write of the ping on
// the record, then a poke of the heartbeat's watch. Nothing periodic runs
// for a heartbeat: its check is due at the last ping plus period plus
// grace (the observation's next check), and a ping makes it due at once.
// The recipients' reconciler keeps one standing watch per declared
// heartbeat (internal/recipients).
//
// # What it guarantees
//
//   - missed is mailed once per silence: the baseline, persisted with the
//     mail in one transaction (the scheduler's carry), names the ping the
//     silence followed, so a check after a restart neither mails it again
//     nor forgets it.
//   - recovered is mailed once, at the first check after a ping that ends
//     a silence that was mailed.
//   - Before its first ping a heartbeat is waiting, never missed: a job
//     not yet deployed is not a job that stopped.
//   - A ping is one write (the recipient's record); the baseline moves only
//     with a mail, in the mail's transaction.
//   - A ping URL acts exactly while its heartbeat is declared: its token
//     record is written and deleted with the recipient's record.
package heartbeat
