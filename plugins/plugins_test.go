package plugins

import (
	"bytes"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/internal/wasmbuild"
)

// Every committed .wasm is exactly what its source builds to, so the
// binary that ships is the source that was reviewed.
func TestBundledPluginsAreReproducible(t *testing.T) {
	names, err := fs.Glob(Bundled(), "*/*.wasm")
	if err != nil || len(names) == 0 {
		t.Fatalf("no bundled plugins: %v", err)
	}
	for _, name := range names {
		t.Run(path.Dir(name), func(t *testing.T) {
			committed, err := fs.ReadFile(Bundled(), name)
			if err != nil {
				t.Fatal(err)
			}
			built, err := wasmbuild.GoVersion(committed)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if built != runtime.Version() {
				t.Skipf("%s was built with %s and this is %s: the bytes can only match under the same release (rebuild with `just plugins`)", name, built, runtime.Version())
			}
			out := filepath.Join(t.TempDir(), "out.wasm")
			if err := wasmbuild.BuildFile(path.Dir(name), out); err != nil {
				t.Fatal(err)
			}
			fresh, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(fresh, committed) {
				t.Fatalf("%s is not what its source builds to: run `just plugins` and commit the result", name)
			}
		})
	}
}

func TestBundledRegistryParses(t *testing.T) {
	data, err := fs.ReadFile(Bundled(), "registry.json")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := plugin.ParseRegistry("registry.json", data)
	if err != nil {
		t.Fatal(err)
	}
	for kind := range reg.Kinds {
		if _, err := fs.Stat(Bundled(), kind+"/"+kind+".wasm"); err != nil {
			t.Errorf("registry names %s, which is not bundled: %v", kind, err)
		}
	}
	// Seed 002: one read attempt per ticket (and per commit's checks) per
	// minute, however many consumers.
	for _, kind := range []string{"ticket", "ci"} {
		if got := time.Duration(reg.Kinds[kind].MinReadInterval); got != time.Minute {
			t.Errorf("%s's min_read_interval is %s, want 1m", kind, got)
		}
	}
}
