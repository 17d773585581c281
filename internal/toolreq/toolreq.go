package toolreq

import (
	"os"
	"os/exec"
	"path/filepath"
)

// RequireEnv names the variable under which a missing tool fails a test
// instead of skipping it.
const RequireEnv = "VIGIL_REQUIRE_TOOLS"

// ASCEnv names a variable that gives the AssemblyScript compiler's path
// outright.
const ASCEnv = "VIGIL_ASC"

// TB is what a test does with a missing tool.
type TB interface {
	Helper()
	Skipf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Tool is a program a test needs, and how one gets it.
type Tool struct {
	Name string // the program, as found on PATH
	Hint string // how to install it
}

// The tools the template tests need.
var (
	Clang  = Tool{"clang", "apt-get install clang"}
	WasmLd = Tool{"wasm-ld", "apt-get install lld"}
	Node   = Tool{"node", "apt-get install nodejs"}
	Make   = Tool{"make", "apt-get install make"}
)

// Need returns each tool's path, in order. When one is missing it skips
// tb, naming the tool and how to get it, or, with VIGIL_REQUIRE_TOOLS=1,
// fails it; it then returns nil.
func Need(tb TB, tools ...Tool) []string {
	tb.Helper()
	paths := make([]string, 0, len(tools))
	for _, t := range tools {
		p, err := exec.LookPath(t.Name)
		if err != nil {
			missing(tb, t.Name+" is not on PATH ("+t.Hint+")")
			return nil
		}
		paths = append(paths, p)
	}
	return paths
}

// ASCPrefix is the npm prefix .ci/run installs AssemblyScript into, and
// ASC looks in: a directory of the machine's temporary directory that the
// tests share, like their compilation cache.
func ASCPrefix() string { return filepath.Join(os.TempDir(), "vigil-test-npm") }

// ASC returns the AssemblyScript compiler's path: VIGIL_ASC when set, else
// asc on PATH, else ASCPrefix()'s. When there is none it skips tb, or
// fails it under VIGIL_REQUIRE_TOOLS=1, and returns "".
func ASC(tb TB) string {
	tb.Helper()
	if p := os.Getenv(ASCEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			missing(tb, ASCEnv+"="+p+" names no file")
			return ""
		}
		return p
	}
	if p, err := exec.LookPath("asc"); err == nil {
		return p
	}
	p := filepath.Join(ASCPrefix(), "node_modules", ".bin", "asc")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	missing(tb, "the AssemblyScript compiler (asc) is not on PATH nor in "+ASCPrefix()+
		" (npm install --prefix "+ASCPrefix()+" assemblyscript@0.28, or set "+ASCEnv+")")
	return ""
}

// Missing skips tb, saying why, or fails it under VIGIL_REQUIRE_TOOLS=1:
// for a need that is not a program on PATH (a tmpfs the test mounts, which
// needs root, as CI runs).
func Missing(tb TB, why string) {
	tb.Helper()
	missing(tb, why)
}

func missing(tb TB, why string) {
	tb.Helper()
	if os.Getenv(RequireEnv) == "1" {
		tb.Fatalf("%s, and %s=1 makes a missing tool a failure", why, RequireEnv)
		return
	}
	tb.Skipf("skipped: %s; set %s=1 to make this a failure", why, RequireEnv)
}
