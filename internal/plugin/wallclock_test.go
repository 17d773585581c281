package plugin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vigilhq/vigil/sdk/abi"
)

// wallClockPlugin is a plugin, raw Extism ABI and no dependencies, whose
// observe answers pending with the guest's wall clock as its note. It is
// written out and built by the test, beside its own go.mod, so the test
// needs no fixture of its own.
const wallClockPlugin = `package main

import "time"

//go:wasmimport extism:host/env alloc
func alloc(n uint64) uint64

//go:wasmimport extism:host/env store_u8
func storeU8(offset uint64, v uint32)

//go:wasmimport extism:host/env output_set
func outputSet(offset, n uint64)

func output(s string) int32 {
	off := alloc(uint64(len(s)))
	for i := 0; i < len(s); i++ {
		storeU8(off+uint64(i), uint32(s[i]))
	}
	outputSet(off, uint64(len(s)))
	return 0
}

//go:wasmexport describe
func describe() int32 {
	return output(` + "`" + `{"abi":"vigil.predicate/v1","kind":"test.wallclock","version":"1.0.0","summary":"",` +
	`"standing":false,"default_every":"1s","params_schema":{"type":"object"},"capabilities":[]}` + "`" + `)
}

//go:wasmexport admit
func admit() int32 { return output(` + "`" + `{"ok":true}` + "`" + `) }

//go:wasmexport observe
func observe() int32 {
	return output(` + "`" + `{"status":"pending","note":"` + "`" + ` + time.Now().UTC().Format(time.RFC3339Nano) + ` + "`" + `"}` + "`" + `)
}

func main() {}
`

// guestNow builds the wall-clock plugin once per test and reads the
// guest's clock through one observe call on a runtime with cfg.
func guestNow(t *testing.T, cfg Config) time.Time {
	t.Helper()
	src := t.TempDir()
	for name, body := range map[string]string{
		"go.mod":  "module wallclock\n\ngo 1.24\n",
		"main.go": wallClockPlugin,
	} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	copyFile(t, builder.Build(t, src), filepath.Join(dir, "wallclock.wasm"))
	cfg.Dir = dir
	r := newRuntime(t, cfg)
	obs, err := r.Observe(context.Background(), abi.ObserveRequest{Kind: "test.wallclock", WatchID: "w", Now: t0, Params: json.RawMessage(`{}`)})
	if err != nil || obs.Fault != nil {
		t.Fatalf("observe: %+v %v", obs, err)
	}
	got, err := time.Parse(time.RFC3339Nano, obs.Note)
	if err != nil {
		t.Fatalf("note %q: %v", obs.Note, err)
	}
	return got
}

func TestWallClockDefaultsToTheFakeClock(t *testing.T) {
	got := guestNow(t, Config{})
	// wazero's fake clock starts at 2022-01-01 and moves a millisecond a
	// reading; a guest sees neither the host's clock nor a real one.
	epoch := time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC)
	if got.Before(epoch) || got.After(epoch.Add(time.Minute)) {
		t.Fatalf("guest clock %v, want wazero's fake clock near %v", got, epoch)
	}
}

func TestWallClockIsTheConfiguredOne(t *testing.T) {
	want := time.Date(2031, 5, 6, 7, 8, 9, 123456000, time.UTC)
	got := guestNow(t, Config{WallClock: func() time.Time { return want }})
	if !got.Equal(want) {
		t.Fatalf("guest clock %v, want %v", got, want)
	}
}
