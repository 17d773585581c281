package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/internal/runner"
	"github.com/vigilhq/vigil/internal/wasmbuild"
	"github.com/vigilhq/vigil/sdk/abi"
)

// The command plugin, compiled to wasm, running commands through the real
// runner: in the recipient's workspace, pending while a command fails or
// times out, settled when it exits as expected.
func TestCommandThroughTheRunner(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("vigil_exec runs commands on Linux only")
	}
	if _, err := runner.ResolvePrograms([]string{"sh", "true"}); err != nil {
		t.Skipf("sh and true are needed: %v", err)
	}
	dir := t.TempDir()
	reg := `{"kinds":{"command":{"capabilities":["exec"],"exec":{"programs":["sh","true"],"max_timeout":"2s"},"timeout":"10s"}}}`
	if err := os.WriteFile(filepath.Join(dir, plugin.RegistryFile), []byte(reg), 0o644); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	ex := runner.PluginExecer{Runner: runner.New(runner.Config{Grace: 200 * time.Millisecond}), Workspaces: runner.WorkspaceFunc(
		func(_ context.Context, id string) (string, error) {
			if id == "agent-1" {
				return work, nil
			}
			return "", nil
		})}
	rt, err := plugin.New(context.Background(), plugin.Config{Bundled: Bundled(), Dir: dir, CacheDir: wasmbuild.CacheDir(), Execer: ex, ResolvePrograms: runner.ResolvePrograms})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	if info, ok := rt.Lookup("command"); !ok || !info.Observable || len(info.Grants.Programs) != 2 || !filepath.IsAbs(info.Grants.Programs[0]) {
		t.Fatalf("command: %+v %v (problems %v)", info, ok, rt.Problems())
	}
	observe := func(recipient, params string) kind.Observation {
		t.Helper()
		if _, err := rt.Admit(context.Background(), "command", json.RawMessage(params)); err != nil {
			t.Fatalf("admit %s: %v", params, err)
		}
		obs, err := rt.Observe(kind.WithRecipient(context.Background(), recipient), abi.ObserveRequest{Kind: "command", WatchID: "w", Params: json.RawMessage(params), Now: t0, Attempt: 1})
		if err != nil {
			t.Fatalf("observe %s: %v", params, err)
		}
		return obs
	}
	if obs := observe("agent-1", `{"argv":["true"]}`); obs.Status != abi.StatusSettled || obs.Outcome.Result != "succeeded" {
		t.Fatalf("true: %+v", obs)
	}
	if obs := observe("agent-1", `{"argv":["sh","-c","pwd"],"output_contains":"`+filepath.Base(work)+`"}`); obs.Status != abi.StatusSettled {
		t.Fatalf("not run in the workspace: %+v", obs)
	}
	if obs := observe("agent-1", `{"argv":["sh","-c","echo not yet >&2; exit 3"]}`); obs.Status != abi.StatusPending || !strings.Contains(obs.Note, "exit 3") || !strings.Contains(obs.Note, "not yet") {
		t.Fatalf("failing: %+v", obs)
	}
	start := time.Now()
	if obs := observe("agent-1", `{"argv":["sh","-c","sleep 30"],"timeout":"500ms"}`); obs.Status != abi.StatusPending || !strings.Contains(obs.Note, "timed out") {
		t.Fatalf("timing out: %+v", obs)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("a 500ms timeout took %s", took)
	}
	if obs := observe("agent-2", `{"argv":["true"]}`); obs.Status != abi.StatusPending || !strings.Contains(obs.Note, abi.ExecNoWorkspace) ||
		!strings.Contains(obs.Note, "agent-2 declares no workspace") {
		t.Fatalf("no workspace: %+v", obs)
	}
	// A watch an orchestrator registered for agent-2 runs in the
	// orchestrator's workspace, named like it (seed 002: a command runs
	// where it was registered), while it still observes agent-2's watch.
	orch := t.TempDir()
	ex.Workspaces = runner.WorkspaceFunc(func(_ context.Context, id string) (string, error) {
		return map[string]string{"agent-1": work, "orch": orch}[id], nil
	})
	rt2, err := plugin.New(context.Background(), plugin.Config{Bundled: Bundled(), Dir: dir, CacheDir: wasmbuild.CacheDir(), Execer: ex, ResolvePrograms: runner.ResolvePrograms})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt2.Close(context.Background()) })
	for _, c := range []struct{ registrant, want string }{{"orch", orch}, {"local", ""}, {"", ""}} {
		ctx := kind.WithRegistrant(kind.WithRecipient(context.Background(), "agent-2"), c.registrant)
		params := `{"argv":["sh","-c","pwd"],"output_contains":"` + filepath.Base(orch) + `"}`
		obs, err := rt2.Observe(ctx, abi.ObserveRequest{Kind: "command", WatchID: "w", Params: json.RawMessage(params), Now: t0, Attempt: 1})
		switch {
		case err != nil:
			t.Fatalf("registered by %q: %v", c.registrant, err)
		case c.want != "" && obs.Status != abi.StatusSettled:
			t.Fatalf("registered by %q: not run in its workspace: %+v", c.registrant, obs)
		case c.want == "" && !strings.Contains(obs.Note, "agent-2 declares no workspace"):
			t.Fatalf("registered by %q: want agent-2's own (absent) workspace: %+v", c.registrant, obs)
		}
	}
	// Admission refuses what the grant does not cover.
	for _, params := range []string{`{"argv":["/bin/ls"]}`, `{"argv":["true"],"timeout":"5s"}`} {
		if _, err := rt.Admit(context.Background(), "command", json.RawMessage(params)); err == nil {
			t.Errorf("admitted %s", params)
		}
	}
}

// Bundled, the command kind is granted nothing: every watch is refused at
// registration, naming the setting, and nothing can run.
func TestCommandIsGrantedNothingByDefault(t *testing.T) {
	rt, err := plugin.New(context.Background(), plugin.Config{Bundled: Bundled(), CacheDir: wasmbuild.CacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	_, err = rt.Admit(context.Background(), "command", json.RawMessage(`{"argv":["true"]}`))
	var ref *api.Error
	if !errors.As(err, &ref) || ref.Code != api.CodeWatchUnobservable || !strings.HasPrefix(ref.Setting, "kinds.command.") {
		t.Fatalf("admit: %v", err)
	}
}
