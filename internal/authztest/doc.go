// Package authztest builds authorization policies for tests: a Guard
// from a map of tokens to principals, each with the same roles.
//
// It must never be imported by the product: the product compiles its
// policy from the config file (cmd/vigil, host), where every token is
// checked and every problem named. It goes through authz.Compile like the
// product, never around it, so a test's policy obeys the same rules (a
// token's length, the reserved name local) as the one it stands in for.
//
// Rejected: a test-only constructor in internal/authz itself, which would
// leave a way to build a Policy the config file could not describe.
package authztest
