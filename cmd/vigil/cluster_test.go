package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/host/httpapi"
	"github.com/vigilhq/vigil/host/kind"
)

// vigil cluster prints the one node, its plugin set digest and no
// partitions; --json is the API's answer.
func TestClusterPrintsTheNode(t *testing.T) {
	f := newCLIFixture(t, httpapi.Options{})
	out := f.mustVigil(t, "cluster")
	digest := kind.SetDigest(cliPlugins{}.Plugins())
	for _, want := range []string{"mode: single", "PLUGIN SET", digest, "partitions: none"} {
		if !strings.Contains(out, want) {
			t.Errorf("vigil cluster lacks %q:\n%s", want, out)
		}
	}
	raw := f.mustVigil(t, "cluster", "--json")
	c := decodeJSON[api.Cluster](t, raw)
	if c.Mode != "single" || len(c.Nodes) != 1 || c.Nodes[0].PluginSetDigest != digest || c.Partitions == nil || len(c.Partitions) != 0 {
		t.Errorf("%+v", c)
	}
	if !regexp.MustCompile(`"partitions":\s*\[\s*\]`).MatchString(raw) {
		t.Errorf("--json gives no partitions as other than []:\n%s", raw)
	}
}
