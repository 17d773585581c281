// Package storecopy copies one store's records into another, whatever
// their backends: a single host's badger directory into a JetStream
// cluster's bucket (store/natsstore) and back, for `vigil store copy`.
//
// What it owns: the copy's order and its checks. It counts the source's
// records per family (a source holding none is refused: a wrong
// directory or bucket, ErrSourceEmpty), refuses a destination that holds any record (a
// *NotEmptyError naming what is there) unless asked to resume, copies in
// bounded batches with progress per family, and verifies at the end that
// the destination holds, family by family, as many records as the source
// and the same ones: an order-independent digest (the sum of each
// record's SHA-256, key parts and value) per family, so every record,
// not a sample, is byte-identical after translation. It then reads the
// source again and compares it likewise with what it copied: a source
// written meanwhile fails the copy with a *SourceChangedError. A copy that stopped
// half-way is restarted with Resume: every import overwrites by key, so
// the records copied twice are the same, and the verification refuses a
// destination holding anything the source does not.
//
// How records move: as keys. The store reads its adapter's keys out raw
// and writes them into the other's (store.ExportRecords and
// ImportRecords over each adapter's store.Copier: a key named by its
// family and parts, with its value as stored), each adapter translating
// its own layout; rows held aside, index entries, mailbox, outbox and
// event seqs, Work and router cursors are keys like any other, so seqs
// stay dense and equal and cursors stay valid. A store's derived keys (a
// recipient's count and index of pending rows) are not copied: the
// destination derives its own.
//
// What it must never do: decide anything about the records (it neither
// decodes nor rewrites a value), or copy from a store being served: the
// caller opens a badger source, whose lock refuses one a host holds
// (store.ErrInUse); a JetStream source has no such lock, and the second
// read of the source is what catches one that changed meanwhile.
//
// Rejected alternative: copying through the public store methods
// (Create, AppendIfRunning, AppendEvent, RouteEvent, …). They assign
// seqs as they append, so a mailbox with a pruned gap, an event stream
// past its retention, or a router's cursor would come out renumbered and
// every agent's cursor would point at the wrong message; held-aside rows
// have no method that writes them; and settled rows would need a
// transition per state. The raw records carry all of it as it is.
//
// Public: for a program that moves a vigil store between backends, as
// vigil store copy does.
package storecopy
