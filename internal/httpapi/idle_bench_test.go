//go:build linux

package httpapi

// BenchmarkIdleLongPolls is the cost of VIGIL_BENCH_READERS (default
// 10000) idle long-poll readers, each an open connection with
// GET /api/v1/recipients/r<i>/mailbox?wait=60s in flight and nothing to
// read. Run with
//
//	go test -run XXX -bench IdleLongPolls -benchmem ./internal/httpapi/
//
// The clients are raw TCP connections in a child process (this test
// binary running TestBenchIdleClient), so every goroutine, heap byte and
// resident page counted here is the server's. The server is the real one
// on 127.0.0.1:0 with a badger store; its Mailboxes is the Delivery behind
// a counter of the calls in progress, which is how the benchmark knows
// every request has reached Delivery.Read (it adds no goroutine and no
// allocation).
//
// Reported, per reader: goroutines, Go heap (runtime/metrics
// /memory/classes/heap/objects:bytes, after a GC), goroutine stacks, and
// resident memory (/proc/self/statm, after debug.FreeOSMemory). Then the
// clients close their connections, and the benchmark reports how many
// goroutines are still there a second later (the server does not notice a
// client that goes away while its handler waits), wakes the waiting
// handlers by cancelling the server's base context (what shutdown does),
// and reports how long the goroutines take to return to the baseline.
//
// With VIGIL_BENCH_PROFILE=<file>, the benchmark records every allocation
// (runtime.MemProfileRate = 1) and writes a heap profile to the file once
// the readers are parked: go tool pprof -sample_index=inuse_space -top
// <file> says what a parked reader holds. That run's memory figures
// include the profiler's own records; take them from a run without it.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vigilhq/vigil/store"
)

const (
	idleAddrEnv    = "VIGIL_BENCH_IDLE_ADDR"
	idleReadersEnv = "VIGIL_BENCH_READERS"
)

func idleReaders(tb testing.TB) int {
	n := 10_000
	if v := os.Getenv(idleReadersEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(strings.ReplaceAll(v, "_", "")); err != nil || n <= 0 {
			tb.Fatalf("%s=%q: want a positive integer", idleReadersEnv, v)
		}
	}
	return n
}

// raiseFileLimit makes sure the process (and the children it starts) may
// open need files, raising the hard limit too if it must (which takes
// privilege).
func raiseFileLimit(need uint64) error {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return err
	}
	if rl.Cur >= need {
		return nil
	}
	rl.Cur = need
	rl.Max = max(rl.Max, need)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return fmt.Errorf("raising RLIMIT_NOFILE to %d: %w", need, err)
	}
	return nil
}

// inRead counts the Mailboxes.Read calls in progress.
type inRead struct {
	Mailboxes
	n atomic.Int64
}

func (m *inRead) Read(ctx context.Context, rid string, after uint64, limit int, wait time.Duration) ([]store.Message, error) {
	m.n.Add(1)
	defer m.n.Add(-1)
	return m.Mailboxes.Read(ctx, rid, after, limit, wait)
}

type idleSample struct {
	goroutines                  int
	heap, heapObjects, stacks   int64
	rss, goMapped, goReleasable int64
}

// sampleIdle reads the process's figures after a full collection that
// also hands freed memory back to the OS.
func sampleIdle() idleSample {
	debug.FreeOSMemory()
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/objects:objects"},
		{Name: "/memory/classes/heap/stacks:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}
	metrics.Read(s)
	out := idleSample{
		goroutines: runtime.NumGoroutine(),
		heap:       int64(s[0].Value.Uint64()), heapObjects: int64(s[1].Value.Uint64()),
		stacks: int64(s[2].Value.Uint64()), goMapped: int64(s[3].Value.Uint64()), goReleasable: int64(s[4].Value.Uint64()),
	}
	if raw, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(raw)); len(f) > 1 {
			pages, _ := strconv.ParseInt(f[1], 10, 64)
			out.rss = pages * int64(os.Getpagesize())
		}
	}
	return out
}

// until polls cond every 20 ms for at most limit; false if it never held.
func until(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// steadyGoroutines waits until the goroutine count has not changed over
// five polls 20 ms apart (at most limit) and returns it.
func steadyGoroutines(limit time.Duration) (int, bool) {
	last, same := -1, 0
	ok := until(limit, func() bool {
		n := runtime.NumGoroutine()
		if n == last {
			same++
		} else {
			last, same = n, 0
		}
		return same >= 5
	})
	return last, ok
}

// BenchmarkIdleLongPolls is parked long-poll readers; see the top of this
// file.
func BenchmarkIdleLongPolls(b *testing.B) {
	n := idleReaders(b)
	if err := raiseFileLimit(uint64(n) + 1024); err != nil {
		b.Skipf("%d connections need %d open files in this process and in the client: %v", n, n+1024, err)
	}
	profile := os.Getenv("VIGIL_BENCH_PROFILE")
	if profile != "" {
		runtime.MemProfileRate = 1
	}
	var sum map[string]float64
	for range b.N {
		res := idleOnce(b, n, profile)
		if sum == nil {
			sum = map[string]float64{}
		}
		for k, v := range res {
			sum[k] += v / float64(b.N)
		}
	}
	for k, v := range sum {
		b.ReportMetric(v, k)
	}
	b.ReportMetric(0, "ns/op")
}

func idleOnce(b *testing.B, n int, profile string) map[string]float64 {
	ctx := context.Background()
	st := openBenchStore(b, b.TempDir())
	counter := &inRead{}
	srv := startServer(b, st, timerFake{}, serverOpts{mailboxes: func(m Mailboxes) Mailboxes { counter.Mailboxes = m; return counter }})
	now := time.Now().UTC()
	for i := range n {
		rec := store.RecipientRecord{ID: "r" + strconv.Itoa(i), Status: store.StatusRunning, CreatedAt: now, UpdatedAt: now}
		if _, _, err := st.PutRecipient(ctx, rec); err != nil {
			b.Fatal(err)
		}
	}
	// One request first, so that fiber's and fasthttp's lazily built
	// state (route tree, pools) is not counted as the readers'.
	if c, err := net.Dial("tcp", strings.TrimPrefix(srv.url, "http://")); err == nil {
		fmt.Fprintf(c, "GET /api/v1/recipients/r0/mailbox?wait=0s HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
		_, _ = io.Copy(io.Discard, c)
		_ = c.Close()
	}
	if _, ok := steadyGoroutines(5 * time.Second); !ok {
		b.Fatal("the goroutine count never settled before the readers")
	}
	before := sampleIdle()

	cmd := exec.Command(os.Args[0], "-test.run=^TestBenchIdleClient$", "-test.count=1")
	cmd.Env = append(os.Environ(), idleAddrEnv+"="+strings.TrimPrefix(srv.url, "http://"), idleReadersEnv+"="+strconv.Itoa(n))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	expect := func(word string) {
		for lines.Scan() {
			if lines.Text() == word {
				return
			}
		}
		b.Fatalf("the client process ended before %q: %v", word, lines.Err())
	}
	expect("ready")
	if !until(30*time.Second, func() bool { return counter.n.Load() == int64(n) }) {
		b.Fatalf("%d of %d readers reached Delivery.Read in 30s", counter.n.Load(), n)
	}
	if _, ok := steadyGoroutines(5 * time.Second); !ok {
		b.Fatal("the goroutine count never settled with the readers parked")
	}
	parkedIn := time.Since(start)
	parked := sampleIdle()
	if profile != "" {
		// The heap profile is as of the last completed GC cycle, and
		// publishes a cycle's allocations only at the end of the next.
		runtime.GC()
		runtime.GC()
		f, err := os.Create(profile)
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			b.Fatal(err)
		}
		_ = f.Close()
	}
	per := func(a, z int64) float64 { return float64(z-a) / float64(n) }
	res := map[string]float64{
		"readers":            float64(n),
		"park-s":             parkedIn.Seconds(),
		"goroutines/reader":  per(int64(before.goroutines), int64(parked.goroutines)),
		"heap-B/reader":      per(before.heap, parked.heap),
		"heap-objs/reader":   per(before.heapObjects, parked.heapObjects),
		"stack-B/reader":     per(before.stacks, parked.stacks),
		"rss-B/reader":       per(before.rss, parked.rss),
		"go-mapped-B/reader": per(before.goMapped-before.goReleasable, parked.goMapped-parked.goReleasable),
	}
	b.Logf("before: %+v", before)
	b.Logf("parked: %+v", parked)

	// The clients hang up. The handlers wait on: nothing tells them.
	_ = stdin.Close()
	expect("closed")
	_ = cmd.Wait()
	time.Sleep(time.Second)
	res["goroutines-after-close/reader"] = per(int64(before.goroutines), int64(runtime.NumGoroutine()))
	res["reading-after-close/reader"] = float64(counter.n.Load()) / float64(n)

	// Wake them as shutdown does; the goroutines serve their (dead)
	// connections to the end and go back to fasthttp's worker pool, which
	// drops idle workers after 10 s.
	srv.wake()
	woken := time.Now()
	if !until(30*time.Second, func() bool { return counter.n.Load() == 0 }) {
		b.Fatalf("%d readers still in Delivery.Read 30s after the wake", counter.n.Load())
	}
	res["unpark-s"] = time.Since(woken).Seconds()
	back := until(40*time.Second, func() bool { return runtime.NumGoroutine() <= before.goroutines+2 })
	res["baseline-return-s"] = time.Since(woken).Seconds()
	if !back {
		b.Errorf("goroutines did not return to the baseline %d within 40s of the wake: %d", before.goroutines, runtime.NumGoroutine())
	}
	res["goroutines-left"] = float64(runtime.NumGoroutine() - before.goroutines)
	srv.stop()
	return res
}

// TestBenchIdleClient is not a test: it is the client process of
// BenchmarkIdleLongPolls, and skips unless that benchmark started it. It
// opens the connections, sends each its long poll, prints "ready", waits
// for its stdin to close, closes them all, and prints "closed".
func TestBenchIdleClient(t *testing.T) {
	addr := os.Getenv(idleAddrEnv)
	if addr == "" {
		t.Skip("the client process of BenchmarkIdleLongPolls; it runs only under -bench")
	}
	n := idleReaders(t)
	conns := make([]net.Conn, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				c, err := net.Dial("tcp", addr)
				if err == nil {
					_, err = fmt.Fprintf(c, "GET /api/v1/recipients/r%d/mailbox?wait=60s HTTP/1.1\r\nHost: bench\r\n\r\n", i)
				}
				if err != nil {
					errs <- fmt.Errorf("connection %d: %w", i, err)
					return
				}
				conns[i] = c
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		_ = c.Close()
	}
	fmt.Println("closed")
}
