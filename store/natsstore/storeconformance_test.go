package natsstore

import (
	"testing"

	"github.com/vigilhq/vigil/store/storetest"
)

// The store on JetStream passes the domain suite badger's passes, each
// subtest in a bucket of its own; reopening closes the adapter and opens
// the same bucket again, as a restart of the node would.
func TestStoreConformance(t *testing.T) {
	p := places(t, "domain")
	storetest.Run(t, p.Open, p.Reopen)
}
