// Command movingkey is broken one way: its admit names a partition key
// that counts its admits in a package variable, so one resource's
// watches would land in scattered partitions of a cluster and be read
// once per node instead of once. Target: admit.deterministic.
package main

import (
	"strconv"

	"github.com/vigilhq/vigil/conformance/testdata/base"
	"github.com/vigilhq/vigil/sdk"
)

var admits int

func init() {
	p := base.Plugin("broken.movingkey", false)
	p.PartitionKey = func(base.Params) string {
		admits++ // the bug
		return "resource/" + strconv.Itoa(admits)
	}
	sdk.Register(p)
}

func main() {}
