package templates

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/conformance"
	"github.com/vigilhq/vigil/internal/toolreq"
	"github.com/vigilhq/vigil/internal/wasmbuild"
)

// testKind is what the templates are written out as: not the token, so a
// token left in place is caught by the kind the plugin describes.
const testKind = "acme.deploy-window"

// TestTemplatesBuildAndConform is vigil plugin new's promise, checked the
// way an outside author would meet it: each template is written for a
// kind into a directory outside this module, built there by its own
// Makefile's default target (Go with GOWORK=off, a module of its own with
// the SDK's source beside it, built with GOPROXY=off), its unit and schema
// tests run (make test), and the conformance suite passes on the .wasm
// with the template's recorded cases. It is also CI's build of a plugin
// outside the root module.
func TestTemplatesBuildAndConform(t *testing.T) {
	for _, lang := range Langs() {
		t.Run(string(lang), func(t *testing.T) {
			t.Parallel()
			env := buildEnv(t, lang)
			dir := filepath.Join(t.TempDir(), "deploy-window")
			written, err := Write(testKind, lang, dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"Makefile", ".gitignore", "testdata/conformance/before.json"} {
				if !slices.Contains(written, want) {
					t.Errorf("%s not written: %v", want, written)
				}
			}
			wasm := filepath.Join(dir, testKind+".wasm")
			build := env
			if lang == Go {
				// The build needs nothing but Go and what was written:
				// no module is fetched (only the tests' schema compiler
				// is, by make test).
				build = append(slices.Clip(env), "GOPROXY=off")
			}
			run(t, dir, build, "make")
			run(t, dir, env, "make", "test")
			if _, err := os.Stat(wasm); err != nil {
				t.Fatalf("the default target built no %s: %v", filepath.Base(wasm), err)
			}
			rep, err := conformance.Check(context.Background(), wasm, conformance.Options{
				CasesDir: filepath.Join(dir, "testdata", "conformance"),
				CacheDir: wasmbuild.CacheDir(),
				// Generous for a machine building beside this test; the
				// suite's observe.budget keeps its own bound.
				CallTimeout: 5 * time.Second,
			})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Kind != testKind {
				t.Errorf("the plugin describes kind %q, want %q: the template's token was not replaced", rep.Kind, testKind)
			}
			cases := 0
			for _, res := range rep.Results {
				if strings.HasPrefix(res.ID, conformance.CasesPrefix) {
					cases++
				}
				if res.Status == conformance.Fail {
					t.Errorf("%s %s: %s", res.ID, res.Level, res.Message)
				}
			}
			if !rep.Passed || cases < 4 {
				t.Fatalf("suite passed %v with %d cases; failed %v", rep.Passed, cases, rep.Failed())
			}
		})
	}
}

// buildEnv is the environment a template's Makefile builds with: the
// tools it needs found (or the test skipped, naming the missing one), and
// for Go a module of its own.
func buildEnv(t testing.TB, lang Lang) []string {
	t.Helper()
	if toolreq.Need(t, toolreq.Make) == nil {
		return nil
	}
	env := os.Environ()
	switch lang {
	case Go:
		// The author's path: no workspace, and no -mod=mod either (the
		// Makefile's go mod tidy records the tests' one fetched module).
		env = append(env, "GOWORK=off", "GOFLAGS=", "GO="+wasmbuild.Go())
	case C:
		tools := toolreq.Need(t, toolreq.Clang, toolreq.WasmLd)
		if tools == nil {
			return nil
		}
		env = append(env, "CLANG="+tools[0])
	case AssemblyScript:
		tools := toolreq.Need(t, toolreq.Node)
		asc := toolreq.ASC(t)
		if tools == nil || asc == "" {
			return nil
		}
		env = append(env, "ASC="+asc, "NODE="+tools[0])
	}
	return env
}

func run(t testing.TB, dir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s in %s: %v\n%s", name, strings.Join(args, " "), dir, err, out.String())
	}
}

// The token is the kind wherever a template names it, and nowhere else:
// a file that names it for another reason would be rewritten.
func TestTemplatesNameTheTokenAsTheKind(t *testing.T) {
	for _, lang := range Langs() {
		dir := filepath.Join(t.TempDir(), string(lang))
		if _, err := Write(testKind, lang, dir); err != nil {
			t.Fatal(err)
		}
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if bytes.Contains(b, []byte(Token)) {
				t.Errorf("%s still names %s", p, Token)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestCasesAreJSON(t *testing.T) {
	for _, lang := range Langs() {
		names, err := filepath.Glob(filepath.Join(string(lang), "testdata", "conformance", "*.json"))
		if err != nil || len(names) == 0 {
			t.Fatalf("%s: no cases (%v)", lang, err)
		}
		for _, n := range names {
			b, err := os.ReadFile(n)
			if err != nil || !json.Valid(b) {
				t.Errorf("%s: not JSON (%v)", n, err)
			}
		}
	}
}
