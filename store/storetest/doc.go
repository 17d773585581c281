// Package storetest is the domain's suite: one set of tests that package
// store's Store must pass over every adapter of its seam, run from each
// adapter's own tests (store/badger, store/natsstore) with Run. It pins
// what the host's components rely on, a subtest each: conditional
// transitions (a row settles once; a cancel and a settlement, one wins),
// registration and mail only while the recipient runs, a settlement with
// its message and push in one transaction, the pending schedule, listing
// pages and cursors, the counts (by state, kind and recipient, under
// concurrent registrations too), dense mailbox sequences, the outbox's
// push states, held-aside rows, events idempotent by key, Work, retention
// by class, idempotency keys, and what survives a reopen.
//
// Run writes what the store's calls cannot reach through the adapter
// itself: a row a newer release wrote, raw; a failure between a
// transition's writes and its commit (a failpoint by the transition's
// name, store.TxOptions.Name). RunBackend runs the same suite on any
// Backend with those hooks, for the suite's own tests: bites_test.go
// breaks one rule each (a second settlement answered as won, a row
// written for a recipient not running, a mailbox read ignoring its
// cursor, a next check acknowledged and not kept) and checks each fails
// where it should.
//
// # What it must never do
//
// Test an adapter's engine (its files, batches or syncs: store/kvtest and
// each adapter's own tests), import the host (it is below it), or depend
// on timing: times are arguments of the store's calls, and the concurrent
// subtests check outcomes, never durations.
//
// # Rejected
//
// A copy of package store's tests per adapter, which would drift as the
// two copies of the domain did, and could not tell an adapter's author
// which rule a failure breaks.
//
// Public: for the author of another adapter of the seam, run from the
// adapter's tests.
package storetest
