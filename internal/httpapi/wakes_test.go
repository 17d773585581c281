package httpapi

import (
	"testing"

	"github.com/vigilhq/vigil/internal/kind"
)

// The plugin list and a plugin's detail say whether the kind wakes on
// events, as its Info does, and leave it out when it does not.
func TestPluginViewsSayWhetherAKindWakes(t *testing.T) {
	for _, wakes := range []bool{true, false} {
		i := kind.Info{Kind: "ci", Wakes: wakes}
		if got := toPlugin(i).Wakes; got != wakes {
			t.Errorf("list: wakes %v, want %v", got, wakes)
		}
		if got := toPluginDetail(i).Wakes; got != wakes {
			t.Errorf("detail: wakes %v, want %v", got, wakes)
		}
	}
}
