// Package store is vigil's persistence: watch rows, their receipts and
// standing baselines, recipients and their mailboxes, and the host's event
// log (named streams of facts, each event unique by its idempotency key
// within its stream), on badger v4 behind the small Store interface, so a
// distributed backend can be added without touching the scheduler.
//
// What it guarantees:
//   - Every transition is one badger transaction, committed before the
//     call returns, and conditional on the row's current state: a row
//     settles at most once, and a cancel and a settlement cannot both win.
//   - A settlement and its mail are one transaction (SettleAndMail): the
//     row settles only if still pending, and for a running recipient its
//     message is appended and, with an active webhook, an outbox record of
//     its push is written beside it; a recipient that is not running
//     settles the row undeliverable. CarryAndMail does the same for a
//     baseline and its change; CreateIfRunning writes a row only if its
//     recipient is running in the same transaction (a *NotRunningError,
//     errors.Is ErrNotRunning, otherwise).
//   - Outbox records (ob/<recipient>, <seq>) carry a push's state, with a
//     live index (ol/) of those not final, so a start reads only those.
//     BeginPush marks one sending, and reads its message and recipient, in
//     one transaction; RecoverPushes turns every push left sending into
//     unknown; PrunePushes deletes final ones older than a cutoff and never
//     a live one.
//   - The pending index (s/pending/<id>) carries each pending row's
//     schedule: every, deadline and attempts (20 bytes), and its durable
//     next check when it has one (28). ForEachPending reads the index
//     alone; an older entry with no value is read from its row. A
//     transition of a pending row keeps its next check; SetNextCheck
//     rewrites the index entry alone, RecordProbe the row's attempts, note
//     and fault with it, each only while the row is pending.
//   - Retention is by class (Retained: settled rows, mailbox messages,
//     final outbox records, each event stream), each ordered by one time.
//     Records not keyed by time get a time index (sa/ by settled_at, ma/
//     by a message's at, pa/ by when a push became final) written in the
//     transaction that makes them retained and deleted with them. Oldest
//     reads one entry; PruneOldest deletes a bounded batch, oldest first,
//     in one transaction, never a pending row, a live push or a held-aside
//     record, and takes no lock the appends take. Both seek from the
//     class's floor, in memory, past what this process has pruned, so a
//     backlog's batches never step over the tombstones of the batches
//     before them. OnRetained tells a caller of each retained record
//     committed. When to prune is host/upkeep's. Records an older build
//     wrote carry no index entry: Prune, run at start, still walks every
//     settled row, message and push once and is their backstop (and drops
//     the entries of what it deletes). Observed items (the observe
//     streams) are Once identities; the store prunes a stream only when
//     asked to.
//   - Rows are versioned (a schema version in each row, a store version in
//     the "v" key). A row this build cannot decode (a newer release's kind
//     of state or field) is held aside verbatim: reads, lists and prunes
//     skip it, nothing rewrites it, and it never fails an operation on
//     another row. A store whose version is newer than this build, or
//     whose files badger cannot open, is refused at Open with
//     ErrStoreTooNew or ErrCorrupt; a store another process holds is
//     ErrInUse, at once, not a hang.
//   - A listing page (ListPage) walks one index from its cursor and
//     examines a bounded number of entries, so no request walks the whole
//     store: the recipient index when a recipient is named, else the
//     state index, else the rows; a state on the recipient index is
//     checked by key, and only candidate rows are decoded. Kind has no
//     index and is checked on the decoded row. CountPending counts a
//     recipient's pending watches from its index by key, decoding none.
//
// What survives what, with the options Open uses (SyncWrites off unless
// Options.SyncWrites):
//   - A process crash (kill -9) loses nothing that was committed: badger
//     writes each commit to its write-ahead log (a memory-mapped file)
//     before Commit returns, and the kernel keeps those pages after the
//     process dies. "Register answered" therefore means "the row exists".
//   - A power loss or kernel crash can lose the commits since the kernel
//     last wrote those pages back (typically seconds). With
//     Options.SyncWrites each commit is fsynced before it returns. Badger
//     v4.9 syncs each commit of a batch on its own rather than once per
//     batch, so even many concurrent writers reach only about 8,000 rows/s
//     that way (docs/BENCHMARKS.md). The default favours registration
//     speed; operators who need power-loss durability turn SyncWrites on
//     and accept that rate.
//
// What it must never do: decide anything about scheduling or delivery.
// Which transition to make, and when, is the scheduler's; whether and when
// to POST is the outbox's; the store only makes the transitions atomic and
// durable.
//
// Rejected alternative: one JSON file rewritten on every change (the
// original design this one replaces). It made every write O(all rows) and
// a single unreadable row a reason to refuse the whole file.
package store
