// Package sdk is how a predicate plugin for vigil is written in standard Go.
//
// An author writes a params struct, an admit function and an observe
// function, and registers them once from init:
//
//	func init() {
//		sdk.Register(sdk.Plugin[Params]{
//			Kind:    "timer",
//			Version: "1.0.0",
//			Schema:  schema,
//			Observe: observe,
//		})
//	}
//
//	func main() {}
//
// and builds with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -buildvcs=false -o timer.wasm .
//
// The SDK owns the Extism ABI (reading input and writing output through the
// kernel's memory, reporting errors through error_set), the JSON of the
// vigil.predicate/v1 contract, strict params decoding and kind checking. The
// predicate owns one question: has this settled?
//
// What a predicate must never do: read the wall clock (Input.Now is the
// host's); sleep, poll or loop waiting for its subject (one observe is one
// bounded observation, and [Result.CheckAt] asks for the next); report "I
// could not tell" as a failure (a timeout, a 503, a rate limit are
// [Pending]); reach the network except through [Input.Fetch]; answer a
// call for another kind with anything but an error (it is a routing bug).
// docs/writing-a-plugin.md says why each.
//
// The ABI layer exists only under GOOS=wasip1; elsewhere the package builds
// with the same API, so predicate logic is tested with plain go test, with
// a fake [Fetcher] or through [NewHarness]. [Source] is this module's own
// source, for writing it beside a plugin until the module is published.
// Register keeps the one registered plugin in a package variable, the one
// piece of package state, forced by the ABI's process-wide exports.
//
// Rejected: the SDK as a package of the host's module, where requiring it
// meant requiring wazero, extism and badger for a guest that uses none of
// them. It is a module of its own, requiring nothing outside the standard
// library, its tests included; what an author's tests need beyond that is
// the test-support module sdk/sdktest, which a plugin's build never pulls.
package sdk
