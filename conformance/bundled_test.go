package conformance

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"testing"

	"github.com/vigilhq/vigil/plugins"
)

// TestBundledPluginsConform runs the suite over every bundled plugin, as
// embedded in the binary, with the plugin's own cases when its source
// folder has any (plugins/<kind>/testdata/conformance/*.json).
func TestBundledPluginsConform(t *testing.T) {
	bundled := plugins.Bundled()
	files, err := fs.Glob(bundled, "*/*.wasm")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no bundled plugins")
	}
	dir := t.TempDir()
	for _, f := range files {
		name := path.Dir(f)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, err := fs.ReadFile(bundled, f)
			if err != nil {
				t.Fatal(err)
			}
			wasm := filepath.Join(dir, path.Base(f))
			if err := os.WriteFile(wasm, b, 0o644); err != nil {
				t.Fatal(err)
			}
			opts := testOptions()
			if cases := filepath.Join("..", "plugins", name, "testdata", "conformance"); isDir(cases) {
				opts.CasesDir = cases
			}
			rep := check(t, wasm, opts)
			if !rep.Passed {
				for _, res := range rep.Results {
					t.Logf("%s %s: %s", res.ID, res.Status, res.Message)
				}
				t.Fatalf("required checks failed: %v", rep.Failed())
			}
		})
	}
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
