package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

func run(t *testing.T, ctx context.Context, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	root := newRoot(&out, &errb)
	root.SetArgs(args)
	err := execute(ctx, root)
	return out.String(), errb.String(), err
}

func TestPluginsListsTheBundledSet(t *testing.T) {
	out, _, err := run(t, context.Background(), "plugins", "--data", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "timer") || !strings.Contains(out, "bundled:timer/timer.wasm") {
		t.Fatalf("output:\n%s", out)
	}
}

func TestPluginsFailsAndNamesABadFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "junk.wasm"), []byte("not wasm"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := run(t, context.Background(), "plugins", "--data", t.TempDir(), "--plugins", dir)
	if err == nil || !strings.Contains(errOut, "junk.wasm") || !strings.Contains(errOut, "compile") {
		t.Fatalf("err %v, stderr:\n%s", err, errOut)
	}
	if !strings.Contains(out, "timer") {
		t.Fatalf("a bad file hid the good ones:\n%s", out)
	}
}

func TestServeRefusesAMissingPluginDir(t *testing.T) {
	_, _, err := run(t, context.Background(), "serve", "--data", t.TempDir(), "--plugins", filepath.Join(t.TempDir(), "nope"))
	if err == nil || !strings.Contains(err.Error(), "plugin directory") {
		t.Fatalf("err = %v", err)
	}
}

// signalWriter closes ready when what it has been written contains want.
type signalWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	want  string
	ready chan struct{}
	once  sync.Once
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.ready) })
	}
	return len(p), nil
}

func TestServeStopsCleanlyWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	w := &signalWriter{want: "vigil serving", ready: make(chan struct{})}
	root := newRoot(&bytes.Buffer{}, w)
	root.SetArgs([]string{"serve", "--data", t.TempDir(), "--listen", "127.0.0.1:0"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	select {
	case <-w.ready:
	case err := <-done:
		t.Fatalf("serve returned before serving: %v\n%s", err, w.buf.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !strings.Contains(w.buf.String(), `"kind":"timer"`) || !strings.Contains(w.buf.String(), "vigil stopping") {
		t.Fatalf("log:\n%s", w.buf.String())
	}
}

func TestServeRefusesAStoreInUse(t *testing.T) {
	data := t.TempDir()
	st, err := badger.OpenStore(filepath.Join(data, "store"), badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, _, err = run(t, context.Background(), "serve", "--data", data)
	if !errors.Is(err, store.ErrInUse) || !strings.Contains(err.Error(), "another vigil serve") {
		t.Fatalf("err = %v", err)
	}
}

func TestServeRefusesBadFlags(t *testing.T) {
	_, _, err := run(t, context.Background(), "serve", "--data", t.TempDir(), "--workers", "64")
	if err == nil || !strings.Contains(err.Error(), "--workers") {
		t.Fatalf("err = %v", err)
	}
}

func TestServeRefusesANonLoopbackListenWithoutTokens(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:7878", "[::]:7878", "192.0.2.1:7878", "example.org:80"} {
		_, _, err := run(t, context.Background(), "serve", "--data", t.TempDir(), "--listen", addr)
		if err == nil || !strings.Contains(err.Error(), "loopback only") {
			t.Fatalf("%s: err = %v", addr, err)
		}
	}
}
