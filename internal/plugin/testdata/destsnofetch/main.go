// Command destsnofetch is a test plugin written against the Extism ABI without
// vigil's SDK, so it can answer admit with anything at all: its admit
// answers params.answer verbatim. Its kind is test.dests, and it declares
// no capability.
package main

import "github.com/vigilhq/vigil/internal/plugin/testdata/dests/echo"

//go:wasmexport describe
func describe() int32 { return echo.Describe(`[]`) }

//go:wasmexport admit
func admit() int32 { return echo.Admit() }

//go:wasmexport observe
func observe() int32 { return echo.Observe() }

func main() {}
