package fetch_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/fakeforge"
	"github.com/vigilhq/vigil/internal/fetch"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/internal/wasmbuild"
	"github.com/vigilhq/vigil/sdk/abi"
)

// The tests here run plugins built from their source in plugins/ inside
// the real runtime, their fetches issued by the real issuer on a clock the
// test moves.

var builder wasmbuild.Builder

func TestMain(m *testing.M) {
	code := m.Run()
	builder.Cleanup()
	os.Exit(code)
}

// stepClock stands still until the test moves it; a pacing wait moves it.
// Its timers do not fire: these tests move it by less than any fetch
// bound. It starts at the wall clock's instant, because the issuer
// compares it with the plugin call's deadline, and the runtime's observe
// timeout (two minutes) outlasts how far a test moves it.
func stepClock() *fakeclock.Clock { return fakeclock.At(time.Now()).AdvanceOnSleep() }

// runtime builds the plugin at plugins/<name> into a plugin directory with
// registry, and runs it with an issuer on clk.
func runtime(t *testing.T, name, registry string, clk clock.Clock) *plugin.Runtime {
	t.Helper()
	dir := t.TempDir()
	wasm, err := os.ReadFile(builder.Build(t, filepath.Join("..", "..", "plugins", name)))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, plugin.RegistryFile), []byte(registry), 0o644); err != nil {
		t.Fatal(err)
	}
	is, err := fetch.New(fetch.Config{Clock: clk, Secrets: map[string]string{"forge": "s3cret-forge-token"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(is.CloseIdleConnections)
	rt, err := plugin.New(context.Background(), plugin.Config{
		Dir: dir, CacheDir: wasmbuild.CacheDir(), Fetcher: is, SecretNames: []string{"forge"},
		Limits: plugin.Limits{ObserveTimeout: 2 * time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	for _, p := range rt.Problems() {
		t.Fatalf("plugin not loaded: %v", p)
	}
	return rt
}

const loopbackGrant = `{"capabilities":["fetch"],"fetch_hosts":["127.0.0.1"],"private_ranges":["127.0.0.1/32"],"secrets":["forge"]}`

// Four watches of one issue at the ticket kind's one-minute cadence,
// probed 15 s apart for two minutes, as the scheduler probes them (the
// cadence on the call's context), cost the forge two reads of the issue.
func TestFourTicketWatchesOneReadAMinute(t *testing.T) {
	forge := fakeforge.New(t)
	forge.SetIssue("o/r", 7, fakeforge.Issue{Title: "crash on start", State: "open", Body: "steps", Comments: 1})
	clock := stepClock()
	rt := runtime(t, "ticket", `{"kinds":{"ticket":`+loopbackGrant+`}}`, clock)
	params, _ := json.Marshal(map[string]any{"forge": "github", "api_base": forge.URL(), "repo": "o/r", "number": 7, "token_ref": "forge"})
	ctx := kind.WithCadence(context.Background(), time.Minute)
	baselines := make([]json.RawMessage, 4)
	for probe := range 8 {
		w := probe % 4
		obs, err := rt.Observe(ctx, abi.ObserveRequest{Kind: "ticket", WatchID: string(rune('a' + w)), Params: params,
			Now: clock.Now(), Attempt: probe/4 + 1, Baseline: baselines[w]})
		if err != nil || obs.Status != abi.StatusPending || obs.Fault != nil {
			t.Fatalf("probe %d: %+v %v", probe, obs, err)
		}
		if len(obs.Baseline) > 0 {
			baselines[w] = obs.Baseline
		}
		clock.Add(15 * time.Second)
	}
	if n := forge.Requests("/repos/o/r/issues/7"); n != 2 {
		t.Fatalf("%d reads of the issue for four watches over two minutes, want 2 (paths %v)", n, forge.Paths())
	}
}

// A kind's min_read_interval is a floor on how often one resource is
// read, whatever each watch's every: one ticket watch at 5 s beside three
// at a minute, probed as the scheduler probes them for two minutes (the
// 5 s one every 5 s, the others 10, 20 and 30 s into each minute), cost
// the forge one read of the issue a minute under the bundled ticket
// entry's floor of 1m. Without the floor the 5 s watch reads at each of
// its 24 probes.
func TestTicketReadFloorOneReadAMinute(t *testing.T) {
	for _, tt := range []struct {
		name, floor string
		reads       int
	}{
		{"floor 1m", `,"min_read_interval":"1m"`, 2},
		{"no floor", ``, 24},
	} {
		t.Run(tt.name, func(t *testing.T) {
			forge := fakeforge.New(t)
			forge.SetIssue("o/r", 7, fakeforge.Issue{Title: "crash on start", State: "open", Body: "steps"})
			clock := stepClock()
			grant := strings.TrimSuffix(loopbackGrant, "}") + tt.floor + "}"
			rt := runtime(t, "ticket", `{"kinds":{"ticket":`+grant+`}}`, clock)
			params, _ := json.Marshal(map[string]any{"forge": "github", "api_base": forge.URL(), "repo": "o/r", "number": 7, "token_ref": "forge"})
			baselines := map[string]json.RawMessage{}
			probe := func(watch string, every time.Duration) {
				t.Helper()
				obs, err := rt.Observe(kind.WithCadence(context.Background(), every), abi.ObserveRequest{Kind: "ticket", WatchID: watch, Params: params,
					Now: clock.Now(), Attempt: 1, Baseline: baselines[watch]})
				if err != nil || obs.Status != abi.StatusPending || obs.Fault != nil {
					t.Fatalf("%s at %s: %+v %v", watch, clock.Now(), obs, err)
				}
				if len(obs.Baseline) > 0 {
					baselines[watch] = obs.Baseline
				}
			}
			start := clock.Now()
			for step := range 24 { // 0 s to 115 s, 5 s apart
				at := time.Duration(step) * 5 * time.Second
				clock.Set(start.Add(at))
				probe("fast", 5*time.Second)
				for i, w := range []string{"slow-a", "slow-b", "slow-c"} {
					if at%time.Minute == time.Duration(i+1)*10*time.Second {
						probe(w, time.Minute)
					}
				}
			}
			if n := forge.Requests("/repos/o/r/issues/7"); n != tt.reads {
				t.Fatalf("%d reads of the issue in two minutes, want %d (paths %v)", n, tt.reads, forge.Paths())
			}
		})
	}
}

// The http plugin, where json_path finds no JSON, has the issuer forget
// the body's validators: the next check fetches in full, so the origin's
// 304 cannot re-serve the broken body.
func TestHTTPExtractionFailureForgetsValidators(t *testing.T) {
	var conditional atomic.Int64
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") == `"v1"` {
			conditional.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", `"v1"`)
		_, _ = w.Write([]byte("<html>maintenance</html>"))
	}))
	t.Cleanup(origin.Close)
	clock := stepClock()
	rt := runtime(t, "http", `{"kinds":{"http":`+loopbackGrant+`}}`, clock)
	params, _ := json.Marshal(map[string]any{"url": origin.URL + "/health", "expect": map[string]any{"json_path": map[string]any{"path": "status", "equals": "ok"}}})
	for probe := range 3 {
		obs, err := rt.Observe(context.Background(), abi.ObserveRequest{Kind: "http", WatchID: "w", Params: params, Now: clock.Now(), Attempt: probe + 1})
		if err != nil || obs.Status != abi.StatusPending || obs.Note != "body is not JSON" {
			t.Fatalf("probe %d: %+v %v", probe, obs, err)
		}
		clock.Add(30 * time.Second)
	}
	if n := conditional.Load(); n != 0 {
		t.Fatalf("%d conditional requests after a failed extraction", n)
	}
}
