// Package apitest assembles, for tests, the host behind the REST API the
// way vigil serve does (internal/core over a real badger store in a temporary
// directory, its outbox running, the scheduler driven by the test's Tick),
// serves a fiber app on a loopback listener for the length of a test, and
// gives FakePlugins, the fake kinds (internal/hosttest) as the plugin
// runtime the API reads.
//
// It is test support and must never be imported by the product. It does
// not import internal/httpapi, so httpapi's own tests can use it too.
//
// Rejected: each API test wiring the components itself, which could
// drift from serve's wiring (internal/core exists for the same reason).
package apitest
