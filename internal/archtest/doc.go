// Package archtest holds no code: its tests read the module's import
// graph (go list) and hold the architecture to it: no package below the
// host imports one of its components, the host is under internal/ and
// each public package's doc.go says who imports it, no package re-exports
// another's name, and docs/ARCHITECTURE.md has one row per package whose
// "depends on" column is the package's real imports.
//
// It must never be imported: it is a test.
//
// Rejected: a dependency column written by hand and reviewed, which
// drifted from the code (rows named imports long removed and missed new
// ones).
package archtest
