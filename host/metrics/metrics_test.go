package metrics

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/store"
)

type fakeStates map[store.State]int

func (f fakeStates) CountByState(context.Context) (map[store.State]int, error) { return f, nil }

func TestMetricsAreExposed(t *testing.T) {
	m := New(fakeStates{store.Pending: 3, store.Fired: 1})
	m.PluginCall("timer", "observe", "ok", 80*time.Microsecond)
	m.PluginCall("timer", "observe", "timeout", 5*time.Second)
	m.Probe("timer", "pending")
	m.Delivery(store.ReceiptDelivered, "mailbox")
	m.Fetch("ci", "rate_limited")
	m.Record("duplicate")
	m.Route("appended")

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`vigil_watches{state="pending"} 3`,
		`vigil_watches{state="fired"} 1`,
		`vigil_watches{state="cancelled"} 0`,
		`vigil_plugin_call_seconds_count{export="observe",kind="timer",outcome="ok"} 1`,
		`vigil_plugin_faults_total{export="observe",kind="timer",reason="timeout"} 1`,
		`vigil_probes_total{kind="timer",result="pending"} 1`,
		`vigil_deliveries_total{channel="mailbox",receipt="delivered"} 1`,
		`vigil_fetches_total{kind="ci",outcome="rate_limited"} 1`,
		`vigil_observed_records_total{outcome="duplicate"} 1`,
		`vigil_observed_routed_total{action="appended"} 1`,
		`go_goroutines`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("missing %s", want)
		}
	}
	if strings.Contains(string(body), `vigil_plugin_faults_total{export="observe",kind="timer",reason="ok"}`) {
		t.Error("an ok call counted as a fault")
	}
}

// Two registries in one process do not collide: no global state.
func TestIndependentRegistries(t *testing.T) {
	a, b := New(nil), New(nil)
	a.Probe("timer", "pending")
	rec := httptest.NewRecorder()
	b.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if body, _ := io.ReadAll(rec.Body); strings.Contains(string(body), "vigil_probes_total{") {
		t.Fatal("a probe counted in one registry shows in the other")
	}
}
