// Package fakeclock is test support: the one fake of internal/clock's
// Clock, standing still until the test moves it (Set, Add) or a Sleep
// does, its timers firing as it passes them, safe to use from the
// goroutines under test. It must never be used by product code, which
// is given clock.Wall.
//
// Rejected: a fake per package (the scheduler's, the outbox's, the
// issuer's and the JetStream store's tests each had one, each with a
// different subset of timers and sleeps recorded).
package fakeclock
