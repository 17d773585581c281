// Package api is vigil's wire contract: the REST types, error codes,
// openapi.yaml and the fiber server of the HTTP API. The plugin ABI
// (vigil.predicate/v1) is the SDK module's package
// github.com/vigilhq/vigil/sdk/abi, so a plugin needs the SDK alone.
//
// api and its subpackages import nothing else of this repository: host/
// and store/ depend on the contract, never the reverse.
package api
