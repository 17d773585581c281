package main

import "github.com/vigilhq/vigil/sdk"

// The plugin registers itself when the module starts; the SDK's exports
// (describe, admit, observe) then serve it.
func init() { sdk.Register(Plugin) }

// main is required by the Go toolchain and never runs as a program: the
// module is built as a reactor (-buildmode=c-shared) and only its exports
// are called.
func main() {}
