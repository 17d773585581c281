package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/internal/cluster"
)

var _ cluster.Metrics = (*Cluster)(nil)

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	return string(body)
}

// The lease instruments exist only once Cluster registers them, and count
// what the node tells them.
func TestClusterMetricsOnANodeOnly(t *testing.T) {
	m := New(nil)
	if body := scrape(t, m); strings.Contains(body, "vigil_cluster_") {
		t.Fatalf("one host exposes cluster metrics:\n%s", body)
	}
	c := m.Cluster()
	c.Held(5, 2)
	c.Moved(true)
	c.Moved(true)
	c.Moved(false)
	c.Renewed(true)
	c.Renewed(false)
	body := scrape(t, m)
	for _, want := range []string{
		`vigil_cluster_leases_held{kind="partition"} 5`,
		`vigil_cluster_leases_held{kind="job"} 2`,
		`vigil_cluster_lease_moves_total{direction="gained"} 2`,
		`vigil_cluster_lease_moves_total{direction="lost"} 1`,
		`vigil_cluster_lease_renewals_total{result="ok"} 1`,
		`vigil_cluster_lease_renewals_total{result="refused"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("missing %q", want)
		}
	}
}
