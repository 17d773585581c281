// Package storetest is the backend conformance suite: one set of tests
// that every storage backend of the host (a core.Store) must pass, run
// from each backend's own tests with Run. It pins the semantics the core's
// components rely on and say so in their docs, each as a subtest:
//
//   - Conditional transitions: a row settles at most once; of a cancel
//     and a settlement racing, exactly one wins and the loser writes
//     nothing; a receipt, a next check, a probe record and a baseline
//     apply only to a row in the state they need, with store's sentinel
//     errors (ErrNotPending, ErrNotFound, ErrExists) otherwise.
//   - Registration only while the recipient runs (CreateIfRunning,
//     AppendIfRunning: a *store.NotRunningError otherwise).
//   - A settlement or a baseline with its mail in one transaction
//     (SettleAndMail, CarryAndMail): the row, its message and, with an
//     active webhook, its outbox record, all or none; a recipient that is
//     not running settles the row undeliverable and mails nothing.
//   - The pending schedule (ForEachPending, PendingBySubject), listings
//     (List, ListPage: pages, cursors, filters), counts (CountByState,
//     CountPending, CountPendingByKind: following every way in and out of
//     pending exactly, concurrent registrations and cancels too, a count
//     stopped at upTo never kept as the count, a held-aside row not
//     counted, the same after a reopen).
//   - Mailboxes: a dense, increasing sequence per recipient, under
//     concurrent appends too, and reads after a cursor.
//   - The outbox's push records (BeginPush, FinishPush, RecoverPushes,
//     LivePushes, PrunePushes, DisableWebhook), and RecoverPushesOf and
//     LivePushesOf touching only the recipients kept.
//   - Held-aside rows (a row this build cannot decode) skipped by reads,
//     lists and prunes and never rewritten.
//   - Events idempotent by key within a stream; Work routing, claims and
//     completions; recipients and their reports.
//   - Retention by class (Oldest, PruneOldest, OnRetained, Prune): oldest
//     first, bounded, never a pending row, a live push or a held-aside
//     record.
//   - Idempotency keys: each creating write keeps its request's key in
//     its own transaction and answers a repeat with the first answer,
//     another request under the key with ErrIdemReused, writes under one
//     key at once with one commit; a refused write and every other write
//     keep none; the records are retained, pruned and kept across a
//     reopen.
//   - What survives a reopen (rows, sequences, pushes left sending), and
//     Close.
//
// Run it from the backend's external test package (package x_test), as
// package store does in conformance_test.go: this package imports
// host/core for core.Store, so an in-package test of a backend that the
// host may one day import would be an import cycle.
//
// A backend-specific ability the suite cannot reach through the interface
// (writing a row this build cannot decode, failing a transaction between
// its writes, reopening the same data) comes in through Options; a subtest
// whose hook is missing is skipped with the reason, never passed.
//
// That the suite bites is tested too: bites_test.go runs subtests of it
// against badger wrapped to break one rule each (a second settlement
// answered as won, a row written for a recipient not running, a mailbox
// read that ignores its cursor, a next check acknowledged and not kept)
// and checks each fails where it should.
//
// What it must never do: test one backend's internals (badger's files,
// its versions, its group commit stay in package store's own tests), or
// depend on timing: times are arguments of the store's calls, fixed here,
// and the concurrent subtests check outcomes, never how long they took.
//
// Backend embeds core.Store itself, so a backend that compiles here is a
// core.Store by the compiler's word. Rejected: a copy of the core's
// interface in this package, which would let the two drift apart. Also
// rejected: a copy of package store's tests per backend, which would
// drift the way two hand-wired compositions did (host/core's doc), and
// which could not tell a backend's author which rule a failure breaks.
package storetest
