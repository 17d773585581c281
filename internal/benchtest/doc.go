// Package benchtest is what vigil's benchmarks share: timing each call of
// a benchmark, on one goroutine or several, and reporting the latencies'
// p50 and p99 beside Go's mean; and waiting for badger's table files to
// settle before a timed part (TableFiles, WaitTables).
//
// It is test support and must never be imported by the product. It
// imports the standard library alone, so any package's own benchmarks can
// use it without an import cycle.
//
// Rejected: Go's mean alone, which hides the tail a scheduler's lateness
// lives in.
package benchtest
