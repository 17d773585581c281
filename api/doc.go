// Package api is vigil's wire contract. Its subpackage abi is the plugin
// ABI (vigil.predicate/v1); the REST types, error codes, openapi.yaml and
// the fiber server arrive with the HTTP API.
//
// api and its subpackages import nothing else of this repository: host/
// and store/ depend on the contract, never the reverse.
package api
