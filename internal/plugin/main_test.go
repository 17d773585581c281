package plugin

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/wasmbuild"
	"github.com/vigilhq/vigil/plugins"
)

var builder wasmbuild.Builder

func TestMain(m *testing.M) {
	code := m.Run()
	builder.Cleanup()
	os.Exit(code)
}

// testPlugin builds testdata/<name> and returns the .wasm path.
func testPlugin(t *testing.T, name string) string {
	t.Helper()
	return builder.Build(t, filepath.Join("testdata", name))
}

// pluginDir makes a plugin directory holding the named test plugins, each
// as <name>.wasm, and registry (when not empty) as registry.json.
func pluginDir(t *testing.T, registry string, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		copyFile(t, testPlugin(t, n), filepath.Join(dir, n+".wasm"))
	}
	if registry != "" {
		if err := os.WriteFile(filepath.Join(dir, RegistryFile), []byte(registry), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// recordingMetrics counts plugin calls by kind, export and outcome.
type recordingMetrics struct {
	mu sync.Mutex
	n  map[[3]string]int
}

func (m *recordingMetrics) PluginCall(kind, export, outcome string, _ time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n == nil {
		m.n = map[[3]string]int{}
	}
	m.n[[3]string{kind, export, outcome}]++
}

func (m *recordingMetrics) Fetch(kind, outcome string) { m.PluginCall(kind, "fetch", outcome, 0) }

func (m *recordingMetrics) count(kind, export, outcome string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n[[3]string{kind, export, outcome}]
}

// newRuntime starts a runtime over the bundled set and dir, on the shared
// test compilation cache.
func newRuntime(t *testing.T, cfg Config) *Runtime {
	t.Helper()
	if cfg.Bundled == nil {
		cfg.Bundled = plugins.Bundled()
	}
	cfg.CacheDir = wasmbuild.CacheDir()
	r, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	return r
}
