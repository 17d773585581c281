// Package sdktest is test support for predicate plugins written with
// vigil's Go SDK: what an author's go test needs beyond the SDK's own
// [sdk.Harness]. [CheckSchema] is the one line that holds a plugin's
// describe to what the host will do with it: params_schema compiled the
// way the host compiles it (draft 2020-12, formats asserted, no reference
// outside the document), and the example validated against it.
// [CheckParams] holds the schema to a table of params, [CheckAdmit] holds
// an admit answer to the refusal expected, and [Observe], [Admit],
// [Answer] and [Failure] cut the boilerplate of a harness call and a
// recorded fetch.
//
// It is a module of its own, github.com/vigilhq/vigil/sdk/sdktest, because
// a schema compiler is a dependency (github.com/santhosh-tekuri/jsonschema,
// the library the host uses): a plugin imports it from its _test.go files
// only, so the plugin's build never pulls it, and the SDK's module stays
// the standard library alone.
//
// What it must never do: be imported by a plugin's non-test code (it
// imports testing, and a schema compiler has no use inside wasm), or judge
// a plugin by anything but the contract. Rejected alternatives: the
// schema check in the SDK itself, which would put the compiler into every
// plugin's module graph; and a schema check of the SDK's own, which would
// drift from the host's and pass a schema the host refuses.
package sdktest
