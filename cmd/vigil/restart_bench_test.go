package main

// BenchmarkRestart: a real `vigil serve` started on a badger store that
// already holds N pending timers, their instants spread over the next 7
// days, and 1,000 recipients; docs/BENCHMARKS.md has the figures. Run
// with
//
//	VIGIL_BENCH_RESTART_WATCHES=1000000 go test -run '^$' -bench Restart -benchtime 1x ./cmd/vigil/
//
// VIGIL_BENCH_RESTART_WATCHES is a comma-separated list of sizes
// (default 1000000), each a sub-benchmark in turn, so sizes compared are
// measured in one run. VIGIL_BENCH_RESTART_BIN runs another build of
// vigil (the tree before a change) on the same fill instead of this
// tree's. The store is filled in this process through the store's own
// transitions, many rows a commit (store.CreateMany), and closed; the
// child is then started with the shared plugin compilation cache, warmed
// by a first start on an empty store: once (first_ready_s), left to run
// until the store's table files have not changed for 5 s (its badger
// compacts the fill's tables, as a host that wrote the rows itself would
// have while it ran), stopped, and started again, the start measured.
// Reported: fill_s (the fill, not the restart), ready_s (the child's start to GET /healthz answering
// 200), rss_MiB (the child's VmRSS from /proc 2 s after ready, after a
// forced collection that returns the free memory to the system: POST
// /debug/free on its debug listener, and a second; the resident size it
// keeps to work on, the pages of its binary and of the store's files it
// maps counted), anon_MiB (RssAnon: the same without file pages, the heap's
// share), settled_rss_MiB and settled_anon_MiB (the same once the
// compaction the start began has finished and 3 s more have passed),
// hwm_MiB (the child's peak resident size up to then) and
// store_B/row (the store directory's bytes over N).

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/benchtest"
	"github.com/vigilhq/vigil/internal/servetest"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

const (
	restartRecipients = 1000
	restartSpread     = 7 * 24 * time.Hour
)

func BenchmarkRestart(b *testing.B) {
	if testing.Short() {
		b.Skip("builds and runs the binary")
	}
	sizes := []int{1_000_000}
	if v := os.Getenv("VIGIL_BENCH_RESTART_WATCHES"); v != "" {
		sizes = sizes[:0]
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 0 {
				b.Fatalf("VIGIL_BENCH_RESTART_WATCHES=%q: want a comma-separated list of counts", v)
			}
			sizes = append(sizes, n)
		}
	}
	bin := os.Getenv("VIGIL_BENCH_RESTART_BIN")
	if bin == "" {
		dir := b.TempDir()
		var err error
		if bin, err = servetest.Build(dir); err != nil {
			b.Fatal(err)
		}
	}
	// A first start on an empty store fills the compilation cache, so no
	// measured start compiles a plugin.
	if _, err := restartChild(b, bin, b.TempDir(), nil); err != nil {
		b.Fatal(err)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("pending=%d", n), func(b *testing.B) {
			for range b.N {
				data := b.TempDir()
				t0 := time.Now()
				if err := fillRestart(context.Background(), filepath.Join(data, "store"), n); err != nil {
					b.Fatal(err)
				}
				fill := time.Since(t0)
				// The host's first start after the load: its badger compacts
				// the fill's level-0 tables, as a host that wrote the rows
				// itself would have while it ran. The restart measured is
				// the next one, once the store's tables have stopped
				// changing.
				first, err := restartChildSettled(b, bin, data)
				if err != nil {
					b.Fatal(err)
				}
				size := dirBytes(b, filepath.Join(data, "store"))
				// The start measured: its resident size after ready and a forced collection, and
				// again once its badger has finished the compaction a start
				// begins (the tables the last run's close flushed) and a
				// few of the host's trims have run.
				var settled restarted
				r, err := restartChild(b, bin, data, func(_ restarted, again func() (restarted, error)) {
					benchtest.WaitTables(b, filepath.Join(data, "store"))
					time.Sleep(3 * time.Second)
					var err error
					if settled, err = again(); err != nil {
						b.Fatal(err)
					}
				})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(first.Seconds(), "first_ready_s")
				b.ReportMetric(fill.Seconds(), "fill_s")
				b.ReportMetric(r.ready.Seconds(), "ready_s")
				b.ReportMetric(float64(r.rss)/(1<<20), "rss_MiB")
				b.ReportMetric(float64(r.hwm)/(1<<20), "hwm_MiB")
				b.ReportMetric(float64(r.anon)/(1<<20), "anon_MiB")
				b.ReportMetric(float64(settled.rss)/(1<<20), "settled_rss_MiB")
				b.ReportMetric(float64(settled.anon)/(1<<20), "settled_anon_MiB")
				if n > 0 {
					b.ReportMetric(float64(size)/float64(n), "store_B/row")
				}
				if err := os.RemoveAll(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// fillRestart writes n pending timers and restartRecipients running
// recipients into a new badger store in dir, and closes it. The
// timers' instants are spread evenly over the next restartSpread, each
// the watch's durable first check, as a registration of a timer writes
// it; their recipients are the recipients in turn. An older build that
// has no such marker runs its start-up pruning over the store anyway.
func fillRestart(ctx context.Context, dir string, n int) error {
	st, err := badger.OpenStore(dir, badger.Options{})
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	// As a store this build has served since it was new: the retention's
	// once-in-a-store's-life backstop has run (on the empty store), so
	// the start measured is a restart, not a first start on the store.
	if _, err := st.PruneUnindexed(ctx, now); err != nil {
		_ = st.Close()
		return err
	}
	rids := make([]store.Recipient, restartRecipients)
	for i := range rids {
		rids[i] = store.Recipient{ID: fmt.Sprintf("agent-%04d", i)}
		if _, _, err := st.PutRecipient(ctx, store.RecipientRecord{ID: rids[i].ID, Status: store.StatusRunning, CreatedAt: now, UpdatedAt: now}); err != nil {
			_ = st.Close()
			return err
		}
	}
	src := rand.NewChaCha8([32]byte{'r', 'e', 's', 't', 'a', 'r', 't'})
	const batch = 20_000
	ws := make([]store.Watch, 0, batch)
	for i := 0; i < n; i++ {
		at := now.Add(time.Minute + time.Duration(int64(restartSpread)/int64(max(n, 1))*int64(i))).Truncate(time.Second)
		exp := at.Add(time.Minute)
		id, err := store.NewID(now, src)
		if err != nil {
			_ = st.Close()
			return err
		}
		params, _ := json.Marshal(map[string]string{"at": at.Format(time.RFC3339)})
		ws = append(ws, store.Watch{
			ID: id, Kind: "timer", Params: params, Recipient: rids[i%len(rids)],
			State: store.Pending, Receipt: store.ReceiptNone, Every: store.Duration(time.Minute),
			CreatedAt: now, ExpiresAt: &exp, NextCheck: at,
		})
		if len(ws) == batch || i == n-1 {
			if err := st.CreateMany(ctx, ws); err != nil {
				_ = st.Close()
				return err
			}
			ws = ws[:0]
		}
	}
	return st.Close()
}

// restarted is one measured start.
type restarted struct {
	ready          time.Duration
	rss, hwm, anon int64
}

// restartChildSettled starts bin serve on data and returns how long it
// took to answer, once the store's files have not changed for 5 s (at
// most 10 minutes), and stops it.
func restartChildSettled(b *testing.B, bin, data string) (time.Duration, error) {
	var ready time.Duration
	_, err := restartChild(b, bin, data, func(r restarted, _ func() (restarted, error)) {
		ready = r.ready
		benchtest.WaitTables(b, filepath.Join(data, "store"))
	})
	return ready, err
}

// restartChild starts bin serve on data, waits for /healthz, lets it
// settle, reads its resident sizes, calls then (when set) with them and
// its pid, and stops it.
func restartChild(b *testing.B, bin, data string, then func(restarted, func() (restarted, error))) (restarted, error) {
	addr, err := servetest.FreeAddr()
	if err != nil {
		return restarted{}, err
	}
	args := []string{"serve", "--listen", addr, "--data", data}
	// This tree's host frees its memory on asking (POST /debug/free on
	// its debug listener); a build before it has none, and is read
	// after its garbage has had the 3 s to be returned.
	debugAddr := ""
	if os.Getenv("VIGIL_BENCH_RESTART_BIN") == "" {
		if debugAddr, err = servetest.FreeAddr(); err != nil {
			return restarted{}, err
		}
		args = append(args, "--debug-listen", debugAddr)
	}
	cmd := exec.Command(bin, args...)
	log, err := os.Create(filepath.Join(b.TempDir(), "serve.log"))
	if err != nil {
		return restarted{}, err
	}
	defer func() { _ = log.Close() }()
	cmd.Stdout, cmd.Stderr = log, log
	exited := make(chan struct{})
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return restarted{}, err
	}
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	at, err := servetest.WaitHealthy("http://"+addr, exited, servetest.ReadyBound)
	if err != nil {
		out, _ := os.ReadFile(log.Name())
		return restarted{}, fmt.Errorf("%w\n%s", err, out)
	}
	// read frees the child's memory (this tree's) and reads its
	// resident sizes a second later.
	read := func() (r restarted, err error) {
		if debugAddr != "" {
			resp, err := http.Post("http://"+debugAddr+"/debug/free", "", nil)
			if err != nil {
				return r, err
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return r, fmt.Errorf("POST /debug/free: %s", resp.Status)
			}
		}
		time.Sleep(time.Second)
		r.rss, r.hwm, r.anon, err = procMemory(cmd.Process.Pid)
		return r, err
	}
	time.Sleep(2 * time.Second)
	r, err := read()
	r.ready = at.Sub(t0)
	if err == nil && then != nil {
		then(r, read)
	}
	return r, err
}

// procMemory reads a process's VmRSS, VmHWM and RssAnon, in bytes.
func procMemory(pid int) (rss, hwm, anon int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		var into *int64
		switch k {
		case "VmRSS":
			into = &rss
		case "VmHWM":
			into = &hwm
		case "RssAnon":
			into = &anon
		}
		if !ok || into == nil {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("/proc/%d/status %s: %w", pid, k, err)
		}
		*into = kb << 10
	}
	return rss, hwm, anon, sc.Err()
}

// dirBytes is the bytes of the files under dir.
func dirBytes(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}
