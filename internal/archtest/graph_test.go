package archtest

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// module is the module's path; a package's short name is its path
// without it ("internal/core"; "." is the root).
const module = "github.com/vigilhq/vigil"

// pkg is one package of the module as go list tells it.
type pkg struct {
	ImportPath string
	Name       string
	Dir        string
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

// hostPackages are the host's components, each under internal/ since no
// other program imports them.
var hostPackages = map[string]bool{
	"internal/host": true, "internal/authz": true, "internal/cluster": true, "internal/console": true,
	"internal/core": true, "internal/delivery": true, "internal/fetch": true, "internal/httpapi": true,
	"internal/kind": true, "internal/metrics": true, "internal/netguard": true, "internal/observe": true,
	"internal/overview": true, "internal/plugin": true, "internal/probeshare": true, "internal/recipients": true,
	"internal/reminder": true, "internal/runner": true, "internal/scheduler": true, "internal/signal": true, "internal/captoken": true, "internal/upkeep": true,
	"internal/watchwait": true,
}

// No package below the host imports one of its components: an interface
// guard lives in a test or where the components are composed.
func TestNothingBelowHostImportsIt(t *testing.T) {
	pkgs := listPackages(t)
	for name := range hostPackages {
		if _, ok := pkgs[name]; !ok {
			t.Errorf("%s is listed as a host package but is not in the module", name)
		}
	}
	for name, p := range pkgs {
		if !below(name) {
			continue
		}
		for _, i := range moduleImports(p) {
			if hostPackages[i] {
				t.Errorf("%s imports %s: a package below the host must not", name, i)
			}
		}
	}
}

// The public surface is what another program imports (the wire contract,
// its client, the webhook verifier, the SDK, the conformance suite, the
// store's domain and adapters, the bundled plugins and templates, the
// binary); every package of the host is under internal/, and a public
// package's doc.go says it is one.
func TestTheHostIsInternal(t *testing.T) {
	for name, p := range listPackages(t) {
		if name == "internal" || strings.HasPrefix(name, "internal/") {
			continue
		}
		if name == "host" || strings.HasPrefix(name, "host/") {
			t.Errorf("%s: the host's packages live under internal/", name)
		}
		if p.Name == "main" || strings.Contains(name, "/internal/") {
			continue // a program, or internal to its tree
		}
		doc, err := os.ReadFile(filepath.Join(p.Dir, "doc.go"))
		if err != nil || !bytes.Contains(doc, []byte("\n// Public: ")) {
			t.Errorf("%s is public: its doc.go says who imports it in a line \"// Public: …\"", name)
		}
	}
}
