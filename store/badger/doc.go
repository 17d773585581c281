// Package badger adapts badger v4 to the storage seam (store.KV): one
// database in a data directory, the key layout every release wrote (keys.go,
// byte for byte, so a directory written before opens with no migration),
// badger's optimistic transactions, retried on a conflict up to nine runs
// and then store.ErrBusy, and what makes its commits durable and its
// disk safe. Open refuses a store of a newer version (store.ErrStoreTooNew),
// files badger cannot read (store.ErrCorrupt) and a directory another
// process holds (store.ErrInUse, at once).
//
// # What survives what
//
//   - Options.SyncWrites (vigil serve's default): a commit is acknowledged
//     once a sync that started after it has finished; it survives a kill,
//     a kernel crash and a power loss. Concurrent commits share syncs
//     (group commit, groupsync.go: the writer that finds none running
//     leads one on its own goroutine, the ones that commit meanwhile join
//     the next). A failed sync fails every later commit (ErrSync) until
//     the store is reopened. A read a Barrier follows (a mailbox's) sees
//     only what a sync covers.
//   - SyncWrites off: acknowledged once in badger's memory-mapped log; it
//     survives a process crash, not a kernel crash or a power loss.
//
// # A full disk
//
// badger writes through memory maps, and a write into a page the
// filesystem has no block for kills the process (SIGBUS). The disk guard
// (diskspace.go) keeps room for what badger may still write on its own
// (its logs flushed, its largest compactions, new files' first pages)
// and refuses a commit before that room is gone: store.ErrStorageFull, a
// client's write (TxOptions.Client) 1 MiB above the reserve, the host's
// own 256 KiB above it. docs/RELIABILITY.md has the figures and tests.
//
// # Mapped pages
//
// badger reads its table files through memory maps, so every page a read
// or a compaction touched stays in the process's resident size until the
// kernel wants the memory. TrimMapped (resident.go, Linux) hands the
// tables' resident pages back (madvise MADV_PAGEOUT, which never changes
// what a mapping reads) once the process's file-backed resident memory
// is past a budget; the host calls it after its start and every 30 s.
//
// Transactions of one serialisation hint take one of 64 stripes for
// their run and commit (not their sync), and their thens are called in
// commit order, chained per stripe.
//
// # What it must never do
//
// Know a record: no family's meaning, no rule of the domain's; every
// transition is package store's.
//
// # Rejected
//
// A commit queue batching the waiting writers' changes into one badger
// WriteBatch and one sync: the same shared fsyncs, but without badger's
// per-transaction conflict detection, which every conditional transition
// relies on.
//
// Public: for a program that opens a vigil store on its own disk.
package badger
