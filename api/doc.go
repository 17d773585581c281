// Package api is vigil's wire contract: the REST types, the error codes
// (types.go: one code, one status) and openapi.yaml. The plugin ABI
// (vigil.predicate/v1) is the SDK module's package
// github.com/vigilhq/vigil/sdk/abi, so a plugin needs the SDK alone.
//
// It must never import anything else of this repository: host/ and store/
// depend on the contract, never the reverse, and a client imports it
// without the host.
//
// Rejected: error codes declared where they are raised (the scheduler's,
// the recipients'), where two packages could name one code twice and the
// OpenAPI document drift from both; every code lives here, once.
//
// Public: the wire contract, for any program that speaks to vigil.
package api
