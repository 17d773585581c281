// Package schema holds the JSON Schemas (draft 2020-12) of every message
// of ABI vigil.predicate/v1: the input and output of each export
// (describe, admit, observe, and the optional wake) and of each host
// function (vigil_fetch, vigil_extraction_failed, vigil_exec), one file a
// message, named as [Files] lists them. docs/abi.md is their prose.
//
// It owns the schemas as data and nothing else. It must never be imported
// by a plugin's own code (the schemas are for tests and tools; embedded in
// a plugin they would only grow its .wasm), and it must never be edited
// apart from the Go types in package abi: a test in the host's module
// (api/abischema_test.go) holds every schema to its Go type in both
// directions, so a field added to one side only fails it.
//
// Rejected alternatives: schemas generated from the Go types at build
// time (a generator is one more tool between an author and the contract,
// and the schemas carry what a Go type cannot say: patterns, bounds, the
// rules between fields); and one file with every message under $defs,
// which a validator in another language can only use through a JSON
// pointer into it.
package schema
