package archtest

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// module is the module's path; a package's short name is its path
// without it ("host/core"; "." is the root).
const module = "github.com/vigilhq/vigil"

// pkg is one package of the module as go list tells it.
type pkg struct {
	ImportPath string
	Imports    []string
}

// short is a package's path within the module.
func short(path string) string {
	if path == module {
		return "."
	}
	return strings.TrimPrefix(path, module+"/")
}

// listPackages is every package of the module, by short name.
func listPackages(t *testing.T) map[string]pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = "../.."
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, errb.String())
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(&out)
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs[short(p.ImportPath)] = p
	}
	return pkgs
}

// moduleImports are p's imports within the module, by short name.
func moduleImports(p pkg) []string {
	var out []string
	for _, i := range p.Imports {
		if i == module || strings.HasPrefix(i, module+"/") {
			out = append(out, short(i))
		}
	}
	return out
}

// below are the packages beneath every host package: the wire contract,
// the store, and the leaf helpers every component takes.
func below(name string) bool {
	for _, prefix := range []string{"api", "store", "plugins", "templates", "internal/clock", "internal/lifecycle"} {
		if name == prefix || strings.HasPrefix(name, prefix+"/") {
			return true
		}
	}
	return false
}

// No package below host imports one of host's: an interface guard lives
// in a test or where the components are composed.
func TestNothingBelowHostImportsIt(t *testing.T) {
	for name, p := range listPackages(t) {
		if !below(name) {
			continue
		}
		for _, i := range moduleImports(p) {
			if i != "host" && !strings.HasPrefix(i, "host/") {
				continue
			}
			t.Errorf("%s imports %s: a package below host must not", name, i)
		}
	}
}
