// Package fakeclock is test support: a clock that stands still until the
// test moves it, safe to read from the goroutines under test. It owns
// nothing but the instant; it must never be used by product code, which
// reads the wall clock through the Clock its components are given.
//
// One here rather than a copy per package: the scheduler's, observe's and
// the upkeep's tests each had the same mutex-guarded struct.
package fakeclock
