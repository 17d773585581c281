// Package syncbuf is test support: a bytes.Buffer that a logger, a child
// process's output and a test may share, each Write and each read under
// one lock.
//
// What it must never do: be imported by product code (the host's logs go
// to its own writers, unbuffered), or hand out the bytes it holds for a
// caller to read outside the lock (String copies them).
//
// Rejected: a copy of the same dozen lines in each package's tests, which
// is how three of them came to exist while the end-to-end tests read a
// plain bytes.Buffer that a child's output was still being written into.
package syncbuf
