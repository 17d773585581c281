package archtest

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// modules are the module's directories that have a go.mod, from the
// root: the root module and the SDK's three.
var modules = []string{".", "sdk", "sdk/sdktest", "sdk/example"}

// depPkg is a package as go list -deps tells it.
type depPkg struct {
	ImportPath string
	Standard   bool
	Module     *struct{ Path string }
	Imports    []string
	DepOnly    bool
}

// externalNames are the names docs/ARCHITECTURE.md gives the modules the
// packages import from outside; one not here is named by its path's last
// element.
var externalNames = map[string]string{
	"github.com/dgraph-io/badger/v4":           "badger",
	"github.com/extism/go-sdk":                 "extism",
	"github.com/gofiber/fiber/v2":              "fiber",
	"github.com/modelcontextprotocol/go-sdk":   "mcp go-sdk",
	"github.com/nats-io/nats-server/v2":        "nats-server",
	"github.com/prometheus/client_golang":      "prometheus",
	"github.com/prometheus/client_model":       "prometheus",
	"github.com/valyala/fasthttp":              "fasthttp",
	"github.com/santhosh-tekuri/jsonschema/v6": "jsonschema",
	"golang.org/x/sync":                        "x/sync",
	"golang.org/x/text":                        "x/text",
	"gopkg.in/yaml.v3":                         "yaml",
}

func externalName(module string) string {
	if n, ok := externalNames[module]; ok {
		return n
	}
	base := path.Base(module)
	if regexp.MustCompile(`^v\d+$`).MatchString(base) {
		base = path.Base(path.Dir(module))
	}
	return base
}

// realDepends is, for every package of the modules, what its "depends
// on" column must say: the module's packages it imports, then the
// outside modules, each in backquotes, sorted; "standard library" when
// there are none.
func realDepends(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, dir := range modules {
		cmd := exec.Command("go", "list", "-deps", "-json", "./...")
		cmd.Dir = path.Join("../..", dir)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("go list in %s: %v\n%s", dir, err, stderr.String())
		}
		byPath := map[string]depPkg{}
		var own []depPkg
		dec := json.NewDecoder(&stdout)
		for {
			var p depPkg
			if err := dec.Decode(&p); err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			byPath[p.ImportPath] = p
			if !p.DepOnly {
				own = append(own, p)
			}
		}
		for _, p := range own {
			var mine, outside []string
			for _, i := range p.Imports {
				d := byPath[i]
				switch {
				case d.Standard:
				case i == module || strings.HasPrefix(i, module+"/"):
					mine = append(mine, short(i))
				case d.Module != nil:
					outside = append(outside, externalName(d.Module.Path))
				}
			}
			slices.Sort(mine)
			slices.Sort(outside)
			var deps []string
			for _, d := range slices.Concat(mine, slices.Compact(outside)) {
				deps = append(deps, "`"+d+"`")
			}
			if len(deps) == 0 {
				out[short(p.ImportPath)] = "standard library"
			} else {
				out[short(p.ImportPath)] = strings.Join(deps, ", ")
			}
		}
	}
	return out
}

// row is one row of docs/ARCHITECTURE.md's table of packages.
type row struct {
	path, owns, depends string
}

var rowPath = regexp.MustCompile("^`([^`]+)`$")

// architectureRows reads the table whose header is "| path | owns |
// depends on |".
func architectureRows(t *testing.T) []row {
	t.Helper()
	b, err := os.ReadFile("../../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []row
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "| path | owns | depends on |") {
			in = true
			continue
		}
		if !in || strings.HasPrefix(line, "|---") {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			if len(rows) > 0 {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 3 {
			t.Errorf("a row of %d cells, want 3: %s", len(cells), line)
			continue
		}
		m := rowPath.FindStringSubmatch(strings.TrimSpace(cells[0]))
		if m == nil {
			t.Errorf("a row whose path is not one package in backquotes: %s", line)
			continue
		}
		rows = append(rows, row{path: m[1], owns: strings.TrimSpace(cells[1]), depends: strings.TrimSpace(cells[2])})
	}
	return rows
}

// maxOwnsWords bounds a row's "owns": about 25 words, what the package
// owns and nothing of its history.
const maxOwnsWords = 40

// docs/ARCHITECTURE.md has one row per package, and each row's "depends
// on" is the package's real imports; a row that differs is printed as it
// should read.
func TestArchitectureIsTheImportGraph(t *testing.T) {
	real := realDepends(t)
	seen := map[string]bool{}
	for _, r := range architectureRows(t) {
		if seen[r.path] {
			t.Errorf("two rows for %s", r.path)
		}
		seen[r.path] = true
		want, ok := real[r.path]
		if !ok {
			t.Errorf("a row for %s, which is no package: remove it", r.path)
			continue
		}
		if r.depends != want {
			t.Errorf("%s depends on %s; write:\n| `%s` | %s | %s |", r.path, want, r.path, r.owns, want)
		}
		if n := len(strings.Fields(r.owns)); n > maxOwnsWords && r.path != "store" && !strings.HasPrefix(r.path, "store/") {
			t.Errorf("%s: %d words of what it owns, want about 25", r.path, n)
		}
		if strings.Contains(r.owns, "_test.go") {
			t.Errorf("%s names a test file: a row says what the package owns", r.path)
		}
	}
	var missing []string
	for p := range real {
		if !seen[p] {
			missing = append(missing, p)
		}
	}
	slices.Sort(missing)
	for _, p := range missing {
		t.Errorf("no row for %s; write:\n| `%s` | … | %s |", p, p, real[p])
	}
}
