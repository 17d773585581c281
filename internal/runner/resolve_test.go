package runner

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestResolvePrograms(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil || !filepath.IsAbs(sh) {
		t.Skip("needs sh on PATH")
	}
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("needs /bin/sh")
	}
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("accepted", func(t *testing.T) {
		got, err := ResolvePrograms([]string{"/bin/sh", "sh", "/bin//sh", "/bin/sh"})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"/bin/sh"}
		if sh != "/bin/sh" {
			want = append(want, sh)
		}
		if !slices.Equal(got, want) {
			t.Errorf("got %q, want %q (cleaned, looked up, without duplicates)", got, want)
		}
		if got, err := ResolvePrograms(nil); err != nil || got == nil || len(got) != 0 {
			t.Errorf("empty list: %q %v", got, err)
		}
	})
	cases := []struct{ name, entry, says string }{
		{"empty", "", "empty"},
		{"relative path", "bin/sh", "relative"},
		{"dot slash", "./sh", "relative"},
		{"not on PATH", "vigil-no-such-program-xyz", "not found"},
		{"missing", filepath.Join(dir, "missing"), "does not exist"},
		{"a directory", dir, "not a regular file"},
		{"not executable", plain, "not executable"},
		{"NUL", "/bin/sh\x00", "NUL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolvePrograms([]string{"/bin/sh", tc.entry})
			var pe *ProgramError
			if !errors.As(err, &pe) || pe.Entry != tc.entry || got != nil {
				t.Fatalf("got %q, %v; want a *ProgramError for %q", got, err, tc.entry)
			}
			if !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), quote(tc.entry)) {
				t.Errorf("error %q does not name the entry or say %q", err, tc.says)
			}
		})
	}
	t.Run("PATH finds it only in the current directory", func(t *testing.T) {
		local := filepath.Join(dir, "localtool")
		if err := os.WriteFile(local, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Chdir(dir)
		t.Setenv("PATH", ".")
		if _, err := ResolvePrograms([]string{"localtool"}); err == nil || !strings.Contains(err.Error(), "current directory") {
			t.Errorf("got %v, want a refusal", err)
		}
	})
}

func TestCapped(t *testing.T) {
	c := &capped{max: 5}
	for _, w := range []string{"ab", "", "cd", "efg", "h"} {
		if n, err := c.Write([]byte(w)); n != len(w) || err != nil {
			t.Fatalf("Write(%q) = %d, %v: it must take everything", w, n, err)
		}
	}
	if c.String() != "abcde" || !c.over {
		t.Errorf("kept %q over %v, want \"abcde\" true", c.String(), c.over)
	}
	c = &capped{max: 3}
	c.Write([]byte("abc"))
	c.Write(nil)
	if c.String() != "abc" || c.over {
		t.Errorf("exactly the cap: kept %q over %v", c.String(), c.over)
	}
}
