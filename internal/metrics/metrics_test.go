package metrics

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/store"
)

type fakeStates map[store.State]int

func (f fakeStates) CountByState(context.Context) (map[store.State]int, error) { return f, nil }

func TestMetricsAreExposed(t *testing.T) {
	m := New(fakeStates{store.Pending: 3, store.Fired: 1})
	m.PluginCall("timer", "observe", "ok", 80*time.Microsecond)
	m.PluginCall("timer", "observe", "timeout", 5*time.Second)
	m.Probe("timer", "pending")
	m.Lag("timer", 30*time.Millisecond)
	m.Lag("early", -time.Second)
	m.Ready(7)
	m.Delivery(store.ReceiptDelivered, "mailbox")
	m.Fetch("ci", "rate_limited")
	m.FetchNotHeld()
	m.Record("duplicate")
	m.Route("appended")
	m.Push(store.PushSending)
	m.Refused("GET /api/v1/watches/:id", "not_found")
	m.Hook("github", "unverified")

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
		`vigil_fetch_not_held_total 1`,
		`vigil_probe_lag_seconds_bucket{kind="timer",le="0.025"} 0`,
		`vigil_probe_lag_seconds_bucket{kind="timer",le="0.05"} 1`,
		// A probe that started before it was due is on time, never a
		// negative lag that would take from the sum.
		`vigil_probe_lag_seconds_sum{kind="early"} 0`,
		`vigil_ready_queue_depth 7`,
		`vigil_plugin_call_seconds_bucket{export="observe",kind="timer",outcome="timeout",le="2.5"} 0`,
		`vigil_plugin_call_seconds_bucket{export="observe",kind="timer",outcome="timeout",le="5"} 1`,
		`vigil_deliveries_total{channel="mailbox",receipt="delivered"} 1`,
		`vigil_fetches_total{kind="ci",outcome="rate_limited"} 1`,
		`vigil_observed_records_total{outcome="duplicate"} 1`,
		`vigil_observed_routed_total{action="appended"} 1`,
		`vigil_webhook_pushes_total{state="sending"} 1`,
		`vigil_api_refusals_total{code="not_found",route="GET /api/v1/watches/:id"} 1`,
		`vigil_hook_events_total{outcome="unverified",source="github"} 1`,
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

type diskStates struct {
	fakeStates
	sp store.DiskSpace
}

func (d diskStates) DiskSpace() (store.DiskSpace, bool) { return d.sp, true }

// A store that measures its data directory backs the disk gauges: free,
// reserve, needed, and read-only while clients' writes are refused.
func TestTheStoresDiskIsExposed(t *testing.T) {
	m := New(diskStates{fakeStates{}, store.DiskSpace{Free: 900 << 10, Reserve: 300 << 10, Need: 1324 << 10, Full: true}})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		"vigil_store_free_bytes 921600", "vigil_store_reserve_bytes 307200", "vigil_store_needed_bytes 1.355776e+06", "vigil_store_read_only 1",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("missing %s", want)
		}
	}
	rec = httptest.NewRecorder()
	New(fakeStates{}).Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if body, _ := io.ReadAll(rec.Body); strings.Contains(string(body), "vigil_store_free_bytes") {
		t.Error("a store that measures no disk has the disk gauges")
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

// The plugin-call histogram reaches the longest observe call a registry
// allows: a kind's timeout of 2 minutes, or an exec grant's 2-minute
// command plus the default 5 s observe timeout. A timeout is then a bucket
// of its own, never lost in +Inf.
func TestPluginCallBucketsReachTheLongestTimeout(t *testing.T) {
	b := pluginCallBuckets()
	if longest := 2*time.Minute + 5*time.Second; b[len(b)-1] < longest.Seconds() {
		t.Fatalf("the last bucket is %gs, under the longest observe call %s", b[len(b)-1], longest)
	}
}

var _ scheduler.Metrics = (*Metrics)(nil)
