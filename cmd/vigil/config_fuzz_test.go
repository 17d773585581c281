package main

import (
	"bytes"
	"cmp"
	"errors"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/store"
)

// loadFile resolves serve's settings from the config file at path and
// env as the environment ("NAME=value" lines), as serve does.
func loadFile(t *testing.T, path string, env string) (settings, error) {
	t.Helper()
	vars := map[string]string{}
	for _, line := range strings.Split(env, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			vars[k] = v
		}
	}
	cmd := newServe(io.Discard)
	if err := cmd.Flags().Parse([]string{"--config", path}); err != nil {
		t.Fatal(err)
	}
	return loadSettings(cmd.Flags(), func(k string) string { return vars[k] })
}

// leaves is every error an errors.Join tree holds at its leaves.
func leaves(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leaves(e)...)
		}
		return out
	}
	return []error{err}
}

// FuzzLoadSettings: a config file (and the VIGIL_* environment over it)
// either loads into settings within every documented bound, which written
// back as a config file load as the same settings, or is refused with
// *configErrors only, each naming a key and where its value came from.
func FuzzLoadSettings(f *testing.F) {
	for _, s := range []struct{ file, env string }{
		{"", ""},
		{"listen: 127.0.0.1:7878\ndata: ./d\nworkers: 2\nfsync: true\nwebhook_allow: [127.0.0.0/8, ' ::1/128']\n", ""},
		{"tokens:\n  - principal: ci-bot\n    token: 0123456789abcdef\nlisten: 0.0.0.0:7878\n", ""},
		{"fetch:\n  max_timeout: 120s\n  max_fetch_time: 120s\n  min_interval: 1s\n  max_body_bytes: 1048576\n  user_agent: vigil\n", "VIGIL_WORKERS=3"},
		{"secrets:\n  github: env:GITHUB_TOKEN\nobserve: {rate: 100, burst: 200}\n", "VIGIL_FSYNC=false\nVIGIL_WEBHOOK_ALLOW=10.0.0.0/8,::1/128"},
		{"scopes:\n  support:\n    observe:\n      - sources:\n          - name: slack-help\n            reporters: [ci-bot]\n    routes:\n      - source: slack-help\n", ""},
		{"observe: {rate: .nan}\n", ""},
		{"observe: {rate: -1, burst: 0}\nrecipient_max_refs: 5\nrecipient_max_pending: 50\n", "VIGIL_RECIPIENT_MAX_PENDING=60"},
		{"workers: 0\n", ""}, {"wokers: 2\n", ""}, {"workers: many\n", ""}, {"- a\n", ""}, {"a: &x [*x]\n", ""},
		{"fetch: {max_timeout: 1h}\n", ""}, {"", "VIGIL_WORKERS=many"}, {"", "VIGIL_LISTEN=0.0.0.0:1"}, {"data: ''\n", ""},
		{"tokens: [{principal: a, token: 0123456789abcdef}, {principal: b, token: 0123456789abcdef}]\n", ""},
		{"\t", ""}, {"{", ""}, {"--- \n...\n---\nworkers: 3\n", ""},
	} {
		f.Add([]byte(s.file), s.env)
	}
	dir := f.TempDir()
	path, again := filepath.Join(dir, "vigil.yaml"), filepath.Join(dir, "again.yaml")
	f.Fuzz(func(t *testing.T, file []byte, env string) {
		if err := os.WriteFile(path, file, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := loadFile(t, path, env)
		if err != nil {
			for _, e := range leaves(err) {
				var ce *configError
				if !errors.As(e, &ce) || ce.Key == "" || ce.Source == "" {
					t.Fatalf("%q: %T %v: want a *configError naming a key and its source", file, e, e)
				}
			}
			return
		}
		checkBounds(t, s)
		b, err := yaml.Marshal(s)
		if err != nil {
			t.Fatalf("%+v does not encode: %v", s, err)
		}
		if err := os.WriteFile(again, b, 0o600); err != nil {
			t.Fatal(err)
		}
		back, err := loadFile(t, again, "")
		if err != nil {
			t.Fatalf("%q loaded, and written back as\n%s\nis refused: %v", file, b, err)
		}
		if b2, _ := yaml.Marshal(back); !bytes.Equal(b, b2) {
			t.Fatalf("%q loaded as\n%s\nwhich loads as\n%s", file, b, b2)
		}
	})
}

// checkBounds fails unless s is within the bounds serve's --help and the
// README give, read independently of validate.
func checkBounds(t *testing.T, s settings) {
	t.Helper()
	ok := s.Data != "" && s.Workers >= 1 && s.Workers <= scheduler.MaxWorkers &&
		s.MaxRefs >= 0 && s.MaxRefs <= maxRefsBound && s.MaxPending >= 0 && s.MaxPending <= maxPendingBound &&
		s.Fetch.MaxTimeout >= 0 && s.Fetch.MinInterval >= 0 && s.Fetch.MaxBodyBytes >= 0 &&
		s.Fetch.MaxFetchTime >= 0 && s.Fetch.MaxFetchTime <= 30*time.Minute &&
		(s.Fetch.MaxFetchTime == 0 || s.Fetch.MaxFetchTime >= cmp.Or(s.Fetch.MaxTimeout, 120*time.Second)) &&
		(s.Observe.Rate >= 0 || s.Observe.Rate == -1) && s.Observe.Burst >= 0 && s.Observe.Burst <= 1_000_000
	for _, c := range s.WebhookAllow {
		if _, err := netip.ParsePrefix(strings.TrimSpace(c)); err != nil {
			ok = false
		}
	}
	seen := map[string]bool{}
	for _, tk := range s.Tokens {
		if !store.ValidRecipientID(tk.Principal) || len(tk.Token) < 16 || seen[tk.Token] {
			ok = false
		}
		seen[tk.Token] = true
	}
	if !ok {
		t.Fatalf("loaded settings out of bounds: %+v", s)
	}
}
