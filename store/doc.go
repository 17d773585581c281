// Package store is vigil's persistence, written once: the records (watch
// rows, recipients, mailboxes, the outbox's pushes, the event log, Work,
// idempotency records), their codecs, and every transition of them, as
// the methods of Store over a small transactional key-value seam (KV,
// kv.go). An adapter (store/badger, store/natsstore) lays each family's
// keys out in its own bytes and runs the transactions; store/kvtest is the
// seam's contract and store/storetest this package's suite, each run over
// every adapter.
//
// # What it guarantees
//
//   - Every transition is one transaction, conditional on what it read
//     (badger's optimistic transaction; JetStream's atomic batch with an
//     expected sequence per key read): a row settles at most once, a
//     cancel and a settlement never both win, a registration and a mailed
//     message land only while their recipient runs (its record fenced),
//     and a settlement with its message and push is all or nothing.
//   - Each recipient's count of pending rows is kept by the transitions
//     that move one of its rows, in their own transaction (serialised on
//     the recipient), so a bound on it holds however many registrations
//     race: a key every such commit writes; on badger, whose directory
//     one process alone opens (Plan.Exclusive), read from the process's
//     memory, set at each commit, once the key has been read. A restart
//     reads the keys, so it counts nobody's rows; a recipient with none
//     (rows an older build or an import wrote) is counted from its index
//     at first use.
//   - Every pending row is in the due index (FamDue, due.go) once, keyed
//     by its durable next check, else its registration instant (never
//     after when it is due), written in the transactions that write its
//     schedule and never as time passes: ScanDue reads a window of it
//     by time, so the scheduler holds only what is due soon and a
//     restart reads the first window. JetStream's keys carry a minute's
//     bucket (Plan.DueBucket), so a window lists its buckets alone.
//   - Every pending row with a partition key (Watch.PartitionKey, kept
//     on the row) is in the index by kind and key (FamPendingKey,
//     keyindex.go: the key's digest), written and deleted with its
//     pending-by-kind entry; PendingByKey reads it for an event's keys.
//   - A row this build cannot decode is held aside: reads, lists and
//     prunes step over it, and nothing rewrites it.
//   - A capability token's hash (FamToken, tokens.go) names what it acts
//     on, written and deleted in the transactions that write and delete
//     that: a signal's watch, which keeps the hash (Watch.Token, never in
//     its JSON; the token itself is never stored), in the row's creating
//     transaction and its prune; a heartbeat's ping token, kept in its
//     recipient's record, in the record's put and delete. A token never
//     outlives what it names.
//   - Retention is by class (Retained), oldest first, a bounded batch a
//     transaction, never a pending row, a live push or a held-aside one.
//   - A creating request's idempotency key (WithIdem: the request's
//     context carries it to the one write that keeps it) is checked and
//     kept in that write's transaction.
//   - A copy (ExportRecords, ImportRecords) carries keys and values as
//     stored, a name an adapter keeps one way (Key.OneWay) translated.
//   - No value is over MaxValue (or the adapter's Plan.MaxValue, where
//     less): a transition that would write one writes nothing
//     (ErrValueTooLarge). The records a client or a kind can grow are
//     bounded where they are made, so a transition never meets it: an
//     outcome settled or mailed is kept Bounded (MaxOutcome), an
//     idempotency record over the bound without its answer's body.
//
// Durability is the adapter's (store/badger's doc says what survives what
// per setting). Where an adapter needs another way to the same rule (no
// ordered index on JetStream, tombstones on badger), it says so in its
// Plan; the rule stays here.
//
// # What it must never do
//
// Decide scheduling or delivery (which transition and when are the
// scheduler's, whether to POST the outbox's), or know an engine: no
// adapter's bytes, batches, locks or retries here.
//
// # Rejected
//
// Each backend its own copy of the domain, as badger and JetStream had
// before this package: every rule written twice, and a fix to one copy
// (a retry, an index) waiting on the other.
//
// Public: for a program that reads or copies a vigil store; the host
// reaches it through internal/core.
package store
