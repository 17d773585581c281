// Package crashtest is vigil's crash harness: a test that builds the real
// vigil serve, runs it on a data directory on 127.0.0.1 under a mixed load,
// kills it with SIGKILL at random moments, restarts it on the same data
// directory each time, and checks a ledger of every request the host
// acknowledged (answered 2xx) after every restart and at the end.
//
// The load: timer registrations due over the next seconds, cancels,
// recipients paused and resumed, a recipient whose webhook goes to a
// receiver on loopback that verifies every Standard Webhooks signature
// (and answers some requests 503, some late, so kills catch pushes in
// flight), observe records and repeats of them, and a long-polling mailbox
// reader per recipient that keeps its cursor across restarts. Every
// registration and every record carries an Idempotency-Key of its own;
// one whose answer the kill took is sent again under its key after the
// restart, as a client retrying a lost answer does.
//
// What it checks, and names in a failure (LOST, DUPLICATED, STATE, ORDER,
// WEBHOOK, LATE):
//   - every acknowledged registration exists, in a state its history
//     allows (cancelled only if a cancel or a pause of its recipient was
//     sent; never fired after a cancel answered 200; never still pending
//     once it is overdue);
//   - every watch that fired or expired has exactly one message in its
//     recipient's mailbox, and the mailbox runs from seq 1 without gaps,
//     each seq keeping its message across restarts;
//   - a webhook is sent again only after the receiver answered 503; a
//     message whose push was unknown is never sent again; a push the host
//     calls delivered was answered 2xx;
//   - every acknowledged observe record is an input of its thread's Work
//     exactly once, and a repeat is answered as a duplicate of the first
//     record's event across any number of crashes;
//   - a keyed write sent again after a kill is written once: a
//     registration is answered 201 (its first answer, when the killed
//     attempt had committed) or 409 (its recipient paused since), a
//     record as a first record, never a duplicate; and at the end every
//     listed watch is one a registration was answered (DUPLICATED
//     otherwise);
//   - a timer due while the host was down fires within a bound of the
//     restart's readiness (the first answer of /healthz): 1 s by default
//     (VIGIL_CRASH_FIRE_BOUND), the host re-arming a recovered watch at
//     its durable next check; the distribution, and how many took over
//     1 s, is reported.
//
// It runs only when VIGIL_CRASH_KILLS is set (and never under -short), so
// the plain go test ./... stays fast: .ci/crash runs the CI budget, just
// crash a long run (docs/RELIABILITY.md). VIGIL_CRASH_SEED replays a run's
// choices (its timing, on a shared machine, cannot be replayed);
// VIGIL_CRASH_WALL bounds its wall time; VIGIL_CRASH_BIN runs a binary
// built elsewhere instead of building cmd/vigil; VIGIL_CRASH_EVERY sets
// the timers' every ("" for the plugin's default); VIGIL_CRASH_FIRE_BOUND
// the firing bound.
//
// What it must never do: import the product's packages to reach into the
// host (it talks HTTP to the binary, as an operator's client would, and
// shares only the wire types of api/), listen anywhere but 127.0.0.1, or
// leave a process or goroutine behind (each start is killed in t.Cleanup).
//
// Why a separate binary and SIGKILL: the guarantees under test are about
// what survives the process dying between any two instructions, which only
// a real process killed from outside shows. A SIGKILL leaves written pages
// in the page cache, so this harness cannot see a missing fsync; the
// store's own tests cover the order of write, sync and acknowledgement.
//
// Rejected alternative: an in-process host (internal/apitest) stopped by
// cancelling its context. A cancelled context runs the host's shutdown
// path, the one path a crash skips, and a panic or a closed store inside
// the test process cannot stop in the middle of a badger commit the way a
// killed process does.
package crashtest
