package badger

import (
	"testing"

	"github.com/vigilhq/vigil/store/storetest"
)

// The store on badger passes the domain suite, reopening the same
// directory as a restart would.
func TestStoreConformance(t *testing.T) {
	p := places()
	storetest.Run(t, p.Open, p.Reopen)
}
