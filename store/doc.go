// Package store is vigil's persistence: watch rows, their receipts and
// standing baselines, recipients and their mailboxes, and the host's event
// log (named streams of facts, each event unique by its idempotency key
// within its stream), on badger v4 (Badger, opened by Open); and the
// types and sentinel errors every backend shares.
//
// Where the seam is. No component of the host names Badger: each
// declares the few methods it uses where it uses them, and the core holds
// the backend as a core.Store (host/core), their union, opened by
// core.Config.OpenStore (Open in a directory by default). Another backend
// is another package that returns a core.Store with these types and
// these errors, and what it must keep is pinned by the backend
// conformance suite, store/storetest, which it runs from its own tests as
// TestBackendConformance runs it here. The guarantees below are Badger's;
// the suite holds every backend to those the components rely on (the
// conditional transitions, SettleAndMail, the pending schedule, mailbox
// sequences and cursors, the outbox, held-aside rows, events idempotent
// by key, Work, retention by class), not to badger's means (its files,
// versions, group commit, indexes).
//
// Moving a store. ExportRecords and ImportRecords (export.go) read and
// write the store's logical records (Record: a family, its key's parts,
// the value as stored) for store/storecopy, which copies a store into
// another backend's and back; the store version and the pending-by-kind
// marker are the store's own and not records. An import writes by key
// and checks nothing, so it is for a store no host serves.
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
//   - The pending-by-kind index (pk/<kind>/<id>, a key with no value) holds
//     one entry per pending row, written in the transaction that makes
//     the row pending (Create, CreateIfRunning) and deleted in the one
//     that moves it out (Settle, a cancel, SettleAndMail, a pause's
//     cancels), through the same two helpers that move the state index,
//     so CountPendingByKind reads keys alone and decodes no row. A
//     held-aside row has none. Rows an older build wrote have none
//     either: Open, while the marker key "pkv" is absent, indexes every
//     pending row from the state index in batches of 1,000 (each its own
//     transaction, reading each row's kind), then writes the marker; an
//     interrupted backfill runs again whole at the next Open. A store
//     opened by an older build after this one (a downgrade, then an
//     upgrade) keeps the marker while that build wrote no entries: its
//     counts by kind are off until the marker is deleted by hand, which
//     rebuilds them at the next Open.
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
//   - A creating request's idempotency key (idem.go: an *Idem the
//     request's context carries, store.WithIdem) is read first inside the
//     transaction of the request's one write (CreateIfRunning, Create,
//     AppendEvent, ClaimWork, CompleteWorkAs, ReportPhase,
//     ReportActivity), and its record (ik/<principal>\x00<key>: the
//     request's fingerprint and answer) written in it, with its time
//     index entry (ia/): the same request again is a *Replay with the
//     first answer and writes nothing, another request ErrIdemReused, and
//     of two at once the transaction's conflict lets one commit. A write
//     that is refused keeps no key; no other write reads one. The records
//     are the retained class RetainedIdem.
//   - A listing page (ListPage) walks one index from its cursor and
//     examines a bounded number of entries, so no request walks the whole
//     store: the recipient index when a recipient is named, else the
//     state index, else the rows; a state on the recipient index is
//     checked by key, and only candidate rows are decoded. A listing's
//     kind is checked on the decoded row (the pending-by-kind index
//     serves the counts only). CountPending counts a
//     recipient's pending watches from its index by key, decoding none.
//
// What survives what. A write is acknowledged when the call that makes
// it returns without error: Create and CreateIfRunning (a registration),
// SettleAndMail and CarryAndMail (an outcome and its mail), AppendIfRunning,
// the outbox's push records, AppendEvent (an observed record), the
// recipient writes and the Work routes. All of them commit through one
// path (update), so all of them get the guarantee Options chose:
//   - Options.SyncWrites (vigil serve's default, --fsync): a write is
//     acknowledged only once it is on stable storage. It survives a
//     process crash (kill -9), a kernel crash and a power loss. After its
//     transaction commits, the writer waits for a sync that started after
//     its commit (group commit, below); a lone writer waits for one fsync.
//     A sync that fails fails its writers and every later write (ErrSync):
//     after a failed fsync the kernel may have dropped the pages, and a
//     later fsync can succeed without them, so nothing more is promised
//     until the store is reopened.
//   - SyncWrites off (--fsync=false, fsync: false, VIGIL_FSYNC=false): a
//     write is acknowledged once badger has written it to its write-ahead
//     log, a memory-mapped file. It survives a process crash (kill -9, an
//     out-of-memory kill, a panic): the kernel keeps those pages after the
//     process dies. A kernel crash or a power loss can lose what the
//     kernel had not yet written back, typically the last seconds of
//     acknowledged writes, and a fired watch may then fire again.
//   - SyncEachCommit (with SyncWrites): badger's own SyncWrites, one fsync
//     per commit, shared by none; the same guarantee at a fraction of the
//     rate, kept to be measured against (docs/BENCHMARKS.md).
//
// Any other backend states its guarantee the same way, per setting. For
// NATS JetStream (the cluster backend the design plans) the file store
// syncs on an interval by default, so a single replica acknowledges before
// the disk unless the server runs with sync_always; replicas (R3) are the
// usual answer, surviving the loss of a node rather than a power cut of
// all of them.
//
// What a reader sees: a commit is visible to readers as soon as badger
// has applied it, before its sync finishes. ReadMailbox waits, after its
// read, for a sync that covers what it read (at once when nothing has been
// committed since the last sync), so a mailbox reader never moves its
// cursor past a message a power loss could undo. Other reads (a watch's
// GET, a listing, AppendEvent's first look for a duplicate) may show, for
// at most one sync, a write that a power loss in that window would undo;
// its writer has not been answered yet. A kill -9 undoes nothing either
// way.
//
// Group commit. badger v4.9.6 does not group synced commits: with its
// SyncWrites each request of a write batch msyncs the log on its own. So
// the store opens badger with SyncWrites off and syncs itself, leader and
// followers: a writer that has committed joins the next sync round. If no
// sync is running it leads the round, running the sync on its own
// goroutine (a lone writer waits for its fsync and nothing else); writers
// that commit while a sync runs join the next round, and one of them leads
// it when the running sync ends. A round's sync starts after each of its
// writers had committed, so it covers them all. There is no goroutine of
// the store's own to stop: Close waits for the running sync, runs the
// round still waiting, and refuses later ones (ErrClosed), so it never
// hangs on a writer nor leaves one waiting. The sync is db.Sync (the
// active write-ahead log and the value log), plus an fsync of any older
// write-ahead log badger switched away from and has not yet flushed to a
// table (db.Sync does not touch it), and of the directory when a log file
// appeared. Mailbox and event appends hold their lock around the
// transaction only, not around the wait, so they share syncs too.
//
// Rejected: a commit queue batching the waiting writers' changes into one
// badger WriteBatch and one sync. It gives the same sharing of fsyncs but
// gives up badger's per-transaction conflict detection, which the
// conditional transitions rely on (settle only if pending, create only if
// the recipient is running, a cancel and a settlement never both win):
// writes in one batch would have to be checked against each other by
// hand. Group sync keeps every transaction as it is and only moves the
// wait.
//
// A full disk. badger writes its files through memory maps, and a
// write into a mapped page the filesystem has no block for is a SIGBUS,
// which kills the process: no Go code can recover from it, and the same
// happens again in badger.Open on the still-full disk. So the store
// keeps room for every page badger may still touch without a further
// commit, and refuses a commit (ErrStorageFull, a *StorageFullError
// naming the directory and the space) before that room is gone. From
// badger v4.9.6's source, with vigil's options (MemTableSize 16 MiB,
// NumMemtables 3, badger's 5 L0 tables to a compaction, 2 compactors, 7
// levels):
//   - Write-ahead logs (NNNNN.mem): one per memtable, created sparse at
//     twice MemTableSize (z.OpenMmapFile truncates, no block behind),
//     written by every commit (logFile.writeEntry) until the memtable
//     holds MemTableSize; at most 3 at once. Each is flushed to an L0
//     table (table.CreateTable maps the table's size and copies into
//     it) before it is deleted, and Close flushes the active one.
//     Reserved: each log's allocated blocks, a tenth more, and 64 KiB
//     for the table's index and filter (measured: 4.3 MiB of rows with
//     random params flushed to 3.3 MiB; TestTheReserveCoversTheFlushOfTheLogs).
//     At most 3 × (16 MiB × 1.1 + 64 KiB), about 53 MiB.
//   - Compactions: a compaction writes its output tables, no larger
//     than its inputs, before it deletes them. Reserved: the largest
//     compaction each level's tables allow (L0 once it holds 5 tables
//     counting the flushes to come: all of L0, the flushes and the first
//     level below that holds any; Li: a table and the tables of Li+1 it
//     overlaps; the last level, into itself: three of its largest), the
//     two largest together. It grows with the store: a few hundred MiB
//     for a store of some GiB, nothing for one that never compacted.
//   - New files' first pages and small writes: the next log's header,
//     a value log's (values under badger's 1 MiB threshold, all of
//     vigil's, never go there), DISCARD (a 1 MiB sparse map of 16 bytes
//     per value log), the key registry, and a manifest rewrite (twice
//     the manifest). Reserved: 128 KiB and twice the manifest.
//     vigil runs no value-log GC.
//
// Each commit is admitted while the free space (statfs) is above that
// reserve plus a margin: ClientMargin (1 MiB) for a write a client
// asked for (ClientWrite, set by the API), CommitMargin (256 KiB) for
// the host's own, so a full disk stops registrations first and still
// lets the watches already acknowledged settle and mail. A measurement
// (a statfs, the directory listed, the logs stat'ed, the tables read)
// costs 36 to 65 µs, more than a commit, so a commit reads the last one
// and badger's counters (about 0.1 µs; docs/BENCHMARKS.md) and the disk
// is measured again when it is a second old, a tenth of one once the
// headroom is under 64 MiB, or when what the store wrote since
// (badger's own counters of written bytes, five bytes of headroom for
// each) may have spent half the headroom. A refusal is always a
// measurement's: when that estimate says no, the disk is measured again
// first. Nothing runs between writes: while writes are refused each
// write tried and each DiskSpace read measures again, at most ten times
// a second, and the first that finds room lets writes through again,
// without a restart. Open refuses a filesystem without the room opening
// writes (the logs found replayed and flushed, a new log, the new
// files' first pages, and CommitMargin), naming the directory and its
// free space; with that room it opens, and a disk still too full for
// clients' writes refuses them, with one line in the log saying where
// and how much is needed. Not covered: another process filling the
// filesystem faster than a measurement's age (give the data directory
// its own filesystem for that), and a commit's bytes before badger
// counts them: the margins absorb concurrent commits of ordinary size.
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
