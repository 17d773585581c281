//go:build !wasip1

package sdk

// Config returns the value of key in the plugin's Extism config. Outside a
// plugin there is no config: it reports false.
func Config(key string) (string, bool) { return "", false }

// Log writes msg to the host's log for this plugin. Outside a plugin it
// does nothing.
func Log(level LogLevel, msg string) {}
