package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/fakeforge"
	"github.com/vigilhq/vigil/internal/fetch"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/internal/wasmbuild"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

const sha = "0123456789abcdef0123456789abcdef01234567"

// forgeRuntime runs the bundled plugins inside the real runtime, their
// fetches issued by the real issuer, with the registry entries given (the
// fake forge listens on 127.0.0.1, so a test grants that range
// explicitly). The issuer holds results for a nanosecond, so each observe
// reads the forge afresh.
func forgeRuntime(t *testing.T, registry string) (*plugin.Runtime, *store.Store) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, plugin.RegistryFile), []byte(registry), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := badger.OpenStore(t.TempDir(), badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	is, err := fetch.New(fetch.Config{MinInterval: time.Nanosecond, Secrets: map[string]string{"forge": "s3cret-forge-token"}, Log: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(is.CloseIdleConnections)
	rt, err := plugin.New(context.Background(), plugin.Config{
		Bundled: Bundled(), Dir: dir, CacheDir: wasmbuild.CacheDir(), Fetcher: is, SecretNames: []string{"forge"},
		Limits: plugin.Limits{ObserveTimeout: 2 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	for _, p := range rt.Problems() {
		t.Fatalf("plugin not loaded: %v", p)
	}
	return rt, st
}

const forgeGrant = `{"capabilities":["fetch"],"fetch_hosts":["127.0.0.1"],"private_ranges":["127.0.0.1/32"],"secrets":["forge"]}`

func observe(t *testing.T, rt *plugin.Runtime, kind string, params any, baseline json.RawMessage) kind.Observation {
	t.Helper()
	p, _ := json.Marshal(params)
	if _, err := rt.Admit(context.Background(), kind, p); err != nil {
		t.Fatalf("admit %s: %v", p, err)
	}
	obs, err := rt.Observe(context.Background(), abi.ObserveRequest{Kind: kind, WatchID: "w1", Params: p, Now: t0, Attempt: 1, Baseline: baseline})
	if err != nil {
		t.Fatalf("observe %s: %v", p, err)
	}
	return obs
}

// The ci plugin, compiled to wasm, fetching through the issuer from a fake
// GitHub: no checks is pending, running is pending, a forge timing out is
// pending, mixed results settle failure naming the failures, and the
// secret reaches the forge only as the host's Authorization header.
func TestCIThroughTheIssuer(t *testing.T) {
	forge := fakeforge.New(t)
	rt, st := forgeRuntime(t, `{"kinds":{"ci":`+forgeGrant+`}}`)
	params := map[string]string{"forge": "github", "api_base": forge.URL(), "repo": "o/r", "sha": sha, "token_ref": "forge"}

	// Not pushed yet: the forge does not know the commit.
	if obs := observe(t, rt, "ci", params, nil); obs.Status != abi.StatusPending {
		t.Fatalf("unknown commit: %+v", obs)
	}
	forge.SetCheckRuns("o/r", sha)
	if obs := observe(t, rt, "ci", params, nil); obs.Status != abi.StatusPending || !strings.Contains(obs.Note, "no checks") {
		t.Fatalf("no checks yet: %+v", obs)
	}
	forge.SetCheckRuns("o/r", sha, fakeforge.CheckRun{Name: "build", Status: "completed", Conclusion: "success"}, fakeforge.CheckRun{Name: "test", Status: "in_progress"})
	if obs := observe(t, rt, "ci", params, nil); obs.Status != abi.StatusPending {
		t.Fatalf("running: %+v", obs)
	}
	// A force-push: results for another commit answer nothing about this one.
	const other = "89abcdef0123456789abcdef0123456789abcdef"
	forge.SetCheckRuns("o/r", other, fakeforge.CheckRun{Name: "build", Status: "completed", Conclusion: "success"})
	if obs := observe(t, rt, "ci", params, nil); obs.Status != abi.StatusPending {
		t.Fatalf("another commit's checks answered: %+v", obs)
	}
	forge.SetCheckRuns("o/r", sha, fakeforge.CheckRun{Name: "build", Status: "completed", Conclusion: "success"}, fakeforge.CheckRun{Name: "test", Status: "completed", Conclusion: "failure"})
	obs := observe(t, rt, "ci", params, nil)
	if obs.Status != abi.StatusSettled || obs.Outcome.Result != "failure" || !strings.Contains(obs.Outcome.Summary, "test") {
		t.Fatalf("mixed: %+v", obs)
	}
	for _, p := range forge.Paths() {
		for _, h := range forge.Headers(p) {
			if got := h.Get("Authorization"); got != "Bearer s3cret-forge-token" {
				t.Fatalf("%s: Authorization %q", p, got)
			}
			if n := len(h.Values("User-Agent")); n != 1 {
				t.Fatalf("%s: %d user-agent lines", p, n)
			}
		}
	}
	// The forge times out: could not tell, never a failure.
	forge.SetCheckRuns("o/r", sha, fakeforge.CheckRun{Name: "build", Status: "completed", Conclusion: "success"})
	forge.Hang("/repos/o/r/commits/"+sha+"/check-runs", 5*time.Second)
	if obs := observe(t, rt, "ci", params, nil); obs.Status != abi.StatusPending {
		t.Fatalf("forge timing out: %+v", obs)
	}
	forge.Heal("/repos/o/r/commits/" + sha + "/check-runs")
	forge.Fail("/repos/o/r/commits/"+sha+"/check-runs", 503, 0)
	if obs := observe(t, rt, "ci", params, nil); obs.Status != abi.StatusPending {
		t.Fatalf("forge answering 503: %+v", obs)
	}
	// Every fetch is a fact; no fact holds the secret.
	facts, err := st.ReadEvents(context.Background(), fetch.StreamFacts, 0, 1000)
	if err != nil || len(facts) == 0 {
		t.Fatalf("facts: %d %v", len(facts), err)
	}
	for _, f := range facts {
		if strings.Contains(string(f.Payload), "s3cret-forge-token") {
			t.Fatalf("a fact holds the secret: %s", f.Payload)
		}
	}
}

// The bundled grants reach only api.github.com: a forge elsewhere is
// refused at admit, naming the setting. Granted the host but not its
// private address, the watch is refused at admit too (the API root ci
// names is loopback), naming kinds.ci.private_ranges; and a watch that got
// past admission (stored before the check existed) meets the destination
// guard at the fetch and stays pending.
func TestCIForgeGrants(t *testing.T) {
	forge := fakeforge.New(t)
	rt, st := forgeRuntime(t, `{"kinds":{}}`)
	p, _ := json.Marshal(map[string]string{"forge": "gitea", "api_base": forge.GiteaURL(), "repo": "o/r", "sha": sha})
	_, err := rt.Admit(context.Background(), "ci", p)
	var ref *api.Error
	if !errors.As(err, &ref) || ref.Code != api.CodeWatchUnobservable || ref.Setting != "kinds.ci.fetch_hosts" {
		t.Fatalf("ungranted forge: %v", err)
	}

	rt, st = forgeRuntime(t, `{"kinds":{"ci":{"capabilities":["fetch"],"fetch_hosts":["127.0.0.1"]}}}`)
	_, err = rt.Admit(context.Background(), "ci", p)
	if !errors.As(err, &ref) || ref.Code != api.CodeDestinationRefused || ref.Setting != "kinds.ci.private_ranges" || ref.Field != "params.api_base" {
		t.Fatalf("a loopback forge without its private range: %v", err)
	}
	obs, err := rt.Observe(context.Background(), abi.ObserveRequest{Kind: "ci", WatchID: "w1", Params: p, Now: t0, Attempt: 1})
	if err != nil || obs.Status != abi.StatusPending || !strings.Contains(obs.Note, abi.FetchDestinationRefused) {
		t.Fatalf("loopback without a private range: %+v", obs)
	}
	if n := forge.Requests(fakeforge.GiteaPrefix + "/repos/o/r/commits/" + sha + "/status"); n != 0 {
		t.Fatalf("the refused fetch reached the forge %d times", n)
	}
	dl, err := st.ReadEvents(context.Background(), fetch.StreamDeadLetters, 0, 10)
	if err != nil || len(dl) != 1 {
		t.Fatalf("dead letters: %+v %v", dl, err)
	}
}

// The ticket plugin as a standing watch through the issuer: the first
// check is a baseline, silently; a change is mailed with what moved.
func TestTicketThroughTheIssuer(t *testing.T) {
	forge := fakeforge.New(t)
	rt, _ := forgeRuntime(t, `{"kinds":{"ticket":`+forgeGrant+`}}`)
	forge.SetIssue("o/r", 7, fakeforge.Issue{Title: "crash on start", State: "open", Body: "steps", Comments: 1})
	params := map[string]any{"forge": "github", "api_base": forge.URL(), "repo": "o/r", "number": 7, "token_ref": "forge"}
	first := observe(t, rt, "ticket", params, nil)
	if first.Status != abi.StatusPending || len(first.Baseline) == 0 || first.Outcome != nil {
		t.Fatalf("first check: %+v", first)
	}
	if same := observe(t, rt, "ticket", params, first.Baseline); same.Status != abi.StatusPending || same.Outcome != nil {
		t.Fatalf("unchanged: %+v", same)
	}
	forge.SetIssue("o/r", 7, fakeforge.Issue{Title: "crash on start", State: "closed", Body: "steps", Comments: 2})
	changed := observe(t, rt, "ticket", params, first.Baseline)
	if changed.Status != abi.StatusChanged || changed.Outcome == nil || !strings.Contains(string(changed.Outcome.Detail), "state") {
		t.Fatalf("changed: %+v", changed)
	}
}
