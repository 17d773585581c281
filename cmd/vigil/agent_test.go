package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/api/webhooks"
	"github.com/vigilhq/vigil/internal/authz"
	"github.com/vigilhq/vigil/internal/authztest"
	"github.com/vigilhq/vigil/internal/httpapi"
	"github.com/vigilhq/vigil/internal/syncbuf"
)

// tty is a buffer that says it is a terminal: the progress line is drawn
// on it, and a question asked on it is answered with answer.
type tty struct {
	syncbuf.Buffer
	answer *strings.Reader
}

func (*tty) Terminal() bool { return true }

func (t *tty) Read(p []byte) (int, error) {
	if t.answer == nil {
		return 0, io.EOF
	}
	return t.answer.Read(p)
}

type ran struct {
	out, errOut string
	err         error
}

// start runs vigil in the background against the fixture's server, with
// stderr (and stdin) on errw when it is set.
func (f *cliFixture) start(t *testing.T, ctx context.Context, errw *tty, args ...string) <-chan ran {
	t.Helper()
	done := make(chan ran, 1)
	go func() {
		var out syncbuf.Buffer
		var errOut io.Writer = &syncbuf.Buffer{}
		if errw != nil {
			errOut = errw
		}
		root := newRoot(&out, errOut)
		if errw != nil {
			root.SetIn(errw)
		}
		root.SetArgs(append(args, "--server", f.url))
		err := execute(ctx, root)
		s := ""
		if b, ok := errOut.(interface{ String() string }); ok {
			s = b.String()
		}
		done <- ran{out.String(), s, err}
	}()
	return done
}

func await(t *testing.T, done <-chan ran) ran {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("the command did not return")
		return ran{}
	}
}

// noticeBound is how soon a waiting command must return once the change
// that ends its wait (a cancel, a pause, a tick that settles or expires
// the watch) has been made: the promise is within a second, and the bound
// is 2 s so a loaded machine (two cores, many builds) does not fail it.
// A wait that only saw the change at the end of its long poll would take
// the poll's whole bound.
const noticeBound = 2 * time.Second

// awaitNoticed is await, and fails when the command took longer than
// noticeBound from acted, the moment the change's call returned.
func awaitNoticed(t *testing.T, done <-chan ran, acted time.Time) ran {
	t.Helper()
	select {
	case r := <-done:
		if took := time.Since(acted); took > noticeBound {
			t.Errorf("the command returned %s after the change, want within %s", took, noticeBound)
		}
		return r
	case <-time.After(noticeBound):
		t.Fatalf("the command had not returned %s after the change", noticeBound)
		return ran{}
	}
}

// watch wait re-attaches to a watch registered earlier and exits by how
// it ended: woken by the server when the scheduler, a cancel or a pause
// changes it, never at the end of a long poll (each case returns within
// noticeBound of the act).
func TestWatchWaitExitCodes(t *testing.T) {
	f := newCLIFixture(t, httpapi.Options{})
	ctx := context.Background()
	tests := []struct {
		name, kind, recipient string
		params                []string
		act                   func(t *testing.T, id string)
		code                  int
		want                  string
	}{
		{"fired", "ci", "r-ok", nil, func(*testing.T, string) { f.sched.Tick(ctx, f.now) }, ExitFired, "success"},
		{"failed", "ci", "r-fail", []string{"--param", "result=failed"}, func(*testing.T, string) { f.sched.Tick(ctx, f.now) }, ExitFailed, "failed"},
		{"expired", "slow", "r-exp", nil, func(*testing.T, string) { f.sched.Tick(ctx, f.now.Add(16*time.Minute)) }, ExitExpired, "expired"},
		{"cancelled", "slow", "r-cancel", nil, func(t *testing.T, id string) { f.mustVigil(t, "watch", "cancel", id) }, ExitNoOutcome, "cancelled"},
		{"paused", "slow", "r-pause", nil, func(t *testing.T, _ string) {
			f.mustVigil(t, "recipient", "set", "r-pause", "--status", "paused", "--yes")
		}, ExitNoOutcome, "cancelled"},
		{"unwatchable", "gone", "r-gone", nil, func(*testing.T, string) { f.sched.Tick(ctx, f.now) }, ExitNoOutcome, "unwatchable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := decodeJSON[api.Watch](t, f.mustVigil(t, append([]string{"watch", "add", tt.kind, "--for", tt.recipient, "--json"}, tt.params...)...))
			// The registration probe, for the kinds that would settle on it,
			// is the act itself.
			before := f.sched.Waiters()
			done := f.start(t, ctx, nil, "watch", "wait", w.ID)
			f.waitParked(t, before)
			tt.act(t, w.ID)
			r := awaitNoticed(t, done, time.Now())
			if got := exitCode(r.err); got != tt.code {
				t.Fatalf("exit %d (%v), want %d\nstdout:\n%s\nstderr:\n%s", got, r.err, tt.code, r.out, r.errOut)
			}
			if !strings.Contains(r.out, tt.want) || !strings.Contains(r.out, w.ID) {
				t.Fatalf("stdout:\n%s", r.out)
			}
			if r.errOut != "" {
				t.Fatalf("piped, the wait wrote to stderr:\n%q", r.errOut)
			}
		})
	}

	// The receipt printed is the final one.
	w := decodeJSON[api.Watch](t, f.mustVigil(t, "watch", "add", "ci", "--for", "r-json", "--json"))
	before := f.sched.Waiters()
	done := f.start(t, ctx, nil, "watch", "wait", w.ID, "--json")
	f.waitParked(t, before)
	f.sched.Tick(ctx, f.now)
	res := decodeJSON[waitResult](t, await(t, done).out)
	if res.Watch == nil || res.Watch.State != "fired" || res.Watch.Receipt != "delivered" {
		t.Fatalf("--json: %+v", res)
	}

	// --timeout ends the wait with the watch still pending.
	p := decodeJSON[api.Watch](t, f.mustVigil(t, "watch", "add", "slow", "--for", "r-slow", "--json"))
	out, errOut, err := f.vigil(t, "watch", "wait", p.ID, "--timeout", "20ms")
	if exitCode(err) != ExitStillPending || !strings.Contains(out, "pending") || !strings.Contains(errOut, "still pending") {
		t.Fatalf("--timeout: %v\n%s\n%s", err, out, errOut)
	}

	// Interrupted: the watch stays registered, and the command says how
	// to re-attach.
	ictx, interrupt := context.WithCancel(ctx)
	before = f.sched.Waiters()
	done = f.start(t, ictx, nil, "watch", "wait", p.ID)
	f.waitParked(t, before)
	interrupt()
	r := await(t, done)
	if exitCode(r.err) != ExitInterrupted || !strings.Contains(r.errOut, "vigil watch wait "+p.ID) {
		t.Fatalf("interrupted: %v\n%s", r.err, r.errOut)
	}
}

// add --wait follows the watch: a cancel is noticed when it happens,
// within noticeBound of the cancel's call returning.
func TestWatchAddWaitSeesACancel(t *testing.T) {
	f := newCLIFixture(t, httpapi.Options{})
	before := f.sched.Waiters()
	done := f.start(t, context.Background(), nil, "watch", "add", "slow", "--for", "agent-1", "--wait")
	f.waitParked(t, before)
	list := decodeJSON[api.WatchList](t, f.mustVigil(t, "watch", "ls", "--for", "agent-1", "--json"))
	if len(list.Watches) != 1 {
		t.Fatalf("%+v", list)
	}
	f.mustVigil(t, "watch", "cancel", list.Watches[0].ID)
	r := awaitNoticed(t, done, time.Now())
	if exitCode(r.err) != ExitNoOutcome || !strings.Contains(r.out, "cancelled") {
		t.Fatalf("exit %d: %v\n%s\n%s", exitCode(r.err), r.err, r.out, r.errOut)
	}
}

// On a terminal one line is redrawn in place with the state, the probes,
// the note and the time to the deadline.
func TestWatchWaitProgressOnATerminal(t *testing.T) {
	f := newCLIFixture(t, httpapi.Options{})
	ctx := context.Background()
	w := decodeJSON[api.Watch](t, f.mustVigil(t, "watch", "add", "slow", "--for", "agent-1", "--json", "--in", "10m"))
	term := &tty{}
	before := f.sched.Waiters()
	done := f.start(t, ctx, term, "watch", "wait", w.ID)
	f.waitParked(t, before)
	f.sched.Tick(ctx, f.now)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(term.String(), "1 probe ·"); {
		if time.Now().After(deadline) {
			t.Fatalf("the probe never showed:\n%q", term.String())
		}
		time.Sleep(time.Millisecond)
	}
	f.mustVigil(t, "watch", "cancel", w.ID)
	r := await(t, done)
	if exitCode(r.err) != ExitNoOutcome {
		t.Fatalf("%v", r.err)
	}
	got := term.String()
	for _, want := range []string{"\r\x1b[K", "watch " + w.ID + " pending · 0 probes", "1 probe", "to the deadline", "cancelled"} {
		if !strings.Contains(got, want) {
			t.Fatalf("the progress lacks %q:\n%q", want, got)
		}
	}
	if !strings.HasSuffix(got, "\n") {
		t.Fatalf("the progress line was not ended:\n%q", got)
	}
}

func TestProgressLine(t *testing.T) {
	exp := t0().Add(90 * time.Second)
	line := progressLine(api.Watch{ID: "w1", State: "pending", Attempts: 3, LastNote: "run 7 in progress", ExpiresAt: &exp,
		LastFault: &api.Fault{Reason: "timeout"}}, t0())
	if line != "watch w1 pending · 3 probes · run 7 in progress · fault timeout · 1m30s to the deadline" {
		t.Fatalf("%q", line)
	}
	if line := progressLine(api.Watch{ID: "w1", State: "fired", Attempts: 1, ExpiresAt: &exp}, t0()); line != "watch w1 fired · 1 probe" {
		t.Fatalf("%q", line)
	}
}

func t0() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) }

// Each way the host cannot be asked exits ExitHost; each way the command
// is wrong exits ExitUsage, naming what is wrong.
func TestExitCodesOfErrors(t *testing.T) {
	f := newCLIFixture(t, httpapi.Options{Auth: authztest.Guard(t, map[string]string{"s3cret-token-for-ci-bot": "ci-bot"}, authz.Admin)})
	t.Setenv("VIGIL_TOKEN", "s3cret-token-for-ci-bot")
	w := decodeJSON[api.Watch](t, f.mustVigil(t, "watch", "add", "slow", "--for", "agent-1", "--json"))
	broken := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(500)
		_, _ = rw.Write([]byte(`{"error":{"code":"internal","message":"internal error"}}`))
	}))
	defer broken.Close()
	full := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		rw.Header().Set("Retry-After", "10")
		rw.WriteHeader(507)
		_, _ = rw.Write([]byte(`{"error":{"code":"insufficient_storage","message":"the host's disk is too full to take this write; nothing was written, retry once space is freed"}}`))
	}))
	defer full.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	ctx := context.Background()
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unreachable", []string{"watch", "wait", w.ID, "--server", closed.URL}, ExitHost, "is vigil serve running"},
		{"token refused", []string{"watch", "wait", w.ID, "--server", f.url, "--token", "wrong"}, ExitHost, "unauthorized: "},
		{"5xx", []string{"watch", "wait", w.ID, "--server", broken.URL}, ExitHost, "internal: "},
		{"disk full", []string{"watch", "add", "slow", "--for", "agent-1", "--server", full.URL}, ExitHost, "insufficient_storage: "},
		{"unknown watch", []string{"watch", "wait", "01m8nhtng4ra8tgz0tmrscbt6g", "--server", f.url}, ExitUsage, "not_found: "},
		{"missing ID", []string{"watch", "wait", "--server", f.url}, ExitUsage, "missing ID: vigil watch wait ID"},
		{"extra argument", []string{"watch", "wait", w.ID, "more", "--server", f.url}, ExitUsage, `unexpected argument "more": vigil watch wait ID`},
		{"missing KIND", []string{"watch", "add", "--for", "a", "--server", f.url}, ExitUsage, "missing KIND: vigil watch add KIND"},
		{"unknown subcommand", []string{"watch", "lst", "--server", f.url}, ExitUsage, `unknown command "lst" for "vigil watch"; did you mean ls?`},
		{"unknown top command", []string{"wacth"}, ExitUsage, `unknown command "wacth"`},
		{"bad flag", []string{"watch", "ls", "--bogus", "--server", f.url}, ExitUsage, "bogus"},
		{"missing required flag", []string{"watch", "add", "slow", "--server", f.url}, ExitUsage, "for"},
		{"bad flag value", []string{"watch", "wait", w.ID, "--timeout", "soon", "--server", f.url}, ExitUsage, "timeout"},
		{"refused request", []string{"watch", "add", "ci", "--param", "bad=1", "--for", "a", "--server", f.url}, ExitUsage, "invalid_params: "},
		{"no argument for a leaf", []string{"plugin", "ls", "x", "--server", f.url}, ExitUsage, `unexpected argument "x": vigil plugin ls`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := run(t, ctx, tt.args...)
			if got := exitCode(err); got != tt.code || err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("exit %d (%v), want %d and %q", got, err, tt.code, tt.want)
			}
		})
	}
	// A group without a subcommand prints its help and succeeds.
	out, _, err := run(t, ctx, "watch")
	if err != nil || !strings.Contains(out, "wait") {
		t.Fatalf("vigil watch: %v\n%s", err, out)
	}
}

// The exit codes are documented where an agent looks.
func TestExitCodesInHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"watch", "wait", "--help"}, {"watch", "add", "--help"}} {
		out, _, err := run(t, context.Background(), args...)
		if err != nil || !strings.Contains(out, exitCodesHelp) {
			t.Errorf("vigil %v: %v\n%s", args, err, out)
		}
	}
	for _, doc := range []string{"../../README.md", "../../docs/agents.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(exitCodesHelp, "\n")[1:] {
			code := strings.Fields(line)[0]
			if _, err := json.Number(code).Int64(); err != nil {
				continue // a continuation line
			}
			if !strings.Contains(string(b), "| "+code+" |") {
				t.Errorf("%s does not document exit code %s", doc, code)
			}
		}
	}
}

// work claim's help names flags that exist.
func TestWorkClaimHelp(t *testing.T) {
	out, _, err := run(t, context.Background(), "work", "claim", "--help")
	if err != nil || strings.Contains(out, "--kind") || !strings.Contains(out, "vigil watch add observe.thread --for RECIPIENT --param work_id=ID") {
		t.Fatalf("%v\n%s", err, out)
	}
}

// mail read --cursor FILE starts after the seq in FILE and moves it after
// what it printed, so a reader stopped and started again misses nothing
// and repeats nothing.
func TestMailCursorFile(t *testing.T) {
	f := newCLIFixture(t, httpapi.Options{})
	ctx := context.Background()
	cursor := filepath.Join(t.TempDir(), "agent-1.cursor")
	f.mustVigil(t, "watch", "add", "ci", "--for", "agent-1")
	f.sched.Tick(ctx, f.now)

	// Without --follow: one batch, and the file holds its next.
	mb := decodeJSON[api.Mailbox](t, f.mustVigil(t, "mail", "read", "agent-1", "--cursor", cursor, "--json"))
	if len(mb.Messages) != 1 || readFile(t, cursor) != "1\n" {
		t.Fatalf("first read: %+v, cursor %q", mb, readFile(t, cursor))
	}
	if mb := decodeJSON[api.Mailbox](t, f.mustVigil(t, "mail", "read", "agent-1", "--cursor", cursor, "--json")); len(mb.Messages) != 0 {
		t.Fatalf("a read from the cursor repeated: %+v", mb)
	}

	// --follow: resumes after 1, and the file follows each message.
	second := decodeJSON[api.Watch](t, f.mustVigil(t, "watch", "add", "ci", "--for", "agent-1", "--json"))
	f.sched.Tick(ctx, f.now)
	fctx, stop := context.WithCancel(ctx)
	out := &signalWriter{want: second.ID, ready: make(chan struct{})}
	root := newRoot(out, io.Discard)
	root.SetArgs([]string{"mail", "read", "agent-1", "--follow", "--cursor", cursor, "--json", "--server", f.url})
	done := make(chan error, 1)
	go func() { done <- execute(fctx, root) }()
	<-out.ready
	for deadline := time.Now().Add(10 * time.Second); readFile(t, cursor) != "2\n"; {
		if time.Now().After(deadline) {
			t.Fatalf("the cursor file holds %q after seq 2 was printed", readFile(t, cursor))
		}
		time.Sleep(time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	out.mu.Lock()
	printed := out.buf.String()
	out.mu.Unlock()
	if lines := strings.Split(strings.TrimSpace(printed), "\n"); len(lines) != 1 || decodeJSON[api.Message](t, lines[0]).Seq != 2 {
		t.Fatalf("--follow from the cursor printed:\n%s", printed)
	}
	entries, _ := os.ReadDir(filepath.Dir(cursor))
	if len(entries) != 1 {
		t.Fatalf("temporary files left beside the cursor: %v", entries)
	}

	// A file that holds no seq is refused, naming it.
	if err := os.WriteFile(cursor, []byte("yesterday\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := f.vigil(t, "mail", "read", "agent-1", "--cursor", cursor)
	if exitCode(err) != ExitUsage || !strings.Contains(err.Error(), cursor) {
		t.Fatalf("bad cursor file: %v", err)
	}
	if _, _, err := f.vigil(t, "mail", "read", "agent-1", "--cursor", cursor, "--after", "1"); exitCode(err) != ExitUsage {
		t.Fatalf("--cursor with --after: %v", err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// --webhook without a secret makes one, in the format the webhooks doc
// gives, prints it once on stderr and registers it.
func TestRecipientSetMakesAWebhookSecret(t *testing.T) {
	f := newCLIFixture(t, httpapi.Options{})
	t.Setenv("VIGIL_WEBHOOK_SECRET", "")
	out, errOut, err := f.vigil(t, "recipient", "set", "agent-1", "--status", "running", "--webhook", "https://hooks.example.org/vigil")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	i := strings.Index(errOut, webhooks.SecretPrefix)
	if i < 0 || strings.Contains(out, webhooks.SecretPrefix) || strings.Count(errOut, webhooks.SecretPrefix) != 1 {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", out, errOut)
	}
	secret := strings.Fields(errOut[i:])[0]
	if key, err := webhooks.ParseSecret(secret); err != nil || len(key) != webhooks.SecretBytes {
		t.Fatalf("secret %q: %v", secret, err)
	}
	r := decodeJSON[api.Recipient](t, f.mustVigil(t, "recipient", "show", "agent-1", "--json"))
	if r.Webhook == nil || r.Webhook.URL != "https://hooks.example.org/vigil" {
		t.Fatalf("%+v", r)
	}
	// Two secrets made are two.
	_, errOut2, _ := f.vigil(t, "recipient", "set", "agent-2", "--status", "running", "--webhook", "https://hooks.example.org/2")
	if strings.Contains(errOut2, secret) {
		t.Fatal("the same secret twice")
	}
}

// A status other than running says how many pending watches it cancels
// before it does: it asks on a terminal, and without one refuses unless
// --yes. Not confirming exits ExitNotConfirmed, not ExitUsage: the command
// was right, the answer was no.
func TestRecipientPauseSaysWhatItCancels(t *testing.T) {
	f := newCLIFixture(t, httpapi.Options{})
	ctx := context.Background()
	for range 2 {
		f.mustVigil(t, "watch", "add", "slow", "--for", "agent-1")
	}
	pending := func() int {
		return len(decodeJSON[api.WatchList](t, f.mustVigil(t, "watch", "ls", "--for", "agent-1", "--state", "pending", "--json")).Watches)
	}
	_, _, err := f.vigil(t, "recipient", "set", "agent-1", "--status", "paused")
	if exitCode(err) != ExitNotConfirmed || !strings.Contains(err.Error(), "cancels its 2 pending watches") || !strings.Contains(err.Error(), "--yes") ||
		!strings.Contains(err.Error(), "no terminal") || pending() != 2 {
		t.Fatalf("without a terminal: %v (pending %d)", err, pending())
	}
	// On a terminal, "n" changes nothing and "y" pauses.
	no := &tty{answer: strings.NewReader("n\n")}
	r := await(t, f.start(t, ctx, no, "recipient", "set", "agent-1", "--status", "paused"))
	if exitCode(r.err) != ExitNotConfirmed || !strings.Contains(no.String(), "cancels its 2 pending watches") || !strings.Contains(no.String(), "[y/N]") || pending() != 2 {
		t.Fatalf("answered n: %v\n%s", r.err, no.String())
	}
	yes := &tty{answer: strings.NewReader("y\n")}
	r = await(t, f.start(t, ctx, yes, "recipient", "set", "agent-1", "--status", "paused", "--json"))
	if r.err != nil || pending() != 0 || decodeJSON[api.Recipient](t, r.out).Status != "paused" {
		t.Fatalf("answered y: %v\n%s", r.err, yes.String())
	}
	// With --yes, no question, and it still says what it cancels.
	f.mustVigil(t, "recipient", "set", "agent-2", "--status", "running")
	f.mustVigil(t, "watch", "add", "slow", "--for", "agent-2")
	_, errOut, err := f.vigil(t, "recipient", "set", "agent-2", "--status", "stopped", "--yes")
	if err != nil || !strings.Contains(errOut, "cancels its 1 pending watch for good") {
		t.Fatalf("--yes: %v\n%s", err, errOut)
	}
	// Nothing pending: nothing to ask.
	if _, _, err := f.vigil(t, "recipient", "set", "agent-3", "--status", "paused"); err != nil {
		t.Fatalf("a recipient with nothing pending: %v", err)
	}
}

// A watch that settled before its receipt was concluded is waited on a
// little longer, so the receipt printed is the final one.
func TestWatchWaitPrintsTheFinalReceipt(t *testing.T) {
	views := map[string]string{
		"":   `{"id":"w1","kind":"ci","params":{},"recipient":{"id":"a"},"state":"pending","receipt":"none","every":"30s","created_at":"2026-12-01T12:00:00Z","expires_at":null,"attempts":0,"version":"v1"}`,
		"v1": `{"id":"w1","kind":"ci","params":{},"recipient":{"id":"a"},"state":"fired","receipt":"unknown","every":"30s","created_at":"2026-12-01T12:00:00Z","expires_at":null,"attempts":1,"outcome":{"result":"success"},"version":"v2"}`,
		"v2": `{"id":"w1","kind":"ci","params":{},"recipient":{"id":"a"},"state":"fired","receipt":"delivered","every":"30s","created_at":"2026-12-01T12:00:00Z","expires_at":null,"attempts":1,"outcome":{"result":"success"},"version":"v3"}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		_, _ = rw.Write([]byte(views[r.URL.Query().Get("since")]))
	}))
	defer srv.Close()
	out, _, err := run(t, context.Background(), "watch", "wait", "w1", "--json", "--server", srv.URL)
	res := decodeJSON[waitResult](t, out)
	if err != nil || res.Watch.Receipt != "delivered" {
		t.Fatalf("%v: %+v", err, res.Watch)
	}
}
