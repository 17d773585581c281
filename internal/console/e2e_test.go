package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/servetest"
	"github.com/vigilhq/vigil/internal/syncbuf"
	"github.com/vigilhq/vigil/internal/wasmbuild"
)

// requireTools skips, saying why, unless VIGIL_REQUIRE_TOOLS=1, under
// which it fails: CI runs the browser test required, go test ./... on a
// machine with Go alone skips it.
func requireTools(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("VIGIL_REQUIRE_TOOLS") == "1" {
		t.Fatal(why + " (VIGIL_REQUIRE_TOOLS=1)")
	}
	t.Skip(why)
}

// chromium is the browser the test drives: VIGIL_CHROMIUM, else
// Debian's.
func chromium() string {
	if p := os.Getenv("VIGIL_CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// serve runs `vigil serve` on a free loopback address with the tests'
// shared plugin cache and returns its base URL once it answers; the test's
// end kills it.
func serve(t *testing.T, bin string, args ...string) string {
	t.Helper()
	addr, err := servetest.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"serve", "--listen", addr, "--data", t.TempDir(), "--plugin-cache", wasmbuild.CacheDir(), "--fsync=false"}, args...)...)
	logs := &syncbuf.Buffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	base := "http://" + addr
	if _, err := servetest.WaitHealthy(base, exited, servetest.ReadyBound); err != nil {
		t.Fatalf("%v; its log:\n%s", err, logs)
	}
	return base
}

// client calls the API of one host with one token.
type client struct {
	t     *testing.T
	base  string
	token string
}

func (c client) do(method, path string, body any) (int, []byte) {
	c.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+"/api/v1"+path, r)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (c client) must(want int, method, path string, body any) []byte {
	c.t.Helper()
	code, b := c.do(method, path, body)
	if code != want {
		c.t.Fatalf("%s %s: %d, want %d: %s", method, path, code, want, b)
	}
	return b
}

func (c client) timer(recipient string, at time.Time) string {
	c.t.Helper()
	var w struct{ ID string }
	_ = json.Unmarshal(c.must(201, "POST", "/watches", map[string]any{"kind": "timer", "params": map[string]any{"at": at.UTC().Format(time.RFC3339)}, "recipient": map[string]any{"id": recipient}}), &w)
	return w.ID
}

// TestConsoleInABrowser drives the console in headless Chromium through
// playwright-core (e2e/console.test.mjs) against two real vigil serve
// processes: one without tokens, one with. With
// VIGIL_CONSOLE_SCREENSHOTS=dir it writes screenshots there (never in
// CI: CI sets no such variable); with VIGIL_CONSOLE_BENCH=1 it seeds a
// recipient with 10,000 pending watches and 10,000 messages and measures
// its page.
func TestConsoleInABrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("builds vigil and runs a browser")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		requireTools(t, "node is not installed: the browser test needs Node and Chromium")
	}
	if _, err := os.Stat(chromium()); err != nil {
		requireTools(t, chromium()+" is absent: install Debian's chromium (apt-get install chromium)")
	}
	if _, err := os.Stat("e2e/node_modules/playwright-core"); err != nil {
		requireTools(t, "e2e/node_modules/playwright-core is absent: run npm ci in internal/console/e2e")
	}
	bin, err := servetest.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	const good, agent = "a-token-for-the-console-test-0001", "a-token-of-an-agent-of-the-test-01"
	cfg := filepath.Join(t.TempDir(), "vigil.yaml")
	if err := os.WriteFile(cfg, []byte("tokens:\n  - principal: ops\n    token: "+good+"\n    roles: [admin]\n  - principal: agent-9\n    token: "+agent+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	open, locked := serve(t, bin), serve(t, bin, "--config", cfg)

	api := client{t: t, base: open}
	for _, id := range []string{"agent-1", "agent-2"} {
		api.must(200, "PUT", "/recipients/"+id, map[string]any{"status": "running"})
	}
	hour := time.Now().Add(time.Hour)
	cancel := api.timer("agent-1", hour)
	api.timer("agent-1", time.Now().Add(-time.Second)) // fires at once: agent-1's mailbox is not empty
	for range 2 {
		api.timer("agent-2", hour)
	}
	// 600 messages: more than the 500 the recipient page keeps, so its
	// oldest page is read from the API.
	seedBulk(t, api, "window", 600, 0)
	seed := map[string]any{"cancel": cancel, "agent2Pending": 2, "window": "window"}

	env := append(os.Environ(), "VIGIL_OPEN="+open, "VIGIL_LOCKED="+locked, "VIGIL_TOKEN="+good, "VIGIL_AGENT_TOKEN="+agent, "VIGIL_CHROMIUM="+chromium())
	if dir := os.Getenv("VIGIL_CONSOLE_SCREENSHOTS"); dir != "" {
		if os.Getenv("CI") != "" {
			t.Fatal("VIGIL_CONSOLE_SCREENSHOTS is set in CI, which must never rewrite a tracked file")
		}
		abs, err := screenshotDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(abs, 0o755); err != nil {
			t.Fatal(err)
		}
		env = append(env, "VIGIL_CONSOLE_SCREENSHOTS="+abs)
	}
	if os.Getenv("VIGIL_CONSOLE_BENCH") == "1" {
		seedBulk(t, api, "bulk", 10_000, 10_000)
		env = append(env, "VIGIL_CONSOLE_BENCH=bulk")
	}
	b, _ := json.Marshal(seed)
	env = append(env, "VIGIL_SEED="+string(b))

	ctx, stop := context.WithTimeout(context.Background(), 5*time.Minute)
	defer stop()
	cmd := exec.CommandContext(ctx, node, "console.test.mjs")
	cmd.Dir = "e2e"
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the browser test failed: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		t.Log(line)
	}
}

// screenshotDir is where VIGIL_CONSOLE_SCREENSHOTS puts the pictures: an
// absolute directory as given, a relative one from the repository's root (the
// test runs in internal/console).
func screenshotDir(dir string) (string, error) {
	if filepath.IsAbs(dir) {
		return filepath.Clean(dir), nil
	}
	return filepath.Abs(filepath.Join("..", "..", dir))
}

// seedBulk gives recipient fired timers (as many messages) and pending
// ones that fire in a day, registered in parallel.
func seedBulk(t *testing.T, api client, recipient string, fired, pending int) {
	t.Helper()
	api.must(200, "PUT", "/recipients/"+recipient, map[string]any{"status": "running"})
	start := time.Now()
	past, future := time.Now().Add(-time.Minute), time.Now().Add(24*time.Hour)
	var wg sync.WaitGroup
	jobs := make(chan time.Time)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for at := range jobs {
				api.timer(recipient, at)
			}
		}()
	}
	for i := range max(fired, pending) {
		if i < fired {
			jobs <- past
		}
		if i < pending {
			jobs <- future
		}
	}
	close(jobs)
	wg.Wait()
	// Wait until the fired ones are all in the mailbox.
	for {
		var mb struct {
			Messages []json.RawMessage
			Next     uint64
		}
		_ = json.Unmarshal(api.must(200, "GET", fmt.Sprintf("/recipients/%s/mailbox?after=%d&limit=1", recipient, fired-1), nil), &mb)
		if len(mb.Messages) == 1 {
			break
		}
		if time.Since(start) > 3*time.Minute {
			t.Fatal("the bulk recipient's timers did not all fire")
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("seeded %s with %d pending watches and %d messages in %v", recipient, pending, fired, time.Since(start).Round(time.Millisecond))
}

func TestScreenshotDir(t *testing.T) {
	abs := filepath.Join(t.TempDir(), "shots")
	if got, err := screenshotDir(abs); err != nil || got != abs {
		t.Errorf("screenshotDir(%q) = %q, %v; want the path as given", abs, got, err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(root, "docs", "console")
	if got, err := screenshotDir("docs/console"); err != nil || got != want {
		t.Errorf("screenshotDir(docs/console) = %q, %v; want %q (from the repository's root)", got, err, want)
	}
}

// TestStreamParser runs the properties of the console's stream parser
// (e2e/sse.test.mjs) under Node: random event streams in random chunks.
func TestStreamParser(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		requireTools(t, "node is not installed: the stream parser's properties run under Node")
	}
	cmd := exec.Command(node, "--test", "sse.test.mjs")
	cmd.Dir = "e2e"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}
