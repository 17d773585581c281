package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The spec page says what the code does: every check's id, level, why
// and fix, word for word, and the suite's version.
func TestSpecPageListsEveryCheck(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "conformance.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	if want := fmt.Sprintf("**Suite version %d.**", SuiteVersion); !strings.Contains(doc, want) {
		t.Errorf("docs/conformance.md does not say %q", want)
	}
	for _, sp := range Specs() {
		for _, want := range []string{
			fmt.Sprintf("| `%s` | %s |", sp.ID, sp.Level),
			fmt.Sprintf("### `%s` (%s", sp.ID, sp.Level),
			"- Why: " + sp.Why + "\n",
			"- Fix: " + sp.Fix + "\n",
		} {
			if !strings.Contains(doc, want) {
				t.Errorf("docs/conformance.md lacks %q", want)
			}
		}
	}
}

func TestSpecIDsAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, sp := range Specs() {
		if seen[sp.ID] || sp.Why == "" || sp.Fix == "" {
			t.Errorf("%s: duplicate, or without a why or fix", sp.ID)
		}
		seen[sp.ID] = true
	}
}
