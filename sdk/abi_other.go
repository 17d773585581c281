//go:build !wasip1

package sdk

// Config returns the value of key in the plugin's Extism config. Outside a
// plugin there is no config: it reports false.
func Config(key string) (string, bool) { return "", false }

// Log hands msg to the Extism kernel's log functions, which the vigil
// host discards today (docs/abi.md). Outside a plugin it does nothing.
func Log(level LogLevel, msg string) {}

// wakeLinkProblem is nil outside a plugin: there are no exports to
// disagree with Wake, and a Harness calls Wake directly.
func wakeLinkProblem(bool) error { return nil }
