package sdktest

import (
	"embed"
	"io/fs"
)

// source is this module as it is built: its go.mod and its non-test Go
// files, named one by one so no test file is carried (TestSource says
// when a file of the package is missing here).
//
//go:embed go.mod doc.go sdktest.go source.go
var source embed.FS

// Source returns this module's source: go.mod and the package's non-test
// .go files. Written into a directory, it is a module a plugin's tests can
// depend on with a replace directive until the module is published;
// vigil plugin new writes it beside a generated Go plugin that way, next
// to the SDK's (sdk.Source).
func Source() fs.FS { return source }
