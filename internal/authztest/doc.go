// Package authztest is test support: it builds an authorization Guard
// from a map of tokens to principals, each granted the same roles and
// acting for the recipient of its own name, so that tests of the API, the
// client and the CLI put a policy in force in one line.
//
// What it must never do: be imported by product code, or build a policy
// any way but through authz.Compile. The product compiles its policy from
// the config file; a Guard assembled here by hand could pass a test with
// a policy the product would refuse.
package authztest
