package hooks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/internal/fakeforge"
	"github.com/vigilhq/vigil/internal/fetch"
	"github.com/vigilhq/vigil/internal/hooks"
	"github.com/vigilhq/vigil/internal/httpapi"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/lifecycle"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/internal/wasmbuild"
	"github.com/vigilhq/vigil/plugins"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/storetest"
)

const e2eSecret = "a-github-hook-secret"

// ciHost is the host's parts a hook reaches, real: the bundled ci plugin
// in the plugin runtime, its fetches through the fetch issuer to the fake
// forge, the scheduler's loop on the wall clock over badger, the hook
// receiver's worker, and the API on a loopback listener.
type ciHost struct {
	forge *fakeforge.Forge
	stack *apitest.Stack
	url   string
	recv  *hooks.Receiver
}

func newCIHost(t *testing.T) *ciHost {
	t.Helper()
	forge := fakeforge.New(t)
	dir := t.TempDir()
	wasm, err := fs.ReadFile(plugins.Bundled(), "ci/ci.wasm")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ci.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	// The bundled entry with the fake forge's loopback address granted,
	// and no read floor: the forge reads this test counts are the
	// scheduler's and the event's.
	registry := `{"kinds":{"ci":{"capabilities":["fetch"],"fetch_hosts":["127.0.0.1"],"private_ranges":["127.0.0.1/32"],"secrets":["forge"]}}}`
	if err := os.WriteFile(filepath.Join(dir, plugin.RegistryFile), []byte(registry), 0o644); err != nil {
		t.Fatal(err)
	}
	is, err := fetch.New(fetch.Config{Clock: clock.Wall{}, Secrets: map[string]string{"forge": "s3cret-forge-token"}, MinInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(is.CloseIdleConnections)
	reg := kind.NewRegistry()
	rt, err := plugin.New(context.Background(), plugin.Config{
		Dir: dir, CacheDir: wasmbuild.CacheDir(), Fetcher: is, SecretNames: []string{"forge"}, Kinds: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	for _, p := range rt.Problems() {
		t.Fatalf("plugin not loaded: %v", p)
	}
	stack := apitest.NewStack(t, apitest.Config{Plugins: reg, Clock: clock.Wall{}, IDs: nil})
	storetest.Running(t, stack.Store, "agent-1", "")
	recv := hooks.NewReceiver(hooks.ReceiverConfig{
		Sources: hooks.NewSources(hooks.Config{"github": {Kind: "ci", Scheme: abi.SourceGitHub, Secret: e2eSecret}}),
		Wake:    reg, Poke: stack.Scheduler,
	})
	for _, run := range []func(context.Context) error{stack.Scheduler.Run, recv.Run} {
		stop := lifecycle.Go(context.Background(), run)
		t.Cleanup(func() { _ = stop() })
	}
	app := httpapi.New(httpapi.Deps{Hooks: recv}, httpapi.Options{})
	return &ciHost{forge: forge, stack: stack, url: apitest.Serve(t, app), recv: recv}
}

// watch registers a ci watch on sha at a five-minute cadence and waits
// for its probe at registration (one forge read).
func (h *ciHost) watch(t *testing.T, sha string) store.Watch {
	t.Helper()
	h.forge.SetCheckRuns("VigilHQ/vigil", sha, fakeforge.CheckRun{Name: "build", Status: "in_progress"})
	params, _ := json.Marshal(map[string]string{"forge": "github", "api_base": h.forge.URL(), "repo": "VigilHQ/vigil", "sha": sha, "token_ref": "forge"})
	every := 5 * time.Minute
	w, err := h.stack.Scheduler.Register(context.Background(), scheduler.Registration{Kind: "ci", Params: params, Recipient: store.Recipient{ID: "agent-1"}, Every: &every})
	if err != nil {
		t.Fatal(err)
	}
	base := "/repos/VigilHQ/vigil/commits/" + sha
	waitFor(t, func() bool { return h.forge.Requests(base+"/check-runs") == 1 && h.forge.Requests(base+"/status") == 1 }, "the probe at registration")
	return w
}

// reads counts the forge's reads of sha: one a probe, which asks for
// the commit's check runs and its combined status, one request each
// (the larger of the two counts, so a probe half done counts).
func (h *ciHost) reads(sha string) int {
	base := "/repos/VigilHQ/vigil/commits/" + sha
	return max(h.forge.Requests(base+"/check-runs"), h.forge.Requests(base+"/status"))
}

// event is the recorded check_suite completed event, about sha, with the
// repository at the fake forge's address.
func (h *ciHost) event(t *testing.T, sha string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "plugins", "ci", "testdata", "events", "github-check_suite-completed.json"))
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.ReplaceAll(b, []byte("https://api.github.com"), []byte(h.forge.URL()))
	return recordedSHA.ReplaceAll(b, []byte(sha))
}

// recordedSHA is the head commit the recorded event names, in any case.
var recordedSHA = regexp.MustCompile(`(?i)0123456789abcdef0123456789abcdef01234567`)

func (h *ciHost) post(t *testing.T, body []byte, sig string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", h.url+httpapi.HooksPath+"github", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(hooks.HeaderGitHubEvent, "check_suite")
	req.Header.Set(hooks.HeaderGitHubSignature, sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

func (h *ciHost) mail(t *testing.T) int {
	t.Helper()
	msgs, err := h.stack.Store.ReadMailbox(context.Background(), "agent-1", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return len(msgs)
}

func waitFor(t *testing.T, ok func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 10 s", what)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// A signed check_suite completed event, replayed from the recorded
// fixture, brings a five-minute ci watch's look forward: the message is
// in the mailbox within a second of the event (p99 over the runs, logged;
// the goal, 100 ms, is measured running it alone), after exactly one more
// forge read. The same event with a forged signature is
// 401, and nothing is read or mailed.
func TestCIEventWakesTheWatch(t *testing.T) {
	h := newCIHost(t)
	const runs = 20
	var lat []time.Duration
	for i := range runs {
		sha := fmt.Sprintf("%040x", 0xc0ffee00+i)
		h.watch(t, sha)
		h.forge.SetCheckRuns("VigilHQ/vigil", sha, fakeforge.CheckRun{Name: "build", Status: "completed", Conclusion: "success"})
		body := h.event(t, sha)
		before := h.mail(t)
		start := time.Now()
		if code := h.post(t, body, hooks.SignGitHub(e2eSecret, body)); code != http.StatusAccepted {
			t.Fatalf("run %d: the hook answered %d", i, code)
		}
		waitFor(t, func() bool { return h.mail(t) > before }, "message after the event")
		lat = append(lat, time.Since(start))
		if n := h.reads(sha); n != 2 {
			t.Fatalf("run %d: %d forge reads of the commit, want 2 (the registration's and the event's): %v", i, n, h.forge.Paths())
		}
	}
	slices.Sort(lat)
	p99 := lat[(len(lat)*99+99)/100-1]
	t.Logf("event to message over %d runs: p50 %v p99 %v max %v", runs, lat[len(lat)/2], p99, lat[len(lat)-1])
	// The goal is 100 ms (docs/BENCHMARKS.md, run alone); the test
	// fails at ten times that, still far below the five-minute cadence
	// the event brought forward, so a loaded machine does not fail it.
	if p99 > time.Second {
		t.Fatalf("event to message p99 %v, want well under a second (goal 100 ms)", p99)
	}

	// Forged: refused, nothing probed, nothing mailed.
	sha := fmt.Sprintf("%040x", 0xbad)
	h.watch(t, sha)
	h.forge.SetCheckRuns("VigilHQ/vigil", sha, fakeforge.CheckRun{Name: "build", Status: "completed", Conclusion: "success"})
	body := h.event(t, sha)
	before, handled := h.mail(t), h.recv.Handled()
	if code := h.post(t, body, hooks.SignGitHub("not-the-hook-secret", body)); code != http.StatusUnauthorized {
		t.Fatalf("a forged hook answered %d, want 401", code)
	}
	time.Sleep(300 * time.Millisecond)
	if n, m := h.reads(sha), h.mail(t); n != 1 || m != before || h.recv.Handled() != handled {
		t.Fatalf("after a forged hook: %d forge reads (want 1), %d messages (want %d), %d events handled (want %d)", n, m, before, h.recv.Handled(), handled)
	}
}
