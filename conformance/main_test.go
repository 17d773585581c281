package conformance

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/wasmbuild"
)

// check runs the suite over wasm.
func check(t *testing.T, wasm string, opts Options) Report {
	t.Helper()
	rep, err := Check(context.Background(), wasm, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// testOptions are the options every test run of the suite uses: the
// compilation cache all of vigil's tests share.
// The tests' describe and admit get 5 s rather than the host's 1 s: they
// run beside every other package's tests on two cores, and they check
// answers, not the host's time bound (observe.budget keeps its own).
func testOptions() Options {
	return Options{CacheDir: wasmbuild.CacheDir(), CallTimeout: 5 * time.Second}
}

// buildPlugins builds the test plugins in dirs (relative to this package),
// side by side, and returns each one's .wasm by directory. Built files are
// kept across runs under a key over every source they can depend on (the
// test plugins, the SDK, the ABI, go.mod and go.sum) and the Go release,
// so a second run builds nothing.
func buildPlugins(t *testing.T, dirs ...string) map[string]string {
	t.Helper()
	out := filepath.Join(os.TempDir(), "vigil-conformance-plugins", sourceKey(t))
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	paths := make(map[string]string, len(dirs))
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
		sem  = make(chan struct{}, 4)
	)
	for _, dir := range dirs {
		name := strings.ReplaceAll(filepath.ToSlash(dir), "/", "_") + ".wasm"
		dst := filepath.Join(out, name)
		paths[dir] = dst
		if _, err := os.Stat(dst); err == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			tmp := fmt.Sprintf("%s.%d.tmp", dst, os.Getpid())
			err := wasmbuild.BuildFile(dir, tmp)
			if err == nil {
				err = os.Rename(tmp, dst)
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	return paths
}

var (
	keyOnce sync.Once
	key     string
	keyErr  error
)

// sourceKey hashes what a test plugin's build depends on.
func sourceKey(t *testing.T) string {
	t.Helper()
	keyOnce.Do(func() {
		h := sha256.New()
		v, err := exec.Command(wasmbuild.Go(), "env", "GOVERSION").Output()
		if err != nil {
			keyErr = err
			return
		}
		h.Write(v)
		var files []string
		for _, root := range []string{"testdata", "../sdk"} {
			err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() && strings.HasSuffix(p, ".go") {
					files = append(files, p)
				}
				return err
			})
			if err != nil {
				keyErr = err
				return
			}
		}
		files = append(files, "../go.mod", "../go.sum", "../sdk/go.mod")
		sort.Strings(files)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				keyErr = err
				return
			}
			h.Write([]byte(f + "\x00"))
			h.Write(b)
		}
		key = hex.EncodeToString(h.Sum(nil))[:20]
	})
	if keyErr != nil {
		t.Fatal(keyErr)
	}
	return key
}
