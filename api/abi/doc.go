// Package abi is the wire contract between the vigil host and a predicate
// plugin: ABI vigil.predicate/v1. It holds the JSON shapes of the three
// exports (describe, admit, observe) and of the host functions a plugin may
// call (vigil_fetch, vigil_extraction_failed, vigil_exec), plus the grammar
// rules both sides check.
//
// It owns the shapes and nothing else. It must never import another package
// of this repository, and nothing outside the standard library: the guest SDK
// compiles it into every plugin (GOOS=wasip1), and the host compiles it into
// the daemon, so one definition serves both sides and they cannot drift.
//
// Rejected alternative: each side declaring its own structs. The SDK and the
// runtime were the same contract written twice, and a renamed field would
// have broken plugins silently (an unknown field decodes to nothing).
package abi
