package httpapi

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/hooks"
	"github.com/vigilhq/vigil/internal/syncbuf"
	"github.com/vigilhq/vigil/sdk/abi"
)

const hookSecret = "a-github-hook-secret"

// noWake is a hooks.Waker and Poker for routes whose receiver is not run.
type noWake struct{}

func (noWake) Wake(context.Context, string, abi.WakeRequest) ([]string, error) { return nil, nil }
func (noWake) PokeKeys(context.Context, string, []string) (int, error)         { return 0, nil }

func newHookAPI(t testing.TB, queue int) (*fuzzAPI, *recordedRefusals, *syncbuf.Buffer) {
	t.Helper()
	r := hooks.NewReceiver(hooks.ReceiverConfig{
		Sources: hooks.NewSources(hooks.Config{"github": {Kind: "ci", Scheme: abi.SourceGitHub, Secret: hookSecret}}),
		Wake:    noWake{}, Poke: noWake{}, Clock: fakeclock.At(t0), Queue: queue,
	})
	refusals, logs := &recordedRefusals{}, &syncbuf.Buffer{}
	app := New(Deps{Hooks: r, Refusals: refusals, Logger: slog.New(slog.NewTextHandler(logs, nil))}, Options{})
	return &fuzzAPI{app: app, h: app.Handler()}, refusals, logs
}

func TestHookRoute(t *testing.T) {
	body := []byte(`{"action":"completed","check_suite":{"head_sha":"0123456789abcdef0123456789abcdef01234567"}}`)
	sig := hooks.SignGitHub(hookSecret, body)
	big := append(append([]byte(`{"x":"`), bytes.Repeat([]byte("a"), hooks.MaxBody)...), `"}`...)
	tests := []struct {
		name   string
		path   string
		header []string
		body   []byte
		status int
		code   string
	}{
		{"signed", "/api/v1/hooks/github", []string{"X-Hub-Signature-256", sig, "X-GitHub-Event", "check_suite"}, body, 202, ""},
		{"forged", "/api/v1/hooks/github", []string{"X-Hub-Signature-256", hooks.SignGitHub("another-secret-of-16", body)}, body, 401, api.CodeUnauthorized},
		{"unsigned", "/api/v1/hooks/github", nil, body, 401, api.CodeUnauthorized},
		{"unknown source", "/api/v1/hooks/gitlab", []string{"X-Hub-Signature-256", sig}, body, 401, api.CodeUnauthorized},
		{"too large", "/api/v1/hooks/github", []string{"X-Hub-Signature-256", hooks.SignGitHub(hookSecret, big)}, big, 413, api.CodeBodyTooLarge},
		{"not json", "/api/v1/hooks/github", []string{"X-Hub-Signature-256", hooks.SignGitHub(hookSecret, []byte("a=b"))}, []byte("a=b"), 400, api.CodeMalformedJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, refusals, logs := newHookAPI(t, 4)
			status, b := a.do("POST", tt.path, tt.header, tt.body)
			if status != tt.status {
				t.Fatalf("%d %s, want %d", status, b, tt.status)
			}
			if tt.code != "" {
				checkRefusal(t, tt.name, status, b)
				if !strings.Contains(string(b), `"`+tt.code+`"`) {
					t.Fatalf("%s, want code %s", b, tt.code)
				}
			}
			if got := refusals.all(); (status == 401) != (len(got) == 1) {
				t.Fatalf("refusals counted %v", got)
			}
			if strings.Contains(logs.String(), "head_sha") || strings.Contains(logs.String(), sig) {
				t.Fatalf("the log holds the body or the signature: %s", logs.String())
			}
		})
	}
}

// TestHookQueueFull: past the queue's bound a hook is 503 hook_busy with
// Retry-After, and nothing is taken.
func TestHookQueueFull(t *testing.T) {
	a, _, _ := newHookAPI(t, 1)
	body := []byte(`{}`)
	h := []string{"X-Hub-Signature-256", hooks.SignGitHub(hookSecret, body)}
	if status, b := a.do("POST", "/api/v1/hooks/github", h, body); status != 202 {
		t.Fatalf("%d %s", status, b)
	}
	status, b := a.do("POST", "/api/v1/hooks/github", h, body)
	if status != 503 || !strings.Contains(string(b), api.CodeHookBusy) {
		t.Fatalf("%d %s, want 503 hook_busy", status, b)
	}
}

// FuzzHook: any source, headers and body answer 202 (signed), or an
// error envelope whose code has the status; never a 500.
func FuzzHook(f *testing.F) {
	body := []byte(`{"action":"completed"}`)
	f.Add("github", "X-Hub-Signature-256", hooks.SignGitHub(hookSecret, body), "X-GitHub-Event", "check_suite", body)
	f.Add("github", "X-Hub-Signature-256", "sha256=00", "X-GitHub-Event", "\x00", []byte("not json"))
	f.Add("..", "webhook-signature", "v1,AAAA", "webhook-id", "msg_1", []byte(`{"type":"x"}`))
	f.Add("github", "X-Hub-Signature-256", hooks.SignGitHub(hookSecret, []byte("[")), "X-GitHub-Event", strings.Repeat("e", 200), []byte("["))
	// The recorded forge events, as the forges sent them.
	for _, name := range []string{"github-check_suite-completed.json", "github-workflow_run-completed.json", "gitea-status-success.json"} {
		if b, err := os.ReadFile(filepath.Join("..", "..", "plugins", "ci", "testdata", "events", name)); err == nil {
			f.Add("github", "X-Hub-Signature-256", hooks.SignGitHub(hookSecret, b), "X-GitHub-Event", "check_suite", b)
		}
	}
	a, _, _ := newHookAPI(f, 4096)
	f.Fuzz(func(t *testing.T, source, h1, v1, h2, v2 string, body []byte) {
		status, b := a.do("POST", "/api/v1/hooks/"+source, []string{h1, v1, h2, v2}, body)
		switch {
		case status == 202:
			var ok api.HookAccepted
			if err := strictUnmarshal(b, &ok); err != nil {
				t.Fatalf("202 %s: %v", b, err)
			}
			if v1 != hooks.SignGitHub(hookSecret, body) && v2 != hooks.SignGitHub(hookSecret, body) {
				t.Fatalf("took an unsigned hook: %q %q", v1, v2)
			}
		case status == 503:
			if !strings.Contains(string(b), api.CodeHookBusy) {
				t.Fatalf("503 %s", b)
			}
		case status == 404 || status == 405:
			// a path fiber routes nowhere
		default:
			checkRefusal(t, "hook", status, b)
		}
	})
}
