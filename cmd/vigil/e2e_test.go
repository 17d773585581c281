package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/servetest"
	"github.com/vigilhq/vigil/internal/syncbuf"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/wasmbuild"
)

// built is the binary the end-to-end tests share, built by the first of
// them; TestMain removes it.
var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// buildVigil builds the binary once for the end-to-end tests.
func buildVigil(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "vigil-e2e-")
		if built.err != nil {
			return
		}
		built.bin, built.err = servetest.Build(built.dir)
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// TestMain points every vigil serve the tests start, in this process or as
// a child, at the compilation cache all of vigil's tests share, so only the
// first start on a machine compiles the plugins.
func TestMain(m *testing.M) {
	if os.Getenv("VIGIL_PLUGIN_CACHE") == "" {
		_ = os.Setenv("VIGIL_PLUGIN_CACHE", wasmbuild.CacheDir())
	}
	code := m.Run()
	testPlugins.Cleanup()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

func freePort(t *testing.T) string {
	t.Helper()
	addr, err := servetest.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// server is one vigil serve process. Its one Wait runs in the background;
// exited closes when it returns, with the result in err.
type server struct {
	cmd    *exec.Cmd
	logs   *syncbuf.Buffer
	exited chan struct{}
	err    error
}

// stop signals the process and waits for it to exit.
func (s *server) stop(sig os.Signal) error {
	_ = s.cmd.Process.Signal(sig)
	<-s.exited
	return s.err
}

// startServer runs `vigil serve` on addr with data and any more args, and
// returns once it answers /healthz; the test's end kills it.
func startServer(t *testing.T, bin, addr, data string, args ...string) *server {
	t.Helper()
	return launch(t, exec.Command(bin, append([]string{"serve", "--listen", addr, "--data", data}, args...)...), "http://"+addr)
}

// launch starts cmd, a vigil serve, and returns once it answers /healthz
// at base; the test's end kills it.
func launch(t *testing.T, cmd *exec.Cmd, base string) *server {
	t.Helper()
	s := &server{cmd: cmd, logs: &syncbuf.Buffer{}, exited: make(chan struct{})}
	s.cmd.Stderr = s.logs
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.err = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() { _ = s.stop(os.Kill) })
	waitHealthy(t, s, base)
	return s
}

func postJSON(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func readMailbox(t *testing.T, base string, after uint64, wait string) api.Mailbox {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("%s/api/v1/recipients/agent-1/mailbox?after=%d&wait=%s", base, after, wait))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var mb api.Mailbox
	if err := json.NewDecoder(resp.Body).Decode(&mb); err != nil || resp.StatusCode != 200 {
		t.Fatalf("mailbox: %d %v", resp.StatusCode, err)
	}
	return mb
}

// Register a timer through HTTP, kill -9 the server right after the 201,
// restart it, and be woken exactly once.
func TestEndToEndSurvivesAKillMidWait(t *testing.T) {
	bin := buildVigil(t)
	addr, data := freePort(t), t.TempDir()
	base := "http://" + addr
	srv := startServer(t, bin, addr, data)

	at := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
	status, body := postJSON(t, base+"/api/v1/watches",
		`{"kind":"timer","params":{"at":"`+at+`"},"recipient":{"id":"agent-1"},"every":"1s"}`)
	if status != 201 {
		t.Fatalf("register: %d %s", status, body)
	}
	var w api.Watch
	_ = json.Unmarshal(body, &w)

	// The 201 means the row is durable: a kill -9 now must not lose it.
	_ = srv.stop(syscall.SIGKILL)
	srv = startServer(t, bin, addr, data)

	mb := readMailbox(t, base, 0, "30s")
	if len(mb.Messages) != 1 || mb.Messages[0].WatchID != w.ID || mb.Messages[0].Type != "fired" {
		t.Fatalf("after the restart: %+v\n%s", mb, srv.logs)
	}
	// Exactly one: nothing more arrives, and a graceful restart sends
	// nothing again.
	if err := srv.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("graceful stop: %v\n%s", err, srv.logs)
	}
	srv = startServer(t, bin, addr, data)
	if mb := readMailbox(t, base, 0, "2s"); len(mb.Messages) != 1 {
		t.Fatalf("messages after a second restart: %+v", mb)
	}
	resp, err := http.Get(base + "/api/v1/watches/" + w.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got api.Watch
	_ = json.NewDecoder(resp.Body).Decode(&got)
	if got.State != "fired" || got.Receipt != "delivered" {
		t.Fatalf("watch: %+v", got)
	}
}

// The README's "Try it" commands run exactly as written against a server
// started the README's way.
func TestReadmeQuickStart(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed; the README's commands use it")
	}
	if ln, err := net.Listen("tcp", "127.0.0.1:7878"); err != nil {
		t.Skipf("port 7878, which the README uses, is taken: %v", err)
	} else {
		_ = ln.Close()
	}
	bin := buildVigil(t)
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	script := fencedBlockAfter(t, string(readme), "## Try it", "sh")
	dir := t.TempDir()
	// The README's command, in a fresh directory; the environment points
	// it at the tests' shared compilation cache (TestMain).
	cmd := exec.Command(bin, "serve")
	cmd.Dir = dir
	launch(t, cmd, "http://localhost:7878")
	out, err := exec.Command("bash", "-euo", "pipefail", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("README commands failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `"type":"fired"`) {
		t.Fatalf("README commands did not end with the fired message:\n%s", out)
	}
}

// docs/observe.md's recipe runs as written (with curl and with the built
// vigil on PATH) against a server configured with the doc's YAML: the
// run is answered on the event, the repeat is a duplicate and the thread
// gets one Work with both items.
func TestObserveRecipe(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed; the recipe uses it")
	}
	bin := buildVigil(t)
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "observe.md"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "vigil.yaml")
	if err := os.WriteFile(cfg, []byte(fencedBlockAfter(t, string(doc), "## Configure", "yaml")), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	s := startServer(t, bin, addr, filepath.Join(dir, "data"), "--config", cfg)
	base := "http://" + addr

	script := fencedBlockAfter(t, string(doc), "## Record from a script", "sh")
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Env = append(os.Environ(), "VIGIL_SERVER="+base, "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("recipe failed: %v\n%s\n%s", err, out, s.logs)
	}
	if !strings.Contains(string(out), `"duplicate":false`) || !strings.Contains(string(out), `"run":"help-reader@`) ||
		!strings.Contains(string(out), "recorded\t") || !strings.Contains(string(out), "duplicate\t") {
		t.Fatalf("recipe output:\n%s", out)
	}
	// The router runs beside the API: give it a bounded moment.
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(base + "/api/v1/scopes/support/work")
		if err != nil {
			t.Fatal(err)
		}
		var wl api.WorkList
		_ = json.NewDecoder(resp.Body).Decode(&wl)
		resp.Body.Close()
		if len(wl.Work) == 1 && wl.Work[0].InputCount == 2 && wl.Work[0].Title == "printer on fire" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("work after the recipe: %+v\n%s", wl, s.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitHealthy returns once the server at base answers /healthz; the
// process exiting first, or servetest.ReadyBound passing, fails the test,
// saying what it waited for and what the server logged.
func waitHealthy(t *testing.T, s *server, base string) {
	t.Helper()
	_, err := servetest.WaitHealthy(base, s.exited, servetest.ReadyBound)
	if errors.Is(err, servetest.ErrExited) {
		t.Fatalf("%v (%s): %v\n%s", err, base, s.err, s.logs)
	}
	if err != nil {
		t.Fatalf("%v; its log:\n%s", err, s.logs)
	}
}

// fencedBlockAfter returns the first ```lang block after heading.
func fencedBlockAfter(t *testing.T, doc, heading, lang string) string {
	t.Helper()
	i := strings.Index(doc, heading)
	if i < 0 {
		t.Fatalf("no %q", heading)
	}
	rest := doc[i:]
	start := strings.Index(rest, "```"+lang+"\n")
	if start < 0 {
		t.Fatalf("no %s block after %q", lang, heading)
	}
	rest = rest[start+len("```"+lang+"\n"):]
	end := strings.Index(rest, "\n```")
	if end < 0 {
		t.Fatalf("unterminated %s block after %q", lang, heading)
	}
	return rest[:end]
}

// SIGHUP puts a changed config file's scopes in force without a restart:
// a principal dropped from a source's reporters is refused afterwards.
func TestObserveScopesReloadOnSIGHUP(t *testing.T) {
	bin := buildVigil(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "vigil.yaml")
	write := func(reporter string) {
		y := "scopes:\n  support:\n    observe:\n      - sources:\n          - name: slack-help\n            reporters: [" + reporter + "]\n"
		if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("local")
	addr := freePort(t)
	s := startServer(t, bin, addr, filepath.Join(dir, "data"), "--config", cfg)
	base := "http://" + addr
	record := func(item string) int {
		code, _ := postJSON(t, base+"/api/v1/scopes/support/observe", `{"item":"`+item+`","thread":"T"}`)
		return code
	}
	if code := record("m1"); code != 201 {
		t.Fatalf("before the reload: %d\n%s", code, s.logs)
	}
	write("someone-else")
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for i := 2; record(fmt.Sprint("m", i)) != 403; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("the reload did not take\n%s", s.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Timers registered a few seconds ahead, then kill -9 at once and a
// restart on the same data: each fires within a second of its instant,
// or of the restarted server's readiness when that is later, and exactly
// once. A timer's cadence is a minute, so a restart that re-armed it
// anywhere in its interval would miss that by up to a minute; its
// durable next check (or, if the kill came before its first probe, its
// being overdue) arms it on time.
func TestEndToEndTimersFireOnTimeAfterAKill(t *testing.T) {
	bin := buildVigil(t)
	addr, data := freePort(t), t.TempDir()
	base := "http://" + addr
	srv := startServer(t, bin, addr, data)

	const n = 5
	instants := map[string]time.Time{}
	start := time.Now()
	for i := range n {
		at := start.Add(time.Duration(1500+700*i) * time.Millisecond).UTC()
		status, body := postJSON(t, base+"/api/v1/watches",
			`{"kind":"timer","params":{"at":"`+at.Format(time.RFC3339Nano)+`"},"recipient":{"id":"agent-1"}}`)
		if status != 201 {
			t.Fatalf("register: %d %s", status, body)
		}
		var w api.Watch
		_ = json.Unmarshal(body, &w)
		instants[w.ID] = at
	}
	_ = srv.stop(syscall.SIGKILL)
	srv = startServer(t, bin, addr, data)
	ready := time.Now()

	got := map[string]api.Message{}
	var after uint64
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		mb := readMailbox(t, base, after, "5s")
		for _, m := range mb.Messages {
			if _, dup := got[m.WatchID]; dup {
				t.Fatalf("watch %s mailed twice: %+v\n%s", m.WatchID, mb, srv.logs)
			}
			got[m.WatchID] = m
		}
		after = mb.Next
	}
	if len(got) != n {
		t.Fatalf("%d of %d timers fired within 30 s of the restart\n%s", len(got), n, srv.logs)
	}
	for id, at := range instants {
		m, ok := got[id]
		if !ok || m.Type != "fired" {
			t.Fatalf("watch %s: %+v", id, m)
		}
		due := at
		if ready.After(due) {
			due = ready
		}
		if m.At.Before(at) || m.At.After(due.Add(time.Second)) {
			t.Errorf("timer %s due %s fired at %s: want within 1 s of %s (the restarted server was ready at %s)",
				id, at.Format(time.StampMilli), m.At.Format(time.StampMilli), due.Format(time.StampMilli), ready.Format(time.StampMilli))
		}
	}
	// Exactly once: nothing more arrives in the next two seconds.
	if mb := readMailbox(t, base, after, "2s"); len(mb.Messages) != 0 {
		t.Fatalf("more messages after every timer fired: %+v", mb)
	}
}

// SIGHUP puts changed tokens and grants in force: a removed token stops
// working and its open stream ends at once, a kept one goes on, and a
// config whose grant is invalid keeps the tokens in force, naming the key.
func TestTokensReloadOnSIGHUP(t *testing.T) {
	bin := buildVigil(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "vigil.yaml")
	const agent, ops = "token-of-agent-1-for-e2e", "token-of-the-operator-e2e"
	write := func(y string) {
		if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	both := "tokens:\n  - {principal: agent-1, token: " + agent + "}\n  - {principal: ops, token: " + ops + ", roles: [operator]}\n"
	write(both)
	addr := freePort(t)
	s := startServer(t, bin, addr, filepath.Join(dir, "data"), "--config", cfg)
	base := "http://" + addr
	client := &http.Client{Timeout: time.Minute} // a bound on a failure, not a wait
	call := func(method, path, token, body string) (*http.Response, error) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		return client.Do(req)
	}
	status := func(method, path, token, body string) int {
		resp, err := call(method, path, token, body)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := status("PUT", "/api/v1/recipients/agent-1", agent, `{"status":"running"}`); code != 200 {
		t.Fatalf("agent-1's own recipient: %d\n%s", code, s.logs)
	}
	if code := status("GET", "/api/v1/recipients/agent-1", ops, ""); code != 200 {
		t.Fatalf("the operator reads it: %d", code)
	}
	stream, err := call("GET", "/api/v1/recipients/agent-1/mailbox/stream", agent, "")
	if err != nil || stream.StatusCode != 200 {
		t.Fatalf("stream: %v", err)
	}
	defer stream.Body.Close()
	first, err := bufio.NewReader(stream.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(first, ":") {
		t.Fatalf("the stream's first line %q: %v", first, err)
	}

	write("tokens:\n  - {principal: ops, token: " + ops + ", roles: [operator]}\n")
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, stream.Body); err != nil {
		t.Fatalf("the revoked token's stream did not end: %v\n%s", err, s.logs)
	}
	if code := status("GET", "/api/v1/plugins", agent, ""); code != 401 {
		t.Fatalf("the removed token after the reload: %d", code)
	}
	if code := status("GET", "/api/v1/recipients/agent-1", ops, ""); code != 200 {
		t.Fatalf("the kept token after the reload: %d", code)
	}

	write("tokens:\n  - {principal: ops, token: " + ops + ", roles: [boss]}\n")
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(s.logs.String(), "tokens[0].roles[0]") {
		if time.Now().After(deadline) {
			t.Fatalf("the invalid grant was not named\n%s", s.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code := status("GET", "/api/v1/recipients/agent-1", ops, ""); code != 200 {
		t.Fatalf("the tokens in force after an invalid reload: %d", code)
	}
}
