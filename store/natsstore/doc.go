// Package natsstore adapts one NATS JetStream key-value bucket to the
// storage seam (store.KV), for a cluster of vigil nodes sharing it: the
// key layout every release wrote (keys.go: '.' separators, free-form names
// as base64url tokens, a long one as its hash, kept one way), transactions
// as atomic batches, the partitions' fences, the bucket's feeds, and
// opening and verifying the bucket. Every rule of the records is package
// store's.
//
// # How a transaction commits
//
// JetStream has no multi-key transaction; it has atomic batch publish
// into one stream (nats-server 2.12 and later: the whole batch or none)
// and, per message inside it, an expected last sequence on a subject. A
// transaction (txn.go) reads each key with its revision and commits its
// writes as one batch in which every key it read and writes, and every
// key it fenced, must still be at the revision read: a change by anyone
// refuses the batch, and the transaction runs again on what is there
// now, up to 16 times, then store.ErrBusy. A batch's first message
// carries a message id, so a commit that got no answer is sent again and
// is stored once or recognised as stored; past that its outcome is
// unknown, store.ErrUnavailable (an *UnavailableError saying the write
// may have happened). Errors are told by type and JetStream's code, never
// by text: no server or no leader is ErrUnavailable, a stream or server
// out of room store.ErrStorageFull.
//
// An owner's transition (store.TxOptions.Owner) of a row whose partition
// this node fenced (FencePartition, fence.go) also checks the partition's
// epoch key ep.<p>: a node that gained the partition since rewrote it, so
// the stale owner's batch is refused whole (store.ErrNotOwner), even on a
// row nobody wrote since it read it.
//
// A key's value is one message, so the store's Plan.MaxValue is the
// server's max payload (or the stream's max message size) less room for
// the message's subject and headers: the domain writes no value over it.
//
// JetStream orders a bucket by write, not by key, and has no seek: a
// scan lists its range's keys under a subject wildcard, through a watch,
// and sorts them (store.Plan.Remote; the domain reads a dense sequence by
// key instead). Reads are not one snapshot: each key is read on its own,
// and every decision a write makes is fenced. A follow (store.Follower)
// is JetStream's push of a watch, polling nothing. Durability is the
// stream's: a quorum of R3 survives a server lost; R1's file store syncs
// on an interval unless the server runs with sync_always.
//
// Open waits for a cluster still forming (no meta leader yet) until
// Config.StartTimeout, creates the bucket on first start and verifies it
// (atomic batches, TTLs, one message per key, replicas, the partition
// count fixed at creation) on every later one (*MismatchError).
//
// # What it must never do
//
// Know a record, decide scheduling or ownership: which transition and
// when is the domain's and the scheduler's, which node owns a partition
// the cluster's.
//
// # Rejected
//
// Revision-fenced single-key updates with a transaction's other writes
// published after them: each key safe, but a settlement whose row landed
// and whose mail did not (a crash between them) left for a repair pass.
// One atomic batch needs none.
//
// Public: for a program that opens a cluster's vigil store on JetStream.
package natsstore
