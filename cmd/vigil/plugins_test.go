package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/internal/wasmbuild"
)

// pinnedDir is a plugin directory holding a copy of the bundled timer as
// a.wasm, which the registry pins for kind timer: the bundled timer.wasm
// claims the kind too, and is set aside.
func pinnedDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join("..", "..", "plugins", "timer", "timer.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.wasm"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, plugin.RegistryFile), []byte(`{"kinds":{"timer":{"wasm":"a.wasm"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

const bundledTimer = "bundled:timer/timer.wasm"

// vigil plugins lists the file a pin set aside, in text and in JSON, and
// does not fail the gate for it: the kind is served by the file named.
func TestPluginsReportsAPinnedOutFile(t *testing.T) {
	dir := pinnedDir(t)
	out, errOut, err := run(t, context.Background(), "plugins", "--data", t.TempDir(), "--plugins", dir)
	if err != nil {
		t.Fatalf("a pinned-out file failed the gate: %v\n%s", err, errOut)
	}
	if !strings.Contains(out, filepath.Join(dir, "a.wasm")) {
		t.Fatalf("the pinned file does not serve timer:\n%s", out)
	}
	// The table names the build by its short SHA-256 and where it came
	// from: the plugin directory.
	sum := timerSum(t)
	if !strings.Contains(out, "SHA256") || !strings.Contains(out, " "+sum[:12]+" ") || !strings.Contains(out, " "+dir+" ") {
		t.Fatalf("the table lacks the SHA-256 or the source:\n%s", out)
	}
	if !strings.Contains(errOut, "not loaded: "+bundledTimer) || !strings.Contains(errOut, plugin.RuleKindPinned) {
		t.Fatalf("the bundled timer set aside is not reported:\n%s", errOut)
	}

	out, _, err = run(t, context.Background(), "plugins", "--data", t.TempDir(), "--plugins", dir, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Plugins  []kind.Info         `json:"plugins"`
		Problems []api.PluginProblem `json:"problems"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(got.Plugins, func(i kind.Info) bool { return i.Kind == "timer" && i.SHA256 == sum && i.Source == dir }) {
		t.Fatalf("--json lacks the full SHA-256 or the source: %+v", got.Plugins)
	}
	if len(got.Problems) != 1 || got.Problems[0].File != bundledTimer || got.Problems[0].Rule != plugin.RuleKindPinned ||
		got.Problems[0].Kind != "timer" {
		t.Fatalf("problems %+v", got.Problems)
	}

	// A real failure beside it still fails the gate.
	if err := os.WriteFile(filepath.Join(dir, "junk.wasm"), []byte("not wasm"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, context.Background(), "plugins", "--data", t.TempDir(), "--plugins", dir); err == nil ||
		!strings.Contains(err.Error(), "1 plugin(s) not loaded") {
		t.Fatalf("err = %v, want one failure counted", err)
	}
}

// The served API lists the file a pin set aside in its problems, on GET
// and on a reload, and a reload through the API logs what loaded and what
// did not, as the start does.
func TestAPIReportsAndLogsAPinnedOutFile(t *testing.T) {
	bin := buildVigil(t)
	dir := pinnedDir(t)
	addr := freePort(t)
	s := startServer(t, bin, addr, filepath.Join(t.TempDir(), "data"), "--plugins", dir)
	base := "http://" + addr

	pinned := func(l api.PluginList) bool {
		return slices.ContainsFunc(l.Problems, func(p api.PluginProblem) bool {
			return p.File == bundledTimer && p.Kind == "timer" && p.Rule == plugin.RuleKindPinned
		})
	}
	resp, err := http.Get(base + "/api/v1/plugins")
	if err != nil {
		t.Fatal(err)
	}
	var list api.PluginList
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || !pinned(list) {
		t.Fatalf("GET /api/v1/plugins: %d %v %+v", resp.StatusCode, err, list.Problems)
	}
	sum := timerSum(t)
	if !slices.ContainsFunc(list.Plugins, func(p api.Plugin) bool { return p.Kind == "timer" && p.SHA256 == sum && p.Source == dir }) {
		t.Fatalf("GET /api/v1/plugins lacks the SHA-256 or the source: %+v", list.Plugins)
	}
	code, body := postJSON(t, base+"/api/v1/plugins/reload", `{}`)
	list = api.PluginList{}
	if err := json.Unmarshal(body, &list); err != nil || code != 200 || !pinned(list) {
		t.Fatalf("POST /api/v1/plugins/reload: %d %v %s", code, err, body)
	}
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Logf("serve exited: %v", err)
	}
	logs := s.logs.String()
	// The first start says it compiles, and how long it took, naming the
	// cache; the reload, with nothing changed, compiles nothing.
	if !regexp.MustCompile(`"compiling \d+ plugins"[^\n]*"cache"`).MatchString(logs) || !regexp.MustCompile(`"compiled \d+ plugins in [^"]+"`).MatchString(logs) ||
		strings.Count(logs, `"msg":"compiling `) != 1 {
		t.Errorf("serve does not log its compiling once:\n%s", logs)
	}
	// Once at the start, once for the reload through the API.
	for _, want := range []string{"plugins loaded", plugin.RuleKindPinned} {
		if n := strings.Count(logs, want); n != 2 {
			t.Errorf("%q logged %d times, want 2 (the start and the API's reload):\n%s", want, n, logs)
		}
	}
}

// vigil plugins run in an empty directory leaves it empty: it opens no
// store, and the compilation cache it shares with serve is in the user
// cache directory, under one directory per wazero version.
func TestPluginsWritesNothingIntoTheCurrentDirectory(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, "cache"))
	t.Setenv("VIGIL_PLUGIN_CACHE", "")
	// The default cache is the tests' shared one, behind a link, so the
	// bundled plugins are not compiled again for this test.
	if err := os.MkdirAll(filepath.Join(home, "cache", "vigil"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(wasmbuild.CacheDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(wasmbuild.CacheDir(), filepath.Join(home, "cache", "vigil", "wazero")); err != nil {
		t.Fatal(err)
	}
	if _, errOut, err := run(t, context.Background(), "plugins"); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	left, err := os.ReadDir(cwd)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("vigil plugins wrote into the current directory: %v", left)
	}
	versions, err := filepath.Glob(filepath.Join(home, "cache", "vigil", "wazero", "wazero-*-"+runtime.GOARCH+"-"+runtime.GOOS))
	if err != nil || len(versions) == 0 {
		t.Fatalf("no compilation cache keyed by the wazero version under the user cache directory: %v %v", versions, err)
	}
}

// timerSum is the hex SHA-256 of the bundled timer's file.
func timerSum(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(timerWasm)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}
