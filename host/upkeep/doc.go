// Package upkeep enforces retention while the host runs: settled rows,
// mailbox messages, final outbox records, fetch facts and dead letters are
// pruned once they are older than their class's retention (7 days each by
// default), and idempotency keys' records after 24 hours, without a
// restart.
//
// What it owns: one goroutine (Run), and a small heap of the retained
// classes keyed by when each one's oldest record comes due (the oldest
// record's time plus the class's retention), with at most one timer,
// armed for the heap's minimum. Its mutex guards that heap only.
//
// What it guarantees:
//   - Nothing periodic. A class is in the heap only while it holds a
//     record; with nothing retained there is no timer at all (NextWake
//     reports none). A class learns that it holds a record again from
//     Notify, which the store calls after each commit that writes one
//     (the store's OnRetained, part of core.Store): O(1), and a no-op
//     when the class is already due no later than the new record.
//   - When a class comes due, one bounded batch (Config.Batch, default
//     256) is pruned in its own store transaction, oldest first; the
//     class's oldest is then read again (one index entry) and re-armed:
//     at once, yielding between batches, while more are past the cutoff,
//     else at the new oldest plus the retention. A large backlog is many
//     small transactions, never one long one.
//   - It never stalls probing: it takes no lock the scheduler, delivery or
//     the store's appends take (a batch is a badger transaction beside
//     theirs, and it runs on its own goroutine), and it calls nothing of
//     theirs. The writers' only contact is Notify, which takes the
//     upkeep's mutex for a comparison; that mutex is never held across a
//     store call.
//   - In steady state it wakes about as often as records were written a
//     retention earlier, each wake one small batch of what has come due
//     since the last; a burst written together is pruned together.
//   - A class whose batch deletes nothing while it reads as due (records
//     this build holds aside) is re-armed one retention later, not
//     retried in a loop; a store error, a minute later.
//
// On a cluster. The upkeep runs on one node at a time, under the
// cluster's job lease (host.JobUpkeep), and its store's OnRetained tells
// of that node's commits only: a class that read empty would never be
// armed by a record another node wrote, and would keep it for ever (until
// the lease moved). So when the store is a Follower (natsstore, whose
// bucket every node writes), Run first subscribes to the retained
// records any node commits (FollowRetained: JetStream's push of the
// classes' time indexes and event streams, no polling) and feeds them to
// Notify on a second goroutine it owns, then primes: a record committed
// after the first read is told by the feed, one before it is in the
// read. A feed the servers end is followed again a second later, and the
// classes read again. Only the lease holder follows: the other nodes'
// upkeeps are not started. badger is held by one process and needs no
// feed. Rejected: re-reading every class's oldest on a timer, which is
// the periodic sweep below; and having every node's OnRetained publish a
// note to the holder, a second channel beside the store's own feed.
//
// What it must never do: prune observed items (the observe stream, and
// observe.skipped beside it). They are the Once identities: pruning one
// would make a re-read of an old thread new Work (seed 004). New refuses
// a class on those streams. Nor does it decide anything about what a
// record means: which records belong to a class, and which may be
// deleted (never a pending row, a live push, a held-aside record), is the
// store's.
//
// The start-time backstop. The store's Prune, run by the scheduler's
// Prime, still walks every settled row and message once at start: records
// an older build wrote carry no time index, so only that walk finds them.
// It stays there rather than in this package's first pass so that a first
// pass is as cheap as every other.
//
// Why the oldest and not Notify alone: the store is the record of what is
// retained, so the heap is always re-read from it after a prune, and a
// lost or early Notify can only make a wake-up early (a read that finds
// nothing due yet), never a record kept for ever. Notify only covers the
// one case a read cannot: a class that read empty and has been written
// since.
//
// Rejected alternative: a periodic sweep (a ticker every hour, say). It
// wakes a host that has nothing to prune, every period, for ever; it
// prunes up to a period late; and it walks each class to find what is
// old, where the oldest record's time says exactly when the next one is
// due. The scheduler's heap already shows the shape: due times in a heap,
// one timer for the minimum, nothing when nothing is due.
package upkeep
