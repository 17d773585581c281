package upkeep_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/fakeclock"

	"github.com/vigilhq/vigil/internal/upkeep"
	"github.com/vigilhq/vigil/store"
)

// BenchmarkPruneBacklog prunes a backlog of VIGIL_BENCH_PRUNE (default
// 2000) settled rows and their messages, all past their retention, batch
// by batch as the loop would, and reports the cost per record and the
// batches it took. Each batch seeks from the class's floor, so the last
// batch costs what the first did.
func BenchmarkPruneBacklog(b *testing.B) {
	n := 2000
	if v := os.Getenv("VIGIL_BENCH_PRUNE"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("VIGIL_BENCH_PRUNE=%q: want a positive integer", v)
		}
	}
	ctx := context.Background()
	for range b.N {
		b.StopTimer()
		f := newFixture(b)
		for i := range n {
			f.settled(t0.Add(-30*day + time.Duration(i)*time.Millisecond))
		}
		cs := &countingStore{Store: f.st}
		u, err := upkeep.New(upkeep.Config{Store: cs, Clock: fakeclock.At(t0), Classes: []upkeep.Class{
			{Class: store.RetainedSettled, Retention: 7 * day}, {Class: store.RetainedMessages, Retention: 7 * day},
		}})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := u.Prime(ctx); err != nil {
			b.Fatal(err)
		}
		for {
			next, ok := u.NextWake()
			if !ok || next.After(t0) {
				break
			}
			if _, err := u.Tick(ctx, t0); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*n*b.N), "ns/record")
		b.ReportMetric(float64(cs.batches.Load()), "batches")
	}
}
