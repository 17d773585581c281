package store

import (
	"bytes"
	"cmp"
	"context"
	"strings"
	"time"
)

// The storage seam. Every record and transition of this package is
// written once, against a small transactional key-value store: KV, whose
// transactions (Tx) get, put, delete and scan keys named by their parts
// (Key), each commit conditional on what the transaction read. An
// adapter (store/badger, store/natsstore) lays each family's keys out in
// its own bytes, keeps them in its engine and runs the transactions; it
// decides nothing of the domain. What an adapter must keep is its
// contract suite, store/kvtest.

// Family is a kind of record: one layout of keys, the same in every
// adapter (each encodes it its own way), named as a copy reports it.
type Family string

// The families, each with its key's parts in order (Family.Parts).
const (
	FamRow            Family = "rows"                 // ID
	FamState          Family = "state_index"          // Sub (the state), ID; a pending row's carries its schedule
	FamRecipientIndex Family = "recipient_index"      // Name (the recipient), ID
	FamPendingKind    Family = "pending_by_kind"      // Name (the kind), ID
	FamSubject        Family = "subjects"             // Name (the subject)
	FamMessage        Family = "mailbox_messages"     // Name (the recipient), Seq
	FamMailSeq        Family = "mailbox_seqs"         // Name (the recipient)
	FamPush           Family = "outbox"               // Name (the recipient), Seq
	FamLivePush       Family = "outbox_live_index"    // Name (the recipient), Seq
	FamSettledAt      Family = "settled_at_index"     // At, ID
	FamMessageAt      Family = "message_at_index"     // At, Name (the recipient), Seq
	FamPushAt         Family = "push_final_index"     // At, Name (the recipient), Seq
	FamEvent          Family = "events"               // Name (the stream), Seq
	FamEventKey       Family = "event_keys"           // Name (the stream), Sub (the event's key)
	FamEventSeq       Family = "event_seqs"           // Name (the stream)
	FamWork           Family = "work"                 // ID
	FamWorkInput      Family = "work_inputs"          // ID, Seq (the input's number, 32 bits)
	FamWorkOwner      Family = "work_threads"         // Name (the thread key)
	FamWorkScope      Family = "work_scope_index"     // Name (the scope), Sub (the Work's state), ID
	FamRouter         Family = "router_cursors"       // Name (the router)
	FamRecipient      Family = "recipients"           // Name (the recipient)
	FamIdem           Family = "idempotency_keys"     // Name (the principal), Sub (the key)
	FamIdemAt         Family = "idempotency_at_index" // At, Name (the principal), Sub (the key)
	// FamToken is a capability token's record (Name: the token's hash,
	// captoken.Hash), written with the row it acts on (Watch.Token) and
	// deleted with it (tokens.go).
	FamToken Family = "capability_tokens"

	// FamPendingCount is a recipient's count of pending rows (Name), kept
	// by every commit that moves one of them in or out of pending.
	FamPendingCount Family = "pending_counts"
	// FamRecipientPending is a recipient's pending rows (Name, ID), kept
	// only where the adapter's Plan asks for it (RecipientPending).
	FamRecipientPending Family = "recipient_pending_index"
	// FamDue is every pending row by its due time (Seq, the time's
	// bucket: Plan.DueBucket; At, the due time; ID), its value the row's
	// schedule, written in the transactions that write the row's pending
	// state entry: the scheduler reads a window of it by time (due.go).
	FamDue Family = "due_index"
	// FamPendingKey is every pending row that has a partition key, by
	// its kind and the key's digest (Name: the kind; Sub: KeyDigest of
	// the partition key; ID), written in the transactions that write the
	// pending-by-kind entry: a hook's event names keys, and the host
	// makes every pending watch with one of them due now (keyindex.go).
	FamPendingKey Family = "pending_by_partition_key"
	// FamMarker is one of the store's own markers (Name): "pkv", the
	// pending-by-kind index covers every pending row; "due", the due
	// index does; "tix", every retained record has its time index (the
	// start-time backstop of the retention has run: PruneUnindexed);
	// "pck", every commit writes its recipients' count keys (an
	// exclusive store's older ones dropped).
	FamMarker Family = "markers"
)

// markerNames are the store's markers (FamMarker's names).
func markerNames() [4]string {
	return [...]string{pendingKindsMarkerName, dueMarkerName, indexedMarkerName, countsMarkerName}
}

// Markers are the names of the store's markers (FamMarker's), which an
// adapter reading a key back tells from its other keys.
func Markers() []string { m := markerNames(); return m[:] }

// IsMarker says whether name is one of Markers, without allocating.
func IsMarker(name string) bool {
	for _, m := range markerNames() {
		if m == name {
			return true
		}
	}
	return false
}

// KeysAlone says whether f's keys carry no value of the domain's: an
// adapter may keep a part of the key in their value (natsstore keeps
// the recipient there, for a key that holds it one way), and a Get or a
// scan gives none.
func KeysAlone(f Family) bool {
	return f == FamLivePush || f == FamMessageAt || f == FamPushAt
}

// Families lists every family of records, in the order a copy reports
// them. The derived families (FamPendingCount, FamRecipientPending) and
// the markers are the store's own and not copied: a destination derives
// its own.
var Families = []Family{
	FamRecipient, FamRow, FamState, FamRecipientIndex, FamPendingKind, FamSubject, FamSettledAt,
	FamMessage, FamMailSeq, FamMessageAt, FamPush, FamLivePush, FamPushAt,
	FamEvent, FamEventKey, FamEventSeq, FamWork, FamWorkInput, FamWorkOwner, FamWorkScope, FamRouter,
	FamIdem, FamIdemAt, FamToken, FamPendingKey,
}

// Part is one part of a key.
type Part uint8

// The parts a key may have.
const (
	PartID   Part = iota + 1 // Key.ID
	PartName                 // Key.Name
	PartSub                  // Key.Sub
	PartSeq                  // Key.Seq
	PartAt                   // Key.At
)

var (
	partsID        = []Part{PartID}
	partsName      = []Part{PartName}
	partsSubID     = []Part{PartSub, PartID}
	partsNameID    = []Part{PartName, PartID}
	partsNameSeq   = []Part{PartName, PartSeq}
	partsNameSub   = []Part{PartName, PartSub}
	partsAtID      = []Part{PartAt, PartID}
	partsAtNameSeq = []Part{PartAt, PartName, PartSeq}
	partsAtNameSub = []Part{PartAt, PartName, PartSub}
	partsIDSeq     = []Part{PartID, PartSeq}
	partsNameSubID = []Part{PartName, PartSub, PartID}
	partsSeqAtID   = []Part{PartSeq, PartAt, PartID}
)

// Parts is the family's key parts in order, nil for a family this build
// does not know. The order of a family's keys is the order of their
// parts, compared one after the other (Compare).
func (f Family) Parts() []Part {
	switch f {
	case FamRow, FamWork:
		return partsID
	case FamState:
		return partsSubID
	case FamRecipientIndex, FamPendingKind, FamRecipientPending:
		return partsNameID
	case FamSubject, FamMailSeq, FamEventSeq, FamWorkOwner, FamRouter, FamRecipient, FamPendingCount, FamMarker, FamToken:
		return partsName
	case FamMessage, FamPush, FamLivePush, FamEvent:
		return partsNameSeq
	case FamSettledAt:
		return partsAtID
	case FamMessageAt, FamPushAt:
		return partsAtNameSeq
	case FamEventKey, FamIdem:
		return partsNameSub
	case FamIdemAt:
		return partsAtNameSub
	case FamWorkInput:
		return partsIDSeq
	case FamWorkScope, FamPendingKey:
		return partsNameSubID
	case FamDue:
		return partsSeqAtID
	}
	return nil
}

// Key names one record: its family and its key's parts (which ones, in
// which order: Family.Parts); the parts a family does not have are zero.
type Key struct {
	Fam  Family
	ID   ID
	Name string
	Sub  string
	Seq  uint64
	At   int64
	// OneWay marks Name (OneWayName) or Sub (OneWaySub) as an adapter's
	// one-way form of the name its key holds, not the name: natsstore
	// keeps a long name as a hash, so a key a scan reads back carries the
	// hash, marked, and the same adapter finds the record again by it.
	// The domain passes such a part on, to name another record of the
	// same adapter, and never reads it as a name.
	OneWay uint8
}

// The bits of Key.OneWay.
const (
	OneWayName uint8 = 1 << iota
	OneWaySub
)

// Compare orders two keys of one family by their parts, in the family's
// order: ID as bytes, Name and Sub as strings, Seq as a number, At as a
// signed number.
func Compare(a, b Key) int {
	if c := strings.Compare(string(a.Fam), string(b.Fam)); c != 0 {
		return c
	}
	for _, p := range a.Fam.Parts() {
		var c int
		switch p {
		case PartID:
			c = bytes.Compare(a.ID[:], b.ID[:])
		case PartName:
			c = strings.Compare(a.Name, b.Name)
		case PartSub:
			c = strings.Compare(a.Sub, b.Sub)
		case PartSeq:
			c = cmp.Compare(a.Seq, b.Seq)
		case PartAt:
			c = cmp.Compare(a.At, b.At)
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// SamePart says whether a and b have the same part p.
func SamePart(a, b Key, p Part) bool {
	switch p {
	case PartID:
		return a.ID == b.ID
	case PartName:
		return a.Name == b.Name && a.OneWay&OneWayName == b.OneWay&OneWayName
	case PartSub:
		return a.Sub == b.Sub && a.OneWay&OneWaySub == b.OneWay&OneWaySub
	case PartSeq:
		return a.Seq == b.Seq
	case PartAt:
		return a.At == b.At
	}
	return false
}

// Range is the keys of one family whose first Fixed parts are Prefix's,
// in key order (Compare).
type Range struct {
	// Prefix names the family and, in its first Fixed parts, what every
	// key of the range has.
	Prefix Key
	Fixed  int
	// From, when Seek is set, is where the range starts: its first key
	// at or after From (whose first Fixed parts are Prefix's).
	From Key
	Seek bool
	// KeysOnly says the scan needs no values: its fn may be given nil.
	KeysOnly bool
	// Want, when not zero, is how many keys the scan will likely read
	// before fn stops it: an adapter may read ahead that many and no more.
	Want int
}

// Prefix is the range of the keys of k's family whose first fixed parts
// are k's.
func Prefix(k Key, fixed int) Range { return Range{Prefix: k, Fixed: fixed} }

// FromKey is r starting at its first key at or after k.
func (r Range) FromKey(k Key) Range {
	r.From, r.Seek = k, true
	return r
}

// Contains says whether k is in r.
func (r Range) Contains(k Key) bool {
	if k.Fam != r.Prefix.Fam {
		return false
	}
	parts := k.Fam.Parts()
	for _, p := range parts[:min(r.Fixed, len(parts))] {
		if !SamePart(k, r.Prefix, p) {
			return false
		}
	}
	return !r.Seek || Compare(k, r.From) >= 0
}

// Tx is one transaction: its reads see one state of the store, as of
// the transaction's start or its first read, with its own writes over
// it, and its commit is all of its writes or none. What an adapter
// checks at the commit: every key the transaction read and writes is
// unchanged since it was read (else the commit is refused and the run
// repeated, KV.Update), every key it fenced too; a key read and not
// written nor fenced may be checked or not.
type Tx interface {
	// Get reads k: its value (the caller's, to keep and not to change),
	// and whether it is there.
	Get(k Key) (v []byte, ok bool, err error)
	// Put writes v under k at the commit; the caller does not change v
	// afterwards.
	Put(k Key, v []byte)
	// Delete deletes k at the commit.
	Delete(k Key)
	// Scan calls fn with each key of r and its value (nil when r is
	// KeysOnly, or where the adapter keeps no value), in key order, until
	// fn says no more or returns an error (which Scan returns). v is valid
	// during the call only. A scan sees the store as committed: whether
	// it sees the transaction's own writes is the adapter's, so a
	// transaction scans a range before it writes into it.
	Scan(r Range, fn func(k Key, v []byte) (more bool, err error)) error
	// Fence makes the commit conditional on k, which the transaction read
	// and does not write, being unchanged: a decision taken on it holds
	// when the writes land.
	Fence(k Key)
	// Prefetch reads keys the transaction will Get, at once where the
	// adapter can (a round trip each otherwise); Get then answers them.
	Prefetch(ks ...Key) error
	// Serialise runs the rest of this Update (its runs to come too) one
	// at a time with every other that serialises on hint in this
	// process: its commit and its then come in the order they run. A
	// transaction serialises on one hint at most; a second one is
	// ignored.
	Serialise(hint string)
}

// TxOptions are what an adapter needs to know of a transaction, none of
// which it decides anything of the domain by.
type TxOptions struct {
	// Name is the transition, for errors and test failpoints
	// ("settle-and-mail").
	Name string
	// Serial is Tx.Serialise's hint, taken before the first run.
	Serial string
	// Owner, when not zero, makes this an owner's transition of that
	// row: an adapter that fences partitions (natsstore) checks the
	// row's partition is still this process's, or refuses with
	// ErrNotOwner.
	Owner ID
	// Committed, when set, is called once the commit has succeeded,
	// before a later transaction of the same hint runs (and before its
	// sync): for what a process keeps in memory of its own commits.
	Committed func()
	// Then, when set, is called once the commit is durable, before
	// Update returns, in commit order among the transactions that
	// serialised on the same hint (as a group, their syncs may be
	// shared).
	Then func()
	// Client marks a write a client asked for (ClientWrite): an adapter
	// keeping room on its disk refuses it before its own.
	Client bool
}

// KV is an adapter of the seam: a transactional key-value store.
type KV interface {
	// Update runs fn in a transaction and commits it, running fn again
	// on what is there now each time the commit loses a race for its
	// keys, up to a bound past which it is ErrBusy; fn sets its results
	// afresh on each run. An error from fn ends it, nothing written.
	// A nil return means the commit is durable as the adapter promises.
	Update(ctx context.Context, o TxOptions, fn func(Tx) error) error
	// View runs fn on reads alone.
	View(ctx context.Context, fn func(Tx) error) error
	// Plan is how the domain should use this adapter.
	Plan() Plan
	// Close releases the adapter.
	Close() error
}

// Plan is where an adapter needs the domain to take another way to the
// same rule; the rule is the domain's, whichever way it takes.
type Plan struct {
	// Remote: every read is a request to a server (a round trip), and a
	// Scan lists its range's keys in one request, whatever part of it fn
	// reads (JetStream orders a bucket by write, not by key, and has no
	// seek). Where the domain can name the few keys it wants (a dense
	// sequence's next ones) it reads them by key; it reads nothing twice
	// to spare a lock.
	Remote bool
	// RecipientPending: keep each recipient's pending rows in an index of
	// their own (FamRecipientPending), so listing or counting them reads
	// only them, where reading every row's state by key would be a
	// request each.
	RecipientPending bool
	// Exclusive: one process alone opens the store (badger's lock on its
	// directory), so the domain keeps each recipient's count of pending
	// rows in memory: set by the commit that moves it (Committed, under
	// the recipient's serialisation), counted from the recipient's index
	// at its first use since the store opened, and written to no key,
	// which every such commit would rewrite and a build that does not
	// keep it could leave stale.
	Exclusive bool
	// Floors: a deleted key still costs a scan that passes it, until the
	// engine compacts it (badger's tombstones), so the retention's scans
	// start from where this process last pruned.
	Floors bool
	// Backfill: the layout may hold pending rows an older build wrote
	// without their pending-by-kind entry; New indexes them once.
	Backfill bool
	// DueBucket groups the due index's keys in buckets of this width
	// (their Seq part is the due time's bucket), so a scan of a window of
	// due times lists that window's buckets where a Scan lists a whole
	// range whatever part of it is read (Remote). Zero: one bucket, for
	// an adapter whose ordered scan seeks. Fixed for a store's life: the
	// keys it wrote carry it.
	DueBucket time.Duration
	// MaxWrites bounds the keys one transaction writes; a batch of the
	// domain's (a prune, a recovery, a route) stays within it.
	MaxWrites int
	// MaxValue, when not zero and under the package's MaxValue, is the
	// largest value the adapter takes under one key (JetStream: its
	// server's max payload, less room for a message's subject and
	// headers); the domain then bounds what it writes by it instead.
	MaxValue int
}

// Change is one key a Follower was told of.
type Change struct {
	Key     Key
	Value   []byte
	Deleted bool
}

// Follower is the optional side of a KV that tells of the keys any
// process writes (natsstore's watch of its bucket): a cluster's nodes
// learn of each other's commits this way, without polling.
type Follower interface {
	// Follow subscribes to the keys of ranges and returns once the
	// subscription is in place, with the function that reads it: run
	// calls fn with each change (current: first each key as it is, then
	// each change; else each change after Follow returned) until ctx ends
	// (nil) or the feed ends (an error), and stops the subscription
	// before it returns. fn must return quickly: the feed waits on it.
	Follow(ctx context.Context, ranges []Range, current bool) (run func(ctx context.Context, fn func(Change)) error, err error)
}

// KeyValue is one key and its value, or, written, its deletion.
type KeyValue struct {
	Key     Key
	Value   []byte
	Deleted bool
}

// Copier is the optional side of a KV whose keys can be read out and
// written raw, for a copy between stores (store/storecopy).
type Copier interface {
	// ExportKeys calls fn with every key of a family and its value (nil
	// where the adapter keeps none), from one state of the store where
	// the adapter can; keys of the adapter's own (a version, a fence)
	// are not given.
	ExportKeys(ctx context.Context, fn func(k Key, v []byte) error) error
	// ImportKeys writes kvs as they are (a Deleted one deleted),
	// overwriting by key, checking nothing, in as many commits as the
	// adapter needs.
	ImportKeys(ctx context.Context, kvs []KeyValue) error
	// OneWay is the form the adapter gives name in a key when it keeps
	// it one way (Key.OneWay), and false when it keeps it as it is.
	OneWay(name string) (string, bool)
}

// Barrier is the optional side of a KV whose reads may see a commit not
// yet durable (badger's group sync): Barrier returns once what a read
// that has just ended saw is durable.
type Barrier interface {
	Barrier() error
}

// DiskReporter is the optional side of a KV that keeps room on a disk of
// its own (badger): what it measured there.
type DiskReporter interface {
	DiskSpace() (DiskSpace, bool)
}
