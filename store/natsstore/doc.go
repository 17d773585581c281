// Package natsstore is vigil's store on NATS JetStream: the method set
// of *store.Badger, name for name and error for error (package store's
// types and sentinels), kept in one JetStream key-value bucket that any
// number of vigil nodes share.
//
// What lives where. Everything is one bucket, KV_<bucket> (a stream whose
// subjects are $KV.<bucket>.<key>, one message kept per key), holding the
// same records as badger under the same layout, with '.' for the
// separators and free-form parts (recipient ids, stream names, thread
// and event keys) as one base64url token each (tok): rows w.<id>, the
// state index s.<state>.<id> (a pending row's entry carries its schedule
// and durable next check, as on badger), r.<rid>.<id>, a recipient's
// pending rows rp.<rid>.<id> and their count pc.<rid>, subjects
// sj.<subject>, the settled_at, message-at and push-final time indexes
// sa./ma./pa., mailboxes
// mb.<rid>.<seq> with their sequence key ms.<rid>, the outbox
// ob.<rid>.<seq> with its live index ol., events ev./ek./es., Work
// wk./wi./wo./wsc. and router cursors rt., the partitions' epochs ep.<p>
// with their check carriers ef.<p> (fence.go), and one metadata key, meta
// ({"v":1,"partitions":N}). The bucket's stream allows atomic batches
// (allow_atomic) and per-message TTLs, and has direct gets off so every
// read goes to the stream leader.
//
// How a transition commits. JetStream has no multi-key transaction; it
// has atomic batch publish into one stream (nats-server 2.12 and later:
// Nats-Batch-Id, Nats-Batch-Sequence, Nats-Batch-Commit; the whole batch
// is stored or none of it) and, checked per message inside a batch, an
// expected last sequence on a subject (Nats-Expected-Last-Subject-
// Sequence, with -Subject to check another subject than the message's
// own). A transition (txn) reads what it needs, each key with its
// revision (the stream sequence of its last message), and commits its
// writes as one batch in which:
//   - every written key that was read carries its revision as the
//     expected last sequence: a key changed by anyone since the read
//     refuses the whole batch, and the transition runs again on what is
//     there now (like badger's conflict retry, up to 16 times, then
//     store.ErrBusy). So a row settles at most once, a cancel and a
//     settlement never both win, a stale writer's write is refused and
//     never applied twice, and a mailbox's sequence key (read and
//     rewritten by every append) keeps each recipient's seqs dense and
//     increasing across processes;
//   - a key read to decide and not written (the recipient of
//     CreateIfRunning, AppendIfRunning and SettleAndMail) is fenced: a
//     written key that was never read (an index entry named by a row the
//     batch does check) carries the fenced key's revision on the
//     -Subject override, or, with no such carrier, the fenced key is
//     rewritten as read with its own check. A pause committed between the
//     read and the commit refuses the commit, so a registration lands
//     only while its recipient runs and a settlement's message only in a
//     running recipient's mailbox, as on badger;
//   - the settlement, its mailbox message, the sequence key and the
//     outbox record are one batch: all stored or none;
//   - an owner's transition (RecordProbe, SetNextCheck, CarryBaseline,
//     SettleAndMail, CarryAndMail) of a row whose partition this Store
//     has fenced (FencePartition, fence.go) carries the check that the
//     partition's epoch key ep.<p> is still at the token the node got
//     when it gained the partition, on the -Subject override of a
//     written key never read that the recipient's fence left, or on a
//     delete marker of ef.<p> when there is none (ep.<p> itself is never rewritten in a batch: that would
//     move the token). A node that gains the partition after it rewrites
//     ep.<p>, so the stale owner's commit is refused whole even on a row
//     nobody wrote since it read it; the refusal is told from a row's by
//     reading ep.<p> once, and is store.ErrNotOwner, not re-run. Once the
//     node lets the partition go (Unfence) its owner's transitions of it
//     are refused here without a round trip. Create, Settle (a cancel:
//     any node makes them) and the outbox's writes are not fenced; a
//     partition never fenced (a Store used without a cluster) is not
//     checked.
//
// A store that cannot answer. A read or a commit that JetStream does not
// answer (no server, no responders, a timeout, a connection closed or
// reconnecting) or answers that it cannot serve now (no meta or stream
// leader, the stream offline, JetStream not yet enabled on a restarted
// server, or any answer the server itself classes 503) is
// store.ErrUnavailable, an *UnavailableError that says whether a commit
// may have been stored (one attempt went unanswered), told by the error's
// type and JetStream's error code (txn.go, unreachable), never its text.
// A refusal (a revision that did not hold, a batch refused whole) is not.
//
// An idempotency key (store's idem.go) is a key of the bucket too,
// ik.<principal>.<key> with its time index ia.<time>.<principal>.<key>:
// read (and so fenced) by the transition that writes it, so of two
// commits under one key the second is refused and runs again to find the
// first's record.
//
// A batch's first message carries a message id (Nats-Msg-Id), which the
// server checks before any expected sequence: a commit that got no answer
// (a timeout, a leader change) is sent again under a new batch id and is
// either stored once or recognised as stored, never applied twice (a
// resend that finds the first attempt still being stored, "duplicate
// message id is in process", waits and asks again; past that its outcome
// is unknown: store.ErrUnavailable, the commit perhaps stored). A
// commit of one key is a batch too: a plain publish checks its expected
// sequence before its message id, so its resend would be refused as
// stale and the transition run again on its own write. Every request (a
// read, a commit) is bounded by Config.Timeout whatever the caller's
// context, since one sent while the stream has no leader gets no answer;
// a Store keeps at most 32 batches in flight, below the server's 50 open
// atomic batches per stream.
// Deletes are delete markers (KV-Operation: DEL) with a one-hour TTL; a
// marker is still the key's last message, so a writer that read the key
// absent is fenced by it, and once it expires the key has no message and
// that writer is refused as on any change.
//
// Where a single-host rule is weaker here, precisely:
//   - Reads are not one snapshot. badger's View sees one instant of every
//     key; here each key is read on its own, so a listing or a mailbox
//     read may see a row and its index entry from two instants. Writes
//     are not weakened by it: every decision a write makes is fenced, and
//     a read that decided nothing may only be a moment old. A listing
//     that meets an index entry whose row has moved on checks the row
//     (its state, its recipient) and skips what no longer matches.
//   - then is in mailbox order per recipient and per Store, not across
//     recipients or nodes. SettleAndMailThen's then runs after the then
//     of every earlier mail-writing commit of the same Store for the same
//     recipient (a lock, striped by recipient, held around each such
//     commit and its then), where badger orders every commit's then;
//     commits of other nodes are ordered by the mailbox's seq alone.
//   - An owner's commits of one partition contend on a replicated
//     stream: each checks ep.<p>, and a clustered stream lets one batch
//     in flight check a subject at a time, so they commit one after
//     another, the others re-running as a recipient's do (below).
//   - Commits for one recipient contend. Every registration and every
//     settlement of a recipient is fenced on its record (and a
//     settlement writes its sequence key), every commit that moves a row
//     into or out of its pending rows (a cancel too) rewrites its count
//     key pc.<rid>, and a clustered stream refuses
//     an expected-sequence check on a subject another batch in flight
//     checks too, so a burst of them for one recipient commits one at a
//     time, the others re-running (up to 16 times, then store.ErrBusy,
//     which the API answers 503 store_busy with Retry-After). The
//     stream holds at most its server's max_batch_inflight_per_stream
//     open batches (50), across every node; a batch refused past that
//     (too many in flight, or its first messages dropped so its commit
//     finds it incomplete) is sent again after a short wait, 8 times,
//     then is store.ErrBusy too.
//   - A full store is an answer. A batch the server refuses for want
//     of room (the bucket stream's max_bytes or max_msgs, an operator's
//     limits: error code 10077; the server's or account's JetStream
//     storage: 10023, 10047) stores nothing, and the commit is
//     store.ErrStorageFull, which the API answers 507
//     insufficient_storage; told by code, never by text. A server whose
//     own disk fails a write does not answer the batch at all: that is a
//     commit with no answer (above), not a storage-full one.
//   - A batch on one replica costs a sync. nats-server stages an atomic
//     batch of an R1 file stream in a file store of its own, synced on
//     flush, so an R1 commit waits for a disk sync (tens of
//     milliseconds on a busy disk), where R3 stages it in memory and
//     replicates it: R1 is for trying vigil out, R3 for running it.
//   - A page, a count and a retention batch cost an index, not a budget.
//     JetStream orders a bucket by write, not by key, and has no seek: a
//     ListPage, CountByState, Oldest and PruneOldest list
//     the keys of the index they walk (metadata only, through one watch
//     of the bucket, which ends once it has delivered what was there) and
//     sort them; the budget then bounds the rows decoded, not the keys
//     listed. PruneOldest deletes at most 200 records per call (a batch
//     stays inside the server's 1000 messages).
//     CountPending, on the registration path, does not: it reads the
//     recipient's count key, kept exactly in the batches that add and
//     remove its rp. entries and fenced on its revision like any key they
//     read (pendingcount.go); a recipient with no count key yet (rows an
//     older build wrote, an import) is listed once and its next such
//     commit writes the count, so no backfill runs at Open.
//   - OnRetained tells of this Store's commits only. A pruner on one
//     node hears of the others' records through FollowRetained, a feed
//     of the retained classes' time indexes (sa./ma./pa.) and event
//     streams that JetStream pushes as any node commits (host/upkeep
//     follows it while it holds the cluster's upkeep job).
//   - Durability is the bucket's: a commit is acknowledged once the
//     stream leader has stored the batch and, with replicas (R3), a
//     quorum has; R1's file store syncs on an interval unless the server
//     runs with sync_always, so R1 survives a vigil crash but not a power
//     loss of the server's machine, and R3 survives losing one server.
//
// Long polls: WaitMailbox watches a recipient's sequence key and returns
// once it passes a cursor, so a reader on one node wakes on an append any
// node commits, the moment JetStream delivers it, without polling.
//
// Starting before the cluster has formed: a server without a JetStream
// meta leader (one of three up, or three that have not yet elected one)
// does not answer JetStream's API at all, so every request of Open times
// out. Open takes that silence, no server reachable, and the server's
// own "temporarily unavailable" and "no suitable peers" as a cluster
// still forming: it logs "waiting for JetStream: no meta leader yet
// (attempt N)" ("no server reachable" when no connection was taken, so
// a wrong address reads as one), waits (250 ms doubling to 5 s, on Config.Clock) and tries
// again, until Config.StartTimeout (default 60 s) has passed, then fails
// with ErrStartTimeout wrapping the last attempt's error. Any answer that
// refuses (a mismatch, bad credentials, JetStream not enabled) fails at
// once. Rejected: failing at the first silence, which makes the order in
// which an operator starts servers and nodes matter; waiting for ever,
// which hides a node pointed at the wrong servers.
//
// Open creates the bucket on first start and verifies it on every later
// one: a stream without atomic batches, TTLs or one message per key,
// with direct gets on, a replica count other than Config asks, a
// partition count other than the stored one, or a bucket holding keys
// but no metadata refuses to start with a *MismatchError (errors.Is
// ErrMismatch) naming what differs. The partition count (default 64) is
// fixed when the store is created. With Config.Existing (a copy's
// source) a missing bucket is ErrNoBucket, not created. A watch's partition is its id's
// (store.ID.Partition: the id's slot, the hash of its partition key or
// random, modulo the count), so no row or key carries it and the
// cluster's owners filter the pending index by id alone
// (ForEachPendingIn).
//
// Moving a store: ExportRecords and ImportRecords (export.go) read and
// write the bucket as store.Records, the same records as badger's under
// their key parts, for store/storecopy. The rp. index is not a record
// (an import derives it from the rows), and a hashed token is read back
// through a name some record's value carries, else refused.
//
// What it must never do: decide anything about scheduling, delivery or
// ownership. Which transition to make and when is the scheduler's; which
// node owns a partition is the cluster's; the store only makes the
// transitions atomic, fenced and durable.
//
// Rejected alternatives:
//   - Revision-fenced single-key KV updates (Update on the last revision)
//     with the other writes of a transition published after them,
//     de-duplicated by Nats-Msg-Id. Each key is safe, but a settlement
//     whose row update landed and whose mailbox append did not (a crash
//     between them) leaves a fired watch without its message until a
//     repair pass finds it; every multi-key rule would need such a pass.
//     One atomic batch needs none.
//   - One stream per record family (rows, mailboxes, events) with a
//     bucket per index. Atomic batches are per stream, and a settlement
//     writes a row, a mailbox and an outbox record: they must share one.
//   - A fixed stream per partition. It spreads the stream leaders, the
//     limit this layout hits first, and is where the cluster work may
//     take it; a recipient's mailbox is written by watches of every
//     partition, so it needs a layout where a batch can cross
//     partitions, which one stream gives today.
package natsstore
