// Command standing is a well-behaved standing plugin, the base unchanged:
// the suite must pass it on every check.
package main

import (
	"github.com/vigilhq/vigil/conformance/testdata/base"
	"github.com/vigilhq/vigil/sdk"
)

func init() { sdk.Register(base.Plugin("good.standing", true)) }

func main() {}
