package plugins

import (
	"context"
	"testing"

	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/internal/wasmbuild"
)

// The bundled .wasm that read one resource name it as admit's partition
// key, so every watch on that resource lands in one partition of a
// cluster: the URL normalized, the commit, the issue. The timer reads
// none.
func TestBundledPluginsNameTheirPartitionKey(t *testing.T) {
	rt, err := plugin.New(context.Background(), plugin.Config{Bundled: Bundled(), CacheDir: wasmbuild.CacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	want := map[string]string{
		"http":   "https://status.example.com/api/health",
		"ci":     "https://api.github.com/repos/vigilhq/vigil/commits/0123456789abcdef0123456789abcdef01234567",
		"ticket": "https://api.github.com/repos/vigilhq/vigil/issues/42",
		"timer":  "",
	}
	for k, key := range want {
		info, ok := rt.Lookup(k)
		if !ok {
			t.Fatalf("no bundled %s", k)
		}
		adm, err := rt.Admit(context.Background(), k, info.Example)
		if err != nil {
			t.Fatalf("%s: admit its example %s: %v", k, info.Example, err)
		}
		if adm.PartitionKey != key {
			t.Errorf("%s: admit of %s names partition key %q, want %q", k, info.Example, adm.PartitionKey, key)
		}
	}
}
