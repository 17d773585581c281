package templates

// The templates' .wasm beside the Go SDK's bundled timer: the size of each
// file and one warm observe through the host's runtime, the same pending
// request (a timer an hour away) for all four. docs/BENCHMARKS.md has the
// results. Run with
//
//	go test -run XXX -bench TemplateObserve -benchmem ./templates/

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/benchtest"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/internal/wasmbuild"
	"github.com/vigilhq/vigil/plugins"
	"github.com/vigilhq/vigil/sdk/abi"
)

func BenchmarkTemplateObserve(b *testing.B) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := now.Add(time.Hour)
	observe := func(b *testing.B, dir, wasm, kind string) {
		st, err := os.Stat(filepath.Join(dir, wasm))
		if err != nil {
			b.Fatal(err)
		}
		r, err := plugin.New(context.Background(), plugin.Config{Dir: dir, CacheDir: wasmbuild.CacheDir()})
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close(context.Background())
		if p := r.Problems(); len(p) != 0 {
			b.Fatalf("problems: %v", p)
		}
		req := abi.ObserveRequest{Kind: kind, WatchID: "w", Now: now, Attempt: 1,
			Params: json.RawMessage(fmt.Sprintf(`{"at":%q}`, at.Format(time.RFC3339)))}
		benchtest.Timed(b, func() error {
			obs, err := r.Observe(context.Background(), req)
			if err != nil {
				return err
			}
			if obs.Fault != nil || obs.Status != abi.StatusPending || !obs.NextCheck.Equal(at) {
				return fmt.Errorf("observation %+v", obs)
			}
			return nil
		})
		// After the timing, which resets what was reported before it.
		b.ReportMetric(float64(st.Size()), "wasm-B")
	}

	b.Run("go-sdk-timer", func(b *testing.B) {
		// The bundled timer, as embedded in the binary, alone in a
		// plugin directory.
		dir := b.TempDir()
		wasm, err := fs.ReadFile(plugins.Bundled(), "timer/timer.wasm")
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "timer.wasm"), wasm, 0o644); err != nil {
			b.Fatal(err)
		}
		writeRegistry(b, dir, "timer", "timer.wasm")
		observe(b, dir, "timer.wasm", "timer")
	})
	for _, lang := range Langs() {
		b.Run("template-"+string(lang), func(b *testing.B) {
			env := buildEnv(b, lang)
			dir := filepath.Join(b.TempDir(), "p")
			if _, err := Write(testKind, lang, dir); err != nil {
				b.Fatal(err)
			}
			run(b, dir, env, "make")
			writeRegistry(b, dir, testKind, testKind+".wasm")
			observe(b, dir, testKind+".wasm", testKind)
		})
	}
}

func writeRegistry(b *testing.B, dir, kind, wasm string) {
	b.Helper()
	reg := fmt.Sprintf(`{"kinds":{%q:{"wasm":%q}}}`, kind, wasm)
	if err := os.WriteFile(filepath.Join(dir, "registry.json"), []byte(reg), 0o644); err != nil {
		b.Fatal(err)
	}
}
