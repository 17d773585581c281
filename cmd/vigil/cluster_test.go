package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/httpapi"
	"github.com/vigilhq/vigil/internal/kind"
)

// vigil cluster prints the one node, its plugin set digest and no
// partitions; --json is the API's answer.
func TestClusterPrintsTheNode(t *testing.T) {
	f := newCLIFixture(t, httpapi.Options{})
	out := f.mustVigil(t, "cluster")
	digest := kind.SetDigest(cliPlugins().Plugins())
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

// On a cluster, vigil cluster counts each node's partitions and gives
// each lease's age at the reader's now: never negative when the servers'
// clock is ahead, a dash for a lease nobody holds.
func TestClusterPrintsLeaseAges(t *testing.T) {
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	out := api.Cluster{Mode: "cluster",
		Nodes: []api.ClusterNode{{ID: "a/1", Name: "a", StartedAt: now.Add(-time.Hour), PluginSetDigest: "d", Self: true}, {ID: "b/1", Name: "b", StartedAt: now.Add(-time.Hour), PluginSetDigest: "d"}},
		Jobs:  []api.ClusterPartition{{ID: "j.upkeep", Owner: "a", RenewedAt: at(1234 * time.Millisecond)}},
		Partitions: []api.ClusterPartition{{ID: "p.0", Owner: "a", RenewedAt: at(2 * time.Second)}, {ID: "p.1", Owner: "b", RenewedAt: at(-time.Second)},
			{ID: "p.2", Owner: "b", RenewedAt: at(0)}, {ID: "p.3"}},
	}
	var buf bytes.Buffer
	if err := printCluster(&buf, out, now); err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(buf.String(), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			rows[f[0]] = f
		}
	}
	for id, want := range map[string][]string{
		"a/1":      {"a/1", "a", "-", now.Add(-time.Hour).Format(time.RFC3339), "d", "true", "1", "false"},
		"b/1":      {"b/1", "b", "-", now.Add(-time.Hour).Format(time.RFC3339), "d", "false", "2", "false"},
		"j.upkeep": {"j.upkeep", "a", at(1234 * time.Millisecond).Format(time.RFC3339Nano), "1.2s"},
		"p.0":      {"p.0", "a", at(2 * time.Second).Format(time.RFC3339Nano), "2s"},
		"p.1":      {"p.1", "b", at(-time.Second).Format(time.RFC3339Nano), "0s"},
		"p.3":      {"p.3", "-", "-", "-"},
	} {
		if got := rows[id]; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("row %s = %q, want %q\n%s", id, got, want, buf.String())
		}
	}
}
