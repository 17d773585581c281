package main

import (
	"github.com/vigilhq/vigil/sdk"
	_ "github.com/vigilhq/vigil/sdk/wake" // the wake export: Plugin.Wake
)

func init() { sdk.Register(Plugin) }

func main() {}
