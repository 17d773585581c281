package sdktest

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Source holds go.mod and every non-test .go file of the package, and
// nothing else.
func TestSource(t *testing.T) {
	want := []string{"go.mod"}
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !strings.HasSuffix(n, "_test.go") {
			want = append(want, n)
		}
	}
	var got []string
	err = fs.WalkDir(Source(), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			got = append(got, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("Source holds %v, want %v (name a new file in source.go's go:embed)", got, want)
	}
	for _, n := range got {
		b, err := fs.ReadFile(Source(), n)
		if err != nil {
			t.Fatal(err)
		}
		disk, err := os.ReadFile(n)
		if err != nil || string(disk) != string(b) {
			t.Fatalf("%s differs from the file on disk (%v)", n, err)
		}
	}
}
