package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/templates"
)

// The generator's builds and the suite over what it writes are
// templates.TestTemplatesBuildAndConform; these are the command's
// arguments and refusals.
func TestPluginNewWritesEachLanguage(t *testing.T) {
	for _, lang := range templates.Langs() {
		dir := filepath.Join(t.TempDir(), "p")
		stdout, _, err := run(t, context.Background(), "plugin", "new", "alerts.prom", "--lang", string(lang), dir)
		if err != nil {
			t.Fatalf("%s: %v", lang, err)
		}
		if !strings.Contains(stdout, "wrote a "+string(lang)+" plugin of kind alerts.prom into "+dir) ||
			!strings.Contains(stdout, "make check") {
			t.Errorf("%s: stdout %q", lang, stdout)
		}
		mk, err := os.ReadFile(filepath.Join(dir, "Makefile"))
		if err != nil || !strings.Contains(string(mk), "WASM := alerts.prom.wasm") {
			t.Errorf("%s: Makefile: %v\n%s", lang, err, mk)
		}
	}
}

func TestPluginNewDefaultsToGoInTheKindsLastSegment(t *testing.T) {
	t.Chdir(t.TempDir())
	stdout, _, err := run(t, context.Background(), "plugin", "new", "alerts.prom", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Kind, Lang, Dir string
		Files           []string
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if got.Kind != "alerts.prom" || got.Lang != "go" || got.Dir != "prom" ||
		!slices.Contains(got.Files, "go.mod") || !slices.Contains(got.Files, templates.SDKDir+"/go.mod") ||
		!slices.Contains(got.Files, templates.SDKTestDir+"/go.mod") {
		t.Fatalf("%+v", got)
	}
	if _, err := os.Stat(filepath.Join("prom", "third_party", "vigil-sdk", "sdk.go")); err != nil {
		t.Fatal(err)
	}
}

func TestPluginNewRefuses(t *testing.T) {
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		code string
		want error
	}{
		{[]string{"Alerts.Prom", filepath.Join(t.TempDir(), "x")}, "invalid_kind", templates.ErrKind},
		{[]string{"alerts prom", filepath.Join(t.TempDir(), "x")}, "invalid_kind", templates.ErrKind},
		{[]string{"alerts.prom", "--lang", "rust", filepath.Join(t.TempDir(), "x")}, "unknown_language", templates.ErrLang},
		{[]string{"alerts.prom", full}, "dir_not_empty", templates.ErrNotEmpty},
		{[]string{"..."}, "dir_required", templates.ErrNoDir},
	} {
		_, _, err := run(t, context.Background(), append([]string{"plugin", "new"}, tt.args...)...)
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), "plugin new: "+tt.code+": ") {
			t.Errorf("%v: err = %v, want %s", tt.args, err, tt.code)
		}
		if code := exitCodeOf(err); code != ExitUsage {
			t.Errorf("%v: exit %d, want ExitUsage (%d): a refused argument is a usage error", tt.args, code, ExitUsage)
		}
	}
	if b, err := os.ReadFile(filepath.Join(full, "main.go")); err != nil || string(b) != "package main\n" {
		t.Fatalf("the author's file was touched: %q %v", b, err)
	}
	if _, _, err := run(t, context.Background(), "plugin", "new"); err == nil || exitCodeOf(err) != ExitUsage || !strings.Contains(err.Error(), "missing KIND") {
		t.Errorf("no KIND: %v, want a usage error naming KIND", err)
	}
}

// --help says what is written, each language's tools, the Makefile's
// targets and the refusals' codes.
func TestPluginNewHelp(t *testing.T) {
	stdout, _, err := run(t, context.Background(), "plugin", "new", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"new KIND [DIR]", "--lang", "go ", "c ", "assemblyscript", "third_party", "make check",
		"testdata/conformance", "invalid_kind", "unknown_language", "dir_not_empty", "dir_required", "--use abort="} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--help does not say %q", want)
		}
	}
}

// `vigil plugin --help` says the group holds local commands (new, try) as
// well as the two that ask a server (ls, reload).
func TestPluginGroupHelp(t *testing.T) {
	stdout, _, err := run(t, context.Background(), "plugin", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stdout, "plugins of a running server. Both") {
		t.Errorf("--help says the whole group asks a server:\n%s", stdout)
	}
	for _, want := range []string{"local and need no server", "new ", "try ", "ask a running server", "ls ", "reload "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--help does not say %q:\n%s", want, stdout)
		}
	}
}
