package main

// The timer's observe as plain Go, the floor under the wasm benchmarks in
// internal/plugin/bench_test.go (same pending request). See docs/BENCHMARKS.md.

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/benchtest"
	"github.com/vigilhq/vigil/sdk"
	"github.com/vigilhq/vigil/sdk/abi"
)

var (
	benchNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	benchAt  = benchNow.Add(time.Hour)
)

func BenchmarkObserveNative(b *testing.B) {
	// observe alone: the predicate's own logic, params already decoded.
	b.Run("func", func(b *testing.B) {
		p := Params{At: benchAt}
		in := sdk.Input{Kind: "timer", WatchID: "w", Now: benchNow, Attempt: 1}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := observe(p, in); err != nil {
				b.Fatal(err)
			}
		}
	})

	// The same JSON dispatch as the wasm export: the host's json.Marshal of
	// the request, the SDK's envelope decode, params decode, observe, the
	// SDK's encode, and json.Unmarshal of the answer.
	b.Run("harness", func(b *testing.B) {
		h := sdk.NewHarness(Plugin)
		req := abi.ObserveRequest{
			Kind: "timer", WatchID: "w", Now: benchNow, Attempt: 1,
			Params: json.RawMessage(fmt.Sprintf(`{"at":%q}`, benchAt.Format(time.RFC3339Nano))),
		}
		call := func() error {
			resp, err := h.Observe(req, nil)
			if err != nil {
				return err
			}
			if resp.Status != abi.StatusPending || resp.NextCheck == nil || !resp.NextCheck.Equal(benchAt) {
				return fmt.Errorf("answer %+v", resp)
			}
			return nil
		}
		benchtest.Timed(b, call)
	})
}
