package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ProgramError is ResolvePrograms' refusal of one entry of the operator's
// list.
type ProgramError struct {
	Entry string // the entry as the operator wrote it
	Err   error
}

func (e *ProgramError) Error() string {
	return fmt.Sprintf("exec program %s: %v", quote(e.Entry), e.Err)
}

func (e *ProgramError) Unwrap() error { return e.Err }

// ResolvePrograms turns the operator's list (absolute paths, or bare names
// looked up on PATH once, now) into absolute paths of existing executable
// regular files, in order, without duplicates. An absolute path is
// cleaned, and a symbolic link in it is kept as written (what runs is
// whatever the path names when the command starts). A relative path with a
// slash, an empty entry, a name PATH finds only relative to the current
// directory, a missing file, a directory and a file with no execute bit
// are refused; the error is a *ProgramError naming the entry.
func ResolvePrograms(list []string) ([]string, error) {
	out := make([]string, 0, len(list))
	for _, entry := range list {
		p, err := resolveProgram(entry)
		if err != nil {
			return nil, &ProgramError{Entry: entry, Err: err}
		}
		if indexOf(out, p) < 0 {
			out = append(out, p)
		}
	}
	return out, nil
}

func resolveProgram(entry string) (string, error) {
	var p string
	switch {
	case entry == "":
		return "", errors.New("empty")
	case strings.IndexByte(entry, 0) >= 0:
		return "", errors.New("contains a NUL byte")
	case filepath.IsAbs(entry):
		p = filepath.Clean(entry)
	case strings.ContainsRune(entry, '/'):
		return "", errors.New("a relative path: name a program by its absolute path or a bare name found on PATH")
	default:
		lp, err := exec.LookPath(entry)
		if errors.Is(err, exec.ErrDot) || (err == nil && !filepath.IsAbs(lp)) {
			return "", errors.New("found on PATH only relative to the current directory")
		}
		if err != nil {
			return "", fmt.Errorf("not found on PATH: %w", exec.ErrNotFound)
		}
		p = lp
	}
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%s does not exist: %w", p, fs.ErrNotExist)
	case err != nil:
		return "", err
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("%s is not a regular file", p)
	case fi.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("%s is not executable", p)
	}
	return p, nil
}
