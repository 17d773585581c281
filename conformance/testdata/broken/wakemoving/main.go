// Command wakemoving is broken one way: its wake names a key that counts
// its calls in a package variable, so one event wakes other watches each
// time it is handed over (a replayed event would wake the wrong ones).
// Target: wake.deterministic.
package main

import (
	"strconv"

	"github.com/vigilhq/vigil/conformance/testdata/base"
	"github.com/vigilhq/vigil/sdk"
	_ "github.com/vigilhq/vigil/sdk/wake"
)

var wakes int

func init() {
	p := base.Plugin("broken.wakemoving", false)
	p.Wake = func(sdk.Event) ([]string, error) {
		wakes++ // the bug
		return []string{"resource/" + strconv.Itoa(wakes)}, nil
	}
	sdk.Register(p)
}

func main() {}
