// Package kvtest is the contract suite of the storage seam (store.KV):
// what package store's transitions rely on of an adapter, each rule a
// subtest, run by each adapter's own tests (store/badger, store/natsstore)
// with Run. It knows nothing of the domain: its keys are of the seam's
// families, its values bytes.
//
// It pins a transaction's own writes seen by its reads and a commit of
// all of them or none; a key read and written, or fenced, checked at the
// commit (a race lost is run again, one lost run after run is
// store.ErrBusy); scans in key order, by prefix and from a key, stopped
// when asked; the names an adapter keeps one way found again by the key
// a scan gave, and a range fixed on one; transactions of one hint run one
// at a time, their thens in commit order, never for a commit that failed;
// what was acknowledged there after a reopen; and the optional sides (a
// feed of changes, the raw copy of keys) where the adapter has them.
//
// # What it must never do
//
// Depend on timing (its races are made, not waited for), or test one
// adapter's engine (its files, its batches): those are the adapter's own
// tests.
//
// # Rejected
//
// Testing the adapters only through the domain's suite: a broken seam
// (a fence not checked, a hint not serialised) shows there as a rare
// race, where a rule of its own fails here on the first run.
//
// Public: for the author of another adapter of the seam, run from the
// adapter's tests.
package kvtest
