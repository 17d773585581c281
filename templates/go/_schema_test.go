package main

import (
	"testing"

	"github.com/vigilhq/vigil/sdk"
	"github.com/vigilhq/vigil/sdk/sdktest"
)

// The schema compiles as the host compiles it, and the example validates.
func TestSchema(t *testing.T) { sdktest.CheckSchema(t, sdk.NewHarness(Plugin)) }
