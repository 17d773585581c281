package wasmbuild

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// BuildArgs are the go build arguments every vigil plugin is built with
// (after GOOS=wasip1 GOARCH=wasm). -trimpath makes the output depend only
// on the source and the Go release.
var BuildArgs = []string{"build", "-buildmode=c-shared", "-trimpath", "-buildvcs=false"}

// Go returns the go command to build with: the one on PATH, else the one
// of the running toolchain.
func Go() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// BuildFile builds the Go package in dir into out.
func BuildFile(dir, out string) error {
	args := append(append([]string{}, BuildArgs...), "-o", out, ".")
	cmd := exec.Command(Go(), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s: %w\n%s", dir, err, stderr.String())
	}
	return nil
}

// Builder builds each package at most once per test process.
type Builder struct {
	mu    sync.Mutex
	dir   string
	built map[string]string
}

// Build returns the path of dir's package built to .wasm, building it on
// first use. It fails tb on a build error.
func (b *Builder) Build(tb testing.TB, dir string) string {
	tb.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		tb.Fatal(err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if p, ok := b.built[abs]; ok {
		return p
	}
	if b.dir == "" {
		b.dir, err = os.MkdirTemp("", "vigil-wasm-")
		if err != nil {
			tb.Fatal(err)
		}
		b.built = map[string]string{}
	}
	out := filepath.Join(b.dir, fmt.Sprintf("%d-%s.wasm", len(b.built), filepath.Base(abs)))
	if err := BuildFile(abs, out); err != nil {
		tb.Fatal(err)
	}
	b.built[abs] = out
	return out
}

// Cleanup removes what Build wrote. Call it from TestMain.
func (b *Builder) Cleanup() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
}

// CacheDir is the wazero compilation cache all of vigil's tests share.
func CacheDir() string { return filepath.Join(os.TempDir(), "vigil-test-wazero-cache") }

// GoVersion reads the Go release that built a .wasm from its "producers"
// custom section ("go1.26.8").
func GoVersion(wasm []byte) (string, error) {
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], []byte("\x00asm")) {
		return "", errors.New("not a wasm module")
	}
	r := &reader{b: wasm[8:]}
	for !r.done() {
		id := r.byte()
		size := r.uleb()
		body := r.take(size)
		if r.err != nil {
			return "", r.err
		}
		if id != 0 {
			continue
		}
		s := &reader{b: body}
		if s.str() != "producers" {
			continue
		}
		for fields := s.uleb(); fields > 0 && s.err == nil; fields-- {
			field := s.str()
			for vals := s.uleb(); vals > 0 && s.err == nil; vals-- {
				name, version := s.str(), s.str()
				if field == "language" && name == "Go" {
					return version, nil
				}
			}
		}
		if s.err != nil {
			return "", s.err
		}
	}
	return "", errors.New("no Go producer recorded")
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) done() bool { return r.err != nil || len(r.b) == 0 }

func (r *reader) byte() byte {
	if r.err != nil || len(r.b) == 0 {
		r.fail()
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) uleb() uint64 {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v
		}
	}
	r.fail()
	return 0
}

func (r *reader) take(n uint64) []byte {
	if r.err != nil || n > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) str() string { return string(r.take(r.uleb())) }

func (r *reader) fail() {
	if r.err == nil {
		r.err = errors.New("truncated wasm section")
	}
}
