// Package conformance will hold the suite plugin authors run against their
// .wasm (`vigil conformance FILE`, or conformance.Run from their own go
// test), and the deliberately broken plugins that prove each check bites.
//
// It is empty until the suite lands; plugin authors can already unit-test
// predicate logic with sdk.NewHarness.
package conformance
