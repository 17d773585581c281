// Package crashtest is vigil's crash harness: a test that builds the real
// vigil serve, runs it on a data directory on 127.0.0.1 under a mixed load
// (timers, cancels, pauses, a signed webhook receiver that answers some
// requests 503 or late, observe records and their repeats, long-polling
// mailbox readers, every write under an idempotency key), kills it with
// SIGKILL at random moments, restarts it on the same directory, and checks
// a ledger of every request the host acknowledged after each restart.
//
// What it owns: the load, the ledger and its checks, each named in a
// failure (LOST, DUPLICATED, STATE, ORDER, WEBHOOK, LATE): every
// acknowledged registration exists in a state its history allows; every
// fired or expired watch has one message, in a mailbox from seq 1 without
// gaps; a push is re-sent only after a 503 and never once unknown; every
// record is one input of its Work; a keyed write sent again after a kill is
// written once; a timer due during a downtime fires within a bound of
// readiness. CheckMail, its checks over whole mailboxes, is shared with the
// cluster's failover test. docs/RELIABILITY.md says how to run it and what
// it found.
//
// It runs only when VIGIL_CRASH_KILLS is set (never under -short), so the
// plain go test ./... stays fast.
//
// What it must never do: import the product's packages to reach into the
// host (it talks HTTP to the binary and shares only api's wire types);
// listen anywhere but 127.0.0.1; leave a process or goroutine behind.
//
// Rejected: an in-process host (internal/apitest) stopped by cancelling
// its context. A cancelled context runs the host's shutdown path, the one
// path a crash skips, and nothing inside the test process can stop in the
// middle of a badger commit the way a killed process does. (A SIGKILL
// leaves written pages in the page cache, so no such harness sees a
// missing fsync; the store's own tests cover that order.)
package crashtest
