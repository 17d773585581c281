package plugin

import (
	"context"
	"testing"
	"time"
)

func BenchmarkObserveTimer(b *testing.B) {
	r := newRuntime(&testing.T{}, Config{})
	ctx := context.Background()
	req := timerReq(t0.Add(time.Hour), t0, "w")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Observe(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}
