package plugins

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/internal/wasmbuild"
	"github.com/vigilhq/vigil/plugins/internal/plugintest"
	"github.com/vigilhq/vigil/sdk/abi"
)

// The bundled plugins that read a forge or a URL wake on its events, and
// the key each answers for a recorded event (<kind>/testdata/events) is
// the key its admit answers for the watch the event is about, through
// the .wasm built from source and the host's runtime (the committed
// .wasm are rebuilt apart). The timer wakes on nothing.
func TestBundledPluginsWakeTheWatchesTheirAdmitKeys(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	kinds := []string{"ci", "ticket", "http", "timer"}
	var wg sync.WaitGroup
	errs := make([]error, len(kinds))
	for i, k := range kinds {
		wg.Go(func() { errs[i] = wasmbuild.BuildFile(k, filepath.Join(dir, k+".wasm")) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	entry := plugin.Entry{Capabilities: []string{abi.CapabilityFetch}, FetchHosts: []string{"*"}}
	reg, err := json.Marshal(plugin.Registry{Kinds: map[string]plugin.Entry{"ci": entry, "ticket": entry, "http": entry}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, plugin.RegistryFile), reg, 0o644); err != nil {
		t.Fatal(err)
	}
	rt, err := plugin.New(ctx, plugin.Config{Bundled: fstest.MapFS{}, Dir: dir, CacheDir: wasmbuild.CacheDir(),
		Limits: plugin.Limits{CallTimeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(ctx) })
	if p := rt.Problems(); len(p) != 0 {
		t.Fatalf("problems: %v", p)
	}
	for _, k := range kinds {
		t.Run(k, func(t *testing.T) {
			info, ok := rt.Lookup(k)
			if !ok {
				t.Fatalf("no %s", k)
			}
			if wakes := k != "timer"; info.Wakes != wakes {
				t.Fatalf("wakes = %v, want %v", info.Wakes, wakes)
			}
			if !info.Wakes {
				return
			}
			cases, bodies := plugintest.ReadWakeCases(t, filepath.Join(k, "testdata", "events"))
			plugintest.CheckWake(t, cases, bodies,
				func(params json.RawMessage) (string, error) {
					a, err := rt.Admit(ctx, k, params)
					return a.PartitionKey, err
				},
				func(ev abi.WakeRequest) ([]string, error) { return rt.Wake(ctx, k, ev) })
		})
	}
}
