// Package abi is the wire contract between the vigil host and a predicate
// plugin: ABI vigil.predicate/v1. It holds the JSON shapes of the three
// exports every plugin has (describe, admit, observe), of the optional one
// (wake: an inbound event to the partition keys it concerns), and of the
// host functions a plugin may call (vigil_fetch, vigil_extraction_failed,
// vigil_exec), plus the grammar rules both sides check.
//
// It owns the shapes and nothing else. It must never import another package
// of this repository, and nothing outside the standard library: the guest SDK
// compiles it into every plugin (GOOS=wasip1), and the host compiles it into
// the daemon, so one definition serves both sides and they cannot drift.
//
// It lives in the SDK's module (github.com/vigilhq/vigil/sdk), not the
// host's, so a plugin's module requires the SDK alone and its build pulls
// nothing but the standard library; the host's module requires the SDK's
// (a replace to ./sdk until it is published). The ABI version and the
// SDK module's version move together.
//
// Rejected alternatives: each side declaring its own structs (the SDK and
// the runtime were the same contract written twice, and a renamed field
// would have broken plugins silently: an unknown field decodes to
// nothing); and the contract in the host's module, where it was first
// (importing it made a plugin's module require the whole host: wazero,
// extism, badger).
package abi
