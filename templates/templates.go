package templates

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/vigilhq/vigil/sdk"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/sdk/sdktest"
)

// files are the templates, one directory per language. all: keeps the
// dot files (.gitignore) a template writes.
//
//go:embed all:go all:c all:assemblyscript
var files embed.FS

// Token is the kind every template is written for, replaced by the kind
// it is written out as.
const Token = "template.timer"

// Lang is a template's language.
type Lang string

// The languages there is a template for.
const (
	Go             Lang = "go"
	C              Lang = "c"
	AssemblyScript Lang = "assemblyscript"
)

// Langs lists the languages there is a template for.
func Langs() []Lang { return []Lang{Go, C, AssemblyScript} }

// Where a Go plugin's copies of the SDK's source and of its test-support
// module's are written, relative to the plugin; its go.mod replaces each
// module with its directory.
const (
	SDKDir     = "third_party/vigil-sdk"
	SDKTestDir = "third_party/vigil-sdktest"
)

// Error is a refusal of what vigil plugin new was asked, with a stable
// code a script can tell apart; Write and DefaultDir wrap one of the
// values below with what was wrong, so errors.Is finds it.
type Error struct {
	Code string
	msg  string
}

func (e *Error) Error() string { return e.msg }

// The refusals.
var (
	// ErrKind: the kind is not a kind name (1-64 of a-z 0-9 . _ -).
	ErrKind = &Error{"invalid_kind", "not a kind name"}
	// ErrLang: there is no template in that language.
	ErrLang = &Error{"unknown_language", "no template in this language"}
	// ErrNotEmpty: the directory exists and holds something, or is not
	// a directory.
	ErrNotEmpty = &Error{"dir_not_empty", "exists and is not an empty directory"}
	// ErrNoDir: no directory was given and the kind has no segment to
	// name one after (it is all dots).
	ErrNoDir = &Error{"dir_required", "no directory to name after the kind"}
)

// ParseLang returns the language s names.
func ParseLang(s string) (Lang, error) {
	for _, l := range Langs() {
		if string(l) == s {
			return l, nil
		}
	}
	return "", fmt.Errorf("--lang %q: %w (want go, c or assemblyscript)", s, ErrLang)
}

// DefaultDir is the directory a plugin of kind is written into when none
// is given: the kind's last segment between dots ("prom" for
// "alerts.prom").
func DefaultDir(kind string) (string, error) {
	if err := abi.CheckKind(kind); err != nil {
		return "", fmt.Errorf("%w: %w", ErrKind, err)
	}
	segs := strings.Split(kind, ".")
	for i := len(segs) - 1; i >= 0; i-- {
		if segs[i] != "" {
			return segs[i], nil
		}
	}
	return "", fmt.Errorf("kind %q: %w: give DIR", kind, ErrNoDir)
}

// Write writes the template in lang into dir as a plugin of kind, and
// returns the files it wrote, relative to dir. dir must not exist or be an
// empty directory; Write creates it. A Go plugin gets the SDK's source in
// SDKDir, and its test-support module's in SDKTestDir.
func Write(kind string, lang Lang, dir string) ([]string, error) {
	if _, err := ParseLang(string(lang)); err != nil {
		return nil, err
	}
	sub, err := fs.Sub(files, string(lang))
	if err != nil {
		return nil, err
	}
	trees := []tree{{fsys: sub, replace: true}}
	if lang == Go {
		trees = append(trees, tree{fsys: sdk.Source(), under: SDKDir}, tree{fsys: sdktest.Source(), under: SDKTestDir})
	}
	return write(kind, dir, trees)
}

// tree is one file system written into the plugin's directory: under a
// path, and either a template (the token replaced by the kind, built
// files left out) or verbatim.
type tree struct {
	fsys    fs.FS
	under   string
	replace bool
}

// skipped is what a template directory may hold after a build in the
// tree, and is never written: built files and installed packages.
func skipped(name string, dir bool) bool {
	base := path.Base(name)
	if dir {
		return base == "node_modules" || base == "build" || base == "third_party"
	}
	return strings.HasSuffix(base, ".wasm") || base == "timer_test"
}

func write(kind, dir string, trees []tree) (written []string, err error) {
	if err := abi.CheckKind(kind); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKind, err)
	}
	if err := emptyDir(dir); err != nil {
		return nil, err
	}
	var made []string // every path created, to remove on failure
	defer func() {
		if err != nil {
			for i := len(made) - 1; i >= 0; i-- {
				_ = os.Remove(made[i])
			}
			written = nil
		}
	}()
	if _, statErr := os.Stat(dir); errors.Is(statErr, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		made = append(made, dir)
	}
	for _, t := range trees {
		err := fs.WalkDir(t.fsys, ".", func(name string, d fs.DirEntry, err error) error {
			if err != nil || name == "." {
				return err
			}
			// Only a template's own directory can hold a build; the SDK's
			// trees are written whole.
			if t.replace && skipped(name, d.IsDir()) {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			rel := path.Join(t.under, outName(name))
			dst := filepath.Join(dir, filepath.FromSlash(rel))
			if d.IsDir() {
				return mkdirs(dir, rel, &made)
			}
			if err := mkdirs(dir, path.Dir(rel), &made); err != nil {
				return err
			}
			b, err := fs.ReadFile(t.fsys, name)
			if err != nil {
				return err
			}
			if t.replace {
				b = bytes.ReplaceAll(b, []byte(Token), []byte(kind))
			}
			// O_EXCL: never over a file, whatever appeared meanwhile.
			f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				return err
			}
			made = append(made, dst)
			_, err = f.Write(b)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			written = append(written, rel)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return written, nil
}

// outName is a template file's name in the plugin: a leading "_", which
// keeps the Go template out of this module's build, is dropped.
func outName(name string) string {
	dir, base := path.Split(name)
	return dir + strings.TrimPrefix(base, "_")
}

// mkdirs creates rel's missing directories under dir (the SDK's tree is
// written below third_party, which no template file names).
func mkdirs(dir, rel string, made *[]string) error {
	if rel == "." || rel == "" {
		return nil
	}
	if err := mkdirs(dir, path.Dir(rel), made); err != nil {
		return err
	}
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		return nil
	}
	if err := os.Mkdir(p, 0o755); err != nil {
		return err
	}
	*made = append(*made, p)
	return nil
}

// emptyDir refuses a dir that exists and is not an empty directory.
func emptyDir(dir string) error {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s: %w (it is a file)", dir, ErrNotEmpty)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s: %w (it holds %s): vigil plugin new never writes over files; give another DIR", dir, ErrNotEmpty, entries[0].Name())
	}
	return nil
}
