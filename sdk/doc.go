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
// What a predicate must never do, and why:
//   - Read the wall clock. Input.Now is the host's clock; a plugin that reads
//     its own is not deterministic under the host's fake clock, and under
//     Extism the guest clock is fixed at 2022-01-01 anyway.
//   - Sleep, poll, or loop waiting for its subject. One observe is one
//     bounded observation; the host re-asks at the watch's interval and
//     honours a [Result.CheckAt] hint. A call that runs past its timeout is
//     killed and its instance discarded.
//   - Report "I could not tell" as a failure. A timeout, a 503, a rate limit
//     are [Pending]: a recipient acts differently on "not yet" and on "it
//     failed", and collapsing the two is how a network blip reads as a red
//     build.
//   - Reach the network except through [Input.Fetch]. There is no other
//     socket; admit gets no Input at all, because admission is a
//     configuration check and a forge that is down now may be up later.
//
// A call for another kind than the registered one is an error, never
// pending: it is a routing bug, and a silent "not yet" would hide it for the
// life of the watch.
//
// The ABI layer exists only under GOOS=wasip1. On any other platform the
// package builds with the same API, so predicate logic is unit-tested with
// plain go test: call the observe function with an [Input] that carries a
// fake [Fetcher], or run the whole JSON path through [NewHarness].
//
// The SDK is a Go module of its own, github.com/vigilhq/vigil/sdk, with the
// wire contract in its package abi, and it requires nothing outside the
// standard library, its tests included: a plugin's go.sum names no module
// but the SDK. What an author's tests need beyond that (a JSON Schema
// compiler) lives in the test-support module, which a plugin's build never
// pulls. [Source] is this module's own source, for writing it beside a
// plugin until the module is published. Rejected: the SDK as a package of
// the host's module, where requiring it meant requiring wazero, extism and
// badger for a guest that uses none of them.
//
// Register keeps the one registered plugin in a package variable. That is
// the single piece of package state here and it is forced by the ABI: the
// exports are process-wide functions with no receiver. (The optional wake
// export adds the same kind of state in sdk/internal/export: it lives in
// package sdk/wake, so only a plugin that wakes exports it.)
//
// A plugin may also say when its first probe is worth making (a timer's
// instant: Plugin.FirstCheck, admit's next_check) and which of its
// watches an inbound event concerns (Plugin.Wake, with the import of
// sdk/wake): the host then arms a new watch at its first check instead of
// probing it at once, and makes the watches an event names due now.
package sdk
