package benchtest

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Drive runs do(i) for i in 0 … b.N-1 on g goroutines, timed, and returns
// each call's latency. The first error ends the benchmark.
func Drive(b *testing.B, g int, do func(i int) error) []time.Duration {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	per := make([][]time.Duration, g)
	errs := make(chan error, g)
	b.ResetTimer()
	for w := range g {
		wg.Go(func() {
			ds := make([]time.Duration, 0, b.N/g+1)
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					break
				}
				t := time.Now()
				if err := do(i); err != nil {
					errs <- err
					break
				}
				ds = append(ds, time.Since(t))
			}
			per[w] = ds
		})
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	return slices.Concat(per...)
}

// Timed runs call b.N times on one goroutine, timing each, and reports p50
// and p99 in nanoseconds next to the mean. The first call runs untimed:
// it is where a guest initializes.
func Timed(b *testing.B, call func() error) {
	b.Helper()
	if err := call(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	ds := Drive(b, 1, func(int) error { return call() })
	Percentiles(b, ds, time.Nanosecond, "ns")
}

// Percentiles sorts ds and reports their p50 and p99 in unit, as the
// metrics p50-<name> and p99-<name>.
func Percentiles(b *testing.B, ds []time.Duration, unit time.Duration, name string) {
	b.Helper()
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	at := func(p float64) float64 {
		return float64(ds[min(int(p*float64(len(ds))), len(ds)-1)]) / float64(unit)
	}
	b.ReportMetric(at(0.50), "p50-"+name)
	b.ReportMetric(at(0.99), "p99-"+name)
}

// TableFiles is the size of each of badger's table files (*.sst) in dir,
// by name: what a benchmark compares to see badger flush or compact.
func TableFiles(tb testing.TB, dir string) map[string]int64 {
	tb.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	files := map[string]int64{}
	for _, e := range ents {
		if info, err := e.Info(); err == nil && strings.HasSuffix(e.Name(), ".sst") {
			files[e.Name()] = info.Size()
		}
	}
	return files
}

// WaitTables returns once badger's table files in dir have not changed
// for 5 s (at most 10 minutes): its compaction of what was written has
// settled, so what a benchmark times next does not include it.
func WaitTables(tb testing.TB, dir string) {
	tb.Helper()
	last, since := fmt.Sprint(TableFiles(tb, dir)), time.Now()
	for end := time.Now().Add(10 * time.Minute); time.Since(since) < 5*time.Second && time.Now().Before(end); {
		time.Sleep(time.Second)
		if now := fmt.Sprint(TableFiles(tb, dir)); now != last {
			last, since = now, time.Now()
		}
	}
}
