package main

import "github.com/vigilhq/vigil/sdk"

func init() { sdk.Register(Plugin) }

func main() {}
