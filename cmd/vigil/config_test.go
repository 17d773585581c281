package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/authz"
	"github.com/vigilhq/vigil/internal/hooks"
)

// settingsFor parses serve's flags from args and resolves the settings
// with env as the environment and file (when not empty) as the config.
func settingsFor(t *testing.T, args []string, env map[string]string, file string) (settings, error) {
	t.Helper()
	if file != "" {
		p := filepath.Join(t.TempDir(), "vigil.yaml")
		if err := os.WriteFile(p, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", p)
	}
	cmd := newServe(os.Stderr)
	if err := cmd.Flags().Parse(args); err != nil {
		t.Fatal(err)
	}
	return loadSettings(cmd.Flags(), func(k string) string { return env[k] })
}

func TestSettingsPrecedence(t *testing.T) {
	file := "workers: 2\ndata: /from/file\nplugins: /plugins/file\nfsync: false\n"
	env := map[string]string{"VIGIL_WORKERS": "3", "VIGIL_DATA": "/from/env"}

	s, err := settingsFor(t, nil, nil, "")
	if err != nil || s.Workers != 4 || s.Data != "./vigil-data" || s.Listen != "127.0.0.1:7878" || !s.Fsync {
		t.Fatalf("defaults: %+v %v", s, err)
	}
	s, err = settingsFor(t, nil, nil, file)
	if err != nil || s.Workers != 2 || s.Data != "/from/file" || s.Fsync {
		t.Fatalf("file over defaults: %+v %v", s, err)
	}
	s, err = settingsFor(t, nil, env, file)
	if err != nil || s.Workers != 3 || s.Data != "/from/env" || s.Plugins != "/plugins/file" {
		t.Fatalf("env over file: %+v %v", s, err)
	}
	s, err = settingsFor(t, []string{"--workers", "5", "--fsync=false"}, env, file)
	if err != nil || s.Workers != 5 || s.Data != "/from/env" || s.Fsync {
		t.Fatalf("flags over env: %+v %v", s, err)
	}
}

// fsync is on unless a flag, the environment or the file turns it off,
// with the usual precedence.
func TestFsyncIsOnByDefault(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		file string
		want bool
	}{
		{"default", nil, nil, "", true},
		{"file off", nil, nil, "fsync: false\n", false},
		{"env off", nil, map[string]string{"VIGIL_FSYNC": "false"}, "", false},
		{"flag off", []string{"--fsync=false"}, nil, "", false},
		{"env on over file off", nil, map[string]string{"VIGIL_FSYNC": "true"}, "fsync: false\n", true},
		{"flag on over env off", []string{"--fsync"}, map[string]string{"VIGIL_FSYNC": "false"}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := settingsFor(t, tt.args, tt.env, tt.file)
			if err != nil || s.Fsync != tt.want {
				t.Fatalf("fsync %v (err %v), want %v", s.Fsync, err, tt.want)
			}
		})
	}
}

func TestInvalidSettingsNameTheKey(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		file string
		key  string
		from string
	}{
		{"flag", []string{"--workers", "64"}, nil, "", "workers", "--workers"},
		{"env", nil, map[string]string{"VIGIL_WORKERS": "many"}, "", "workers", "VIGIL_WORKERS"},
		{"env bool", nil, map[string]string{"VIGIL_FSYNC": "sometimes"}, "", "fsync", "VIGIL_FSYNC"},
		{"file value", nil, nil, "workers: 0\n", "workers", "vigil.yaml"},
		{"file unknown key", nil, nil, "wokers: 2\n", "wokers", "vigil.yaml"},
		{"file empty key", nil, nil, "? \n", `""`, "vigil.yaml"},
		{"file sequence key", nil, nil, "? [a, b]\n: 1\n", "(a non-scalar key)", "vigil.yaml"},
		{"file bad cidr", nil, nil, "webhook_allow: [localhost]\n", "webhook_allow", "vigil.yaml"},
		{"short token", nil, nil, "tokens: [{principal: ci, token: short}]\n", "tokens", "vigil.yaml"},
		{"bad principal", nil, nil, "tokens: [{principal: 'a b', token: 0123456789abcdef}]\n", "tokens", "vigil.yaml"},
		{"token twice", nil, nil, "tokens: [{principal: a, token: 0123456789abcdef}, {principal: b, token: 0123456789abcdef}]\n", "tokens", "vigil.yaml"},
		{"unknown role", nil, nil, "tokens: [{principal: a, token: 0123456789abcdef, roles: [boss]}]\n", "tokens", "vigil.yaml"},
		{"bad recipient pattern", nil, nil, "tokens: [{principal: a, token: 0123456789abcdef, recipients: ['team/*']}]\n", "tokens", "vigil.yaml"},
		{"register_for without the role", nil, nil, "tokens: [{principal: a, token: 0123456789abcdef, register_for: ['w-*']}]\n", "tokens", "vigil.yaml"},
		{"bad scope pattern", nil, nil, "tokens: [{principal: a, token: 0123456789abcdef, scopes: [Support]}]\n", "tokens", "vigil.yaml"},
		{"token unknown key", nil, nil, "tokens: [{principal: a, token: 0123456789abcdef, role: admin}]\n", "role", "vigil.yaml"},
		{"open listen without tokens", []string{"--listen", "0.0.0.0:7878"}, nil, "", "listen", "--listen"},
		{"fetch timeout", nil, nil, "fetch: {max_timeout: 1h}\n", "fetch", "vigil.yaml"},
		{"fetch unknown key", nil, nil, "fetch: {max_timeot: 1s}\n", "max_timeot", "vigil.yaml"},
		{"fetch whole bound too long", nil, nil, "fetch: {max_fetch_time: 1h}\n", "fetch", "vigil.yaml"},
		{"fetch whole bound negative", nil, nil, "fetch: {max_fetch_time: -1s}\n", "fetch", "vigil.yaml"},
		{"fetch whole bound under the default timeout", nil, nil, "fetch: {max_fetch_time: 60s}\n", "fetch", "vigil.yaml"},
		{"fetch whole bound under max_timeout", nil, nil, "fetch: {max_timeout: 90s, max_fetch_time: 60s}\n", "fetch", "vigil.yaml"},
		{"fetch body", nil, nil, "fetch: {max_body_bytes: -1}\n", "fetch", "vigil.yaml"},
		{"fetch user agent", nil, nil, "fetch: {user_agent: \"a\\nb\"}\n", "fetch", "vigil.yaml"},
		{"observe rate", nil, nil, "observe: {rate: -5}\n", "observe", "vigil.yaml"},
		{"observe rate not a number", nil, nil, "observe: {rate: .nan}\n", "observe", "vigil.yaml"},
		{"observe run budget", nil, nil, "observe: {run_per_minute: -2}\n", "observe", "vigil.yaml"},
		{"observe run budget too large", nil, nil, "observe: {run_per_minute: 1000001}\n", "observe", "vigil.yaml"},
		{"scope without reporters", nil, nil, "scopes: {support: {observe: [{sources: [{name: slack-help, reporters: []}]}]}}\n", "scopes", "vigil.yaml"},
		{"scope source unknown key", nil, nil, "scopes: {support: {observe: [{sources: [{name: a, reporters: [x], token: y}]}]}}\n", "token", "vigil.yaml"},
		{"secret name", nil, nil, "secrets: {'GitHub Token': x}\n", "secrets", "vigil.yaml"},
		{"missing config file", nil, map[string]string{"VIGIL_CONFIG": "/nonexistent/vigil.yaml"}, "", "config", "VIGIL_CONFIG"},
		{"max refs flag", []string{"--recipient-max-refs", "-1"}, nil, "", "recipient_max_refs", "--recipient-max-refs"},
		{"max refs env", nil, map[string]string{"VIGIL_RECIPIENT_MAX_REFS": "many"}, "", "recipient_max_refs", "VIGIL_RECIPIENT_MAX_REFS"},
		{"max pending file", nil, nil, "recipient_max_pending: -3\n", "recipient_max_pending", "vigil.yaml"},
		{"max pending too big", []string{"--recipient-max-pending", "100000000"}, nil, "", "recipient_max_pending", "--recipient-max-pending"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := settingsFor(t, tt.args, tt.env, tt.file)
			var ce *configError
			if !errors.As(err, &ce) || ce.Key != tt.key || !strings.Contains(ce.Source, tt.from) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestSecretsResolve(t *testing.T) {
	file := filepath.Join(t.TempDir(), "gitea-token")
	if err := os.WriteFile(file, []byte("from-a-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := settings{Secrets: map[string]string{"github": "env:GH_TOKEN", "gitea": "file:" + file, "plain": "as-written"}}
	got, err := s.resolveSecrets(func(k string) string { return map[string]string{"GH_TOKEN": "from-env"}[k] })
	if err != nil || got["github"] != "from-env" || got["gitea"] != "from-a-file" || got["plain"] != "as-written" {
		t.Fatalf("%v %v", got, err)
	}
	for name, ref := range map[string]string{"unset": "env:NOPE", "nofile": "file:/nonexistent/x", "empty": "", "control": "a\x01b"} {
		_, err := settings{Secrets: map[string]string{name: ref}}.resolveSecrets(func(string) string { return "" })
		var ce *configError
		if !errors.As(err, &ce) || ce.Key != "secrets."+name {
			t.Errorf("%s: err = %v", name, err)
		}
		if ref == "a\x01b" && strings.Contains(err.Error(), ref) {
			t.Errorf("the error repeats the secret: %v", err)
		}
	}
}

// The per-recipient bounds are 0 (the recipients service's defaults:
// 1,000 refs, 10,000 pending watches) unless set, and come from the file,
// the environment and the flags in the usual order.
func TestRecipientBoundsSettings(t *testing.T) {
	s, err := settingsFor(t, nil, nil, "")
	if err != nil || s.MaxRefs != 0 || s.MaxPending != 0 {
		t.Fatalf("defaults: %d %d %v", s.MaxRefs, s.MaxPending, err)
	}
	if f := newServe(io.Discard).Flags(); f.Lookup("recipient-max-refs").DefValue != "1000" || f.Lookup("recipient-max-pending").DefValue != "10000" {
		t.Fatal("serve --help does not show the default bounds")
	}
	file := "recipient_max_refs: 5\nrecipient_max_pending: 50\n"
	if s, err = settingsFor(t, nil, nil, file); err != nil || s.MaxRefs != 5 || s.MaxPending != 50 {
		t.Fatalf("file: %d %d %v", s.MaxRefs, s.MaxPending, err)
	}
	env := map[string]string{"VIGIL_RECIPIENT_MAX_REFS": "6", "VIGIL_RECIPIENT_MAX_PENDING": "60"}
	if s, err = settingsFor(t, nil, env, file); err != nil || s.MaxRefs != 6 || s.MaxPending != 60 {
		t.Fatalf("env: %d %d %v", s.MaxRefs, s.MaxPending, err)
	}
	if s, err = settingsFor(t, []string{"--recipient-max-refs", "7", "--recipient-max-pending", "70"}, env, file); err != nil || s.MaxRefs != 7 || s.MaxPending != 70 {
		t.Fatalf("flags: %d %d %v", s.MaxRefs, s.MaxPending, err)
	}
}

func TestTokensOpenTheListenAddress(t *testing.T) {
	s, err := settingsFor(t, []string{"--listen", "0.0.0.0:7878"}, nil, "tokens:\n  - principal: ci-bot\n    token: 0123456789abcdef0123\n")
	if ts := s.authTokens(); err != nil || len(ts) != 1 || ts[0].Principal != "ci-bot" || ts[0].Token != "0123456789abcdef0123" {
		t.Fatalf("%+v %v", s, err)
	}
}

// A grant the config gets wrong is named down to its entry and field, and
// a good one reaches internal/authz whole.
func TestGrantSettings(t *testing.T) {
	file := "tokens:\n  - principal: orch\n    token: 0123456789abcdef0123\n    recipients: [orch, 'team-*']\n    roles: [orchestrator, operator]\n    register_for: ['worker-*']\n    scopes: [support]\n"
	s, err := settingsFor(t, nil, nil, file)
	ts := s.authTokens()
	if err != nil || len(ts) != 1 {
		t.Fatalf("%v %+v", err, ts)
	}
	g := ts[0].Grant
	if !slices.Equal(g.Recipients, []string{"orch", "team-*"}) || !slices.Equal(g.RegisterFor, []string{"worker-*"}) || !slices.Equal(g.Scopes, []string{"support"}) || !slices.Equal(g.Roles, []authz.Role{authz.Orchestrator, authz.Operator}) {
		t.Fatalf("grant %+v", g)
	}
	_, err = settingsFor(t, nil, nil, "tokens: [{principal: a, token: 0123456789abcdef}, {principal: b, token: 0123456789abcdeX, roles: [operator, boss]}]\n")
	if err == nil || !strings.Contains(err.Error(), "tokens[1].roles[1]") || !strings.Contains(err.Error(), "boss") || strings.Contains(err.Error(), "0123456789abcdeX") {
		t.Fatalf("want the entry named and the token kept out: %v", err)
	}
}

// The compilation cache is vigil/wazero in the user cache directory,
// whatever the data directory, unless plugin_cache names another, from the
// file, the environment or the flag, in that order of precedence.
func TestPluginCacheSetting(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, "cache"))
	t.Setenv("HOME", home)
	userCache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		env  map[string]string
		file string
		want string
	}{
		{"default", nil, nil, "", filepath.Join(userCache, "vigil", "wazero")},
		{"not under data", []string{"--data", "/d"}, nil, "", filepath.Join(userCache, "vigil", "wazero")},
		{"file", nil, nil, "plugin_cache: /c/file\n", "/c/file"},
		{"env over file", nil, map[string]string{"VIGIL_PLUGIN_CACHE": "/c/env"}, "plugin_cache: /c/file\n", "/c/env"},
		{"flag over env", []string{"--plugin-cache", "/c/flag"}, map[string]string{"VIGIL_PLUGIN_CACHE": "/c/env"}, "", "/c/flag"},
	}
	for _, c := range cases {
		s, err := settingsFor(t, c.args, c.env, c.file)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got, err := s.pluginCache(); err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
		}
	}

	// With no user cache directory to be had, the default is an error
	// naming the setting that moves it, never the current directory.
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "")
	s, err := settingsFor(t, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	var ce *configError
	if _, err := s.pluginCache(); !errors.As(err, &ce) || ce.Key != "plugin_cache" || !strings.Contains(err.Error(), "--plugin-cache") {
		t.Fatalf("no user cache directory: %v", err)
	}
}

// The key a file names wrongly is found from the document's structure: a
// key nested in a list of mappings, a value of the wrong type, a file that
// is not a mapping, and an empty file (an empty config).
func TestConfigKeysFromTheDocument(t *testing.T) {
	cases := []struct {
		name, file, key string
	}{
		{"nested unknown", "scopes: {s: {routes: [{source: a, sink: b}]}}\n", "sink"},
		{"wrong type", "workers: many\n", "workers"},
		{"wrong type nested", "fetch: {max_timeout: soon}\n", "fetch"},
		{"not a mapping", "- workers\n", "config"},
		{"not yaml", "workers: [\n", "config"},
	}
	for _, c := range cases {
		_, err := settingsFor(t, nil, nil, c.file)
		var ce *configError
		if !errors.As(err, &ce) || ce.Key != c.key {
			t.Errorf("%s: %v, want the key %q", c.name, err, c.key)
		}
	}
	if s, err := settingsFor(t, nil, nil, "# nothing set\n"); err != nil || s.Workers != defaultSettings().Workers {
		t.Errorf("an empty config: %+v, %v", s, err)
	}
}

func TestHooksResolve(t *testing.T) {
	file := filepath.Join(t.TempDir(), "whsec")
	if err := os.WriteFile(file, []byte("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := settings{Hooks: hooks.Config{
		"github": {Kind: "ci", Scheme: "github", Secret: "env:GH_HOOK"},
		"status": {Kind: "http", Scheme: "standard", Secret: "file:" + file},
	}}
	got, err := s.hooks(func(k string) string { return map[string]string{"GH_HOOK": "a-github-hook-secret"}[k] })
	if err != nil || got["github"].Secret != "a-github-hook-secret" || got["status"].Secret != "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" {
		t.Fatalf("%v %v", got, err)
	}
	for name, src := range map[string]hooks.Source{
		"unset":        {Kind: "ci", Scheme: "github", Secret: "env:NOPE"},
		"short":        {Kind: "ci", Scheme: "github", Secret: "tiny1"},
		"not whsec":    {Kind: "http", Scheme: "standard", Secret: "a-github-hook-secret"},
		"no kind":      {Scheme: "github", Secret: "a-github-hook-secret"},
		"other scheme": {Kind: "ci", Scheme: "gitlab", Secret: "a-github-hook-secret"},
	} {
		_, err := settings{Hooks: hooks.Config{"h": src}}.hooks(func(string) string { return "" })
		var ce *configError
		if !errors.As(err, &ce) || !strings.HasPrefix(ce.Key, "hooks") {
			t.Errorf("%s: err = %v", name, err)
		}
		if src.Secret != "" && strings.Contains(err.Error(), src.Secret) {
			t.Errorf("%s: the error repeats the secret: %v", name, err)
		}
	}
}

func TestHooksFromFile(t *testing.T) {
	s, err := settingsFor(t, nil, nil, "hooks: {github: {kind: ci, scheme: github, secret: a-github-hook-secret, fallback: 10m}}\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Hooks["github"]; got.Kind != "ci" || got.Fallback != 10*time.Minute {
		t.Fatalf("%+v", got)
	}
	if _, err := settingsFor(t, nil, nil, "hooks: {github: {kind: ci, sheme: github}}\n"); err == nil {
		t.Fatal("an unknown key of a hook was taken")
	}
}
