// Package plugintest is test support for the bundled plugins: what their
// tests share, such as compiling a params schema the way the host does,
// through sdktest, the test-support module an outside author's tests use,
// so the bundled plugins are held to the very check authors are. It must
// never be imported by a plugin's own code, which is built to wasm
// and has no use for a schema compiler.
//
// Rejected: a schema compiler of the bundled plugins' own, which could
// pass a schema the host refuses.
package plugintest
