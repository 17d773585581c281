//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/syncbuf"
	"github.com/vigilhq/vigil/internal/toolreq"
)

// mountTmpfs mounts a tmpfs of size bytes on a directory of the test's and
// returns it; the test's end unmounts it, after the servers it started
// are gone. Without the right to mount (not root) it skips, or fails
// under VIGIL_REQUIRE_TOOLS=1, as CI runs as root.
func mountTmpfs(t *testing.T, size int64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		toolreq.Missing(t, fmt.Sprintf("cannot mount a tmpfs on %s (%v): the full-disk test needs root, as CI runs", dir, err))
		return ""
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
	return dir
}

// freeOn is what the filesystem of dir has free for an unprivileged
// writer, as the store measures it.
func freeOn(t *testing.T, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}

// fillTo allocates a new filler file in dir so that about leave bytes
// stay free, and returns its path.
func fillTo(t *testing.T, dir string, leave int64) string {
	t.Helper()
	f, err := os.CreateTemp(dir, "filler-")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n := freeOn(t, dir) - leave; n > 0 {
		if err := syscall.Fallocate(int(f.Fd()), 0, 0, n); err != nil {
			t.Fatalf("filling %s with %d bytes: %v", dir, n, err)
		}
	}
	return f.Name()
}

// diskClient is the test's HTTP client: a bounded wait, and a connection
// per request, so a reset connection shows as the request's error.
var diskClient = &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

func diskCall(method, url, body string) (int, http.Header, []byte, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := diskClient.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

func timerBody(at time.Time) string {
	return fmt.Sprintf(`{"kind":"timer","params":{"at":%q},"recipient":{"id":"agent-1"}}`, at.UTC().Format(time.RFC3339))
}

// ledger is every registration the host acknowledged.
type ledger struct {
	mu  sync.Mutex
	ids map[string]bool
}

func (l *ledger) add(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ids[id] = true
}

// fillWithWriters runs eight writers registering timers an hour away
// until each has been refused 507 five times in a row, and returns how
// many the host took and refused. Any other answer, or no answer, fails
// the test.
func fillWithWriters(t *testing.T, base string, l *ledger, logs fmt.Stringer) (took, refused int) {
	t.Helper()
	var mu sync.Mutex
	var problems []string
	var wg sync.WaitGroup
	deadline := time.Now().Add(40 * time.Second)
	for range 8 {
		wg.Go(func() {
			streak := 0
			for streak < 5 && time.Now().Before(deadline) {
				code, h, b, err := diskCall("POST", base+"/api/v1/watches", timerBody(time.Now().Add(time.Hour)))
				var w api.Watch
				var env api.ErrorEnvelope
				switch {
				case err != nil:
					mu.Lock()
					problems = append(problems, fmt.Sprintf("no answer: %v", err))
					mu.Unlock()
					return
				case code == http.StatusCreated && json.Unmarshal(b, &w) == nil && w.ID != "":
					l.add(w.ID)
					streak = 0
					mu.Lock()
					took++
					mu.Unlock()
				case code == http.StatusInsufficientStorage && json.Unmarshal(b, &env) == nil && env.Error.Code == api.CodeInsufficientStorage && h.Get("Retry-After") != "":
					streak++
					mu.Lock()
					refused++
					mu.Unlock()
				default:
					mu.Lock()
					problems = append(problems, fmt.Sprintf("%d %s (Retry-After %q)", code, b, h.Get("Retry-After")))
					mu.Unlock()
					return
				}
			}
			if streak < 5 {
				mu.Lock()
				problems = append(problems, "a writer was never refused within 40 s")
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(problems) > 0 {
		log := logs.String()
		t.Fatalf("the writers got %d answers of neither 201 nor 507 (or no answer): %v\nthe end of the host's log:\n%s", len(problems), problems, log[max(0, len(log)-4096):])
	}
	return took, refused
}

// mustGet reads url and fails the test unless it answers 200.
func mustGet(t *testing.T, url string, out any) {
	t.Helper()
	code, _, b, err := diskCall("GET", url, "")
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET %s: %d %v %s", url, code, err, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("GET %s: %v: %s", url, err, b)
		}
	}
}

// checkLedger fails the test unless every acknowledged registration is
// listed, pending, for agent-1.
func checkLedger(t *testing.T, base string, l *ledger) {
	t.Helper()
	listed := map[string]string{}
	after := ""
	for {
		var page api.WatchList
		mustGet(t, base+"/api/v1/watches?recipient=agent-1&limit=1000&after="+after, &page)
		for _, w := range page.Watches {
			listed[w.ID] = w.State
		}
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	lost := 0
	for id := range l.ids {
		if _, ok := listed[id]; !ok {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("LOST: %d of %d acknowledged registrations are not listed", lost, len(l.ids))
	}
}

// untilTaken registers until the host takes one, within bound.
func untilTaken(t *testing.T, base string, l *ledger, bound time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		code, _, b, err := diskCall("POST", base+"/api/v1/watches", timerBody(time.Now().Add(time.Hour)))
		var w api.Watch
		if err == nil && code == http.StatusCreated && json.Unmarshal(b, &w) == nil {
			l.add(w.ID)
			return time.Since(start)
		}
		if err != nil || code != http.StatusInsufficientStorage {
			t.Fatalf("a registration once space was freed: %d %v %s", code, err, b)
		}
		if time.Since(start) > bound {
			t.Fatalf("no registration taken within %s of freeing space: the last answer %d %s", bound, code, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A full disk is an answer, not a crash: on a tmpfs left with about 2 MiB
// free, eight concurrent writers get 201s and then 507s (never a reset
// connection, never a 500); the host stays up and serves its reads, its
// overview and metrics say writes are refused, and the timers registered
// before still fire; once space is freed (the filler removed, or the
// tmpfs grown) a registration is taken within seconds, with no restart;
// three times over. Then a restart on the still-full disk starts with
// writes refused, one on a disk too full to open the store refuses to
// start naming the directory and its free space, and neither is a
// SIGBUS; freed, it starts, and every acknowledged registration is
// there.
func TestAFullDiskIsAnAnswerNotACrash(t *testing.T) {
	bin := buildVigil(t)
	fs := mountTmpfs(t, 48<<20)
	data := filepath.Join(fs, "data")
	store := filepath.Join(data, "store")
	addr := freePort(t)
	base := "http://" + addr
	srv := startServer(t, bin, addr, data)
	if code, _, b, err := diskCall("PUT", base+"/api/v1/recipients/agent-1", `{"status":"running"}`); err != nil || code != http.StatusOK {
		t.Fatalf("recipient: %d %v %s", code, err, b)
	}
	l := &ledger{ids: map[string]bool{}}

	for cycle := range 3 {
		// Timers due in two seconds, registered before the disk fills:
		// the host's own writes (their settlements and mail) have room
		// after clients' are refused.
		var soon []string
		for range 3 {
			code, _, b, err := diskCall("POST", base+"/api/v1/watches", timerBody(time.Now().Add(2*time.Second)))
			var w api.Watch
			if err != nil || code != http.StatusCreated || json.Unmarshal(b, &w) != nil {
				t.Fatalf("cycle %d: a timer before the fill: %d %v %s", cycle, code, err, b)
			}
			soon = append(soon, w.ID)
		}
		filler := fillTo(t, fs, 2<<20)
		took, refused := fillWithWriters(t, base, l, srv.logs)
		if took == 0 || refused == 0 {
			t.Fatalf("cycle %d: %d registrations taken and %d refused; want some of each", cycle, took, refused)
		}
		t.Logf("cycle %d: %d registrations taken, then %d refused 507; %d KiB free", cycle, took, refused, freeOn(t, fs)>>10)

		mustGet(t, base+"/healthz", nil)
		var ov api.Overview
		mustGet(t, base+"/api/v1/overview", &ov)
		if ov.Storage == nil || !ov.Storage.ReadOnly || ov.Storage.Dir != store || ov.Storage.FreeBytes >= ov.Storage.NeededBytes {
			t.Fatalf("cycle %d: the overview's storage with the disk full: %+v, want read-only at %s", cycle, ov.Storage, store)
		}
		code, _, metrics, err := diskCall("GET", base+"/metrics", "")
		if err != nil || code != 200 || !strings.Contains(string(metrics), "\nvigil_store_read_only 1\n") {
			t.Fatalf("cycle %d: /metrics with the disk full: %d %v, want vigil_store_read_only 1", cycle, code, err)
		}
		for _, id := range soon {
			deadline := time.Now().Add(15 * time.Second)
			for {
				var w api.Watch
				mustGet(t, base+"/api/v1/watches/"+id, &w)
				if w.State == "fired" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("cycle %d: timer %s due before the disk filled is %s 15 s later, with clients' writes refused; want fired", cycle, id, w.State)
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
		var mb api.Mailbox
		mustGet(t, base+"/api/v1/recipients/agent-1/mailbox?after=0", &mb)
		if len(mb.Messages) < 3*(cycle+1) {
			t.Fatalf("cycle %d: the mailbox holds %d messages with the disk full, want the %d timers'", cycle, len(mb.Messages), 3*(cycle+1))
		}

		// Space back: the filler removed, or (the second time) the tmpfs
		// grown under it.
		if cycle == 1 {
			if err := syscall.Mount("tmpfs", fs, "tmpfs", syscall.MS_REMOUNT, fmt.Sprintf("size=%d", 80<<20)); err != nil {
				t.Fatalf("growing the tmpfs: %v", err)
			}
			t.Cleanup(func() { _ = os.Remove(filler) })
		} else if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		t.Logf("cycle %d: a registration taken %s after space was freed", cycle, untilTaken(t, base, l, 10*time.Second).Round(time.Millisecond))
		checkLedger(t, base, l)
	}
	if strings.Contains(srv.logs.String(), "SIGBUS") {
		t.Fatalf("a SIGBUS in the log:\n%s", srv.logs)
	}

	// A restart on a disk still too full for clients' writes, but with
	// the room opening the store writes: it starts, refusing writes, and
	// says so once.
	if err := srv.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("stopping: %v\n%s", err, srv.logs)
	}
	filler := fillTo(t, fs, 1<<20)
	srv = startServer(t, bin, addr, data)
	if code, _, b, err := diskCall("POST", base+"/api/v1/watches", timerBody(time.Now().Add(time.Hour))); err != nil || code != http.StatusInsufficientStorage {
		t.Fatalf("a registration after a start on a full disk: %d %v %s, want 507", code, err, b)
	}
	checkLedger(t, base, l)
	if n := strings.Count(srv.logs.String(), "writes from clients are refused"); n != 1 {
		t.Fatalf("the log of a start on a full disk says %d times that writes are refused, want once:\n%s", n, srv.logs)
	}
	if err := srv.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("stopping: %v\n%s", err, srv.logs)
	}

	// A disk too full to open the store on: the start is refused, naming
	// the directory and its free space, and is no SIGBUS.
	tight := fillTo(t, fs, 128<<10)
	cmd := exec.Command(bin, "serve", "--listen", addr, "--data", data)
	logs := &syncbuf.Buffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != ExitFailed || strings.Contains(logs.String(), "SIGBUS") || strings.Contains(logs.String(), "fatal error") ||
			!strings.Contains(logs.String(), "storage full: "+store+" has ") || !strings.Contains(logs.String(), "opening the store needs") {
			t.Fatalf("a start on a disk too full to open the store: %v, want exit %d naming %s and its free space; its log:\n%s", err, ExitFailed, store, logs)
		}
		t.Logf("refused start: %s", strings.TrimSpace(logs.String()))
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("a start on a disk too full to open the store still runs after a minute; its log:\n%s", logs)
	}

	// Freed: it starts, takes writes, and has everything it acknowledged.
	for _, f := range []string{filler, tight} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	srv = startServer(t, bin, addr, data)
	untilTaken(t, base, l, 5*time.Second)
	checkLedger(t, base, l)
	t.Logf("%d registrations acknowledged, every one listed", len(l.ids))
	if strings.Contains(srv.logs.String(), "SIGBUS") {
		t.Fatalf("a SIGBUS in the log:\n%s", srv.logs)
	}
}
