package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	file := "workers: 2\ndata: /from/file\nplugins: /plugins/file\nfsync: true\n"
	env := map[string]string{"VIGIL_WORKERS": "3", "VIGIL_DATA": "/from/env"}

	s, err := settingsFor(t, nil, nil, "")
	if err != nil || s.Workers != 4 || s.Data != "./vigil-data" || s.Listen != "127.0.0.1:7878" || s.Fsync {
		t.Fatalf("defaults: %+v %v", s, err)
	}
	s, err = settingsFor(t, nil, nil, file)
	if err != nil || s.Workers != 2 || s.Data != "/from/file" || !s.Fsync {
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
		{"file bad cidr", nil, nil, "webhook_allow: [localhost]\n", "webhook_allow", "vigil.yaml"},
		{"short token", nil, nil, "tokens: [{principal: ci, token: short}]\n", "tokens", "vigil.yaml"},
		{"bad principal", nil, nil, "tokens: [{principal: 'a b', token: 0123456789abcdef}]\n", "tokens", "vigil.yaml"},
		{"token twice", nil, nil, "tokens: [{principal: a, token: 0123456789abcdef}, {principal: b, token: 0123456789abcdef}]\n", "tokens", "vigil.yaml"},
		{"open listen without tokens", []string{"--listen", "0.0.0.0:7878"}, nil, "", "listen", "--listen"},
		{"fetch timeout", nil, nil, "fetch: {max_timeout: 1h}\n", "fetch", "vigil.yaml"},
		{"fetch unknown key", nil, nil, "fetch: {max_timeot: 1s}\n", "max_timeot", "vigil.yaml"},
		{"fetch body", nil, nil, "fetch: {max_body_bytes: -1}\n", "fetch", "vigil.yaml"},
		{"fetch user agent", nil, nil, "fetch: {user_agent: \"a\\nb\"}\n", "fetch", "vigil.yaml"},
		{"observe rate", nil, nil, "observe: {rate: -5}\n", "observe", "vigil.yaml"},
		{"scope without reporters", nil, nil, "scopes: {support: {observe: [{sources: [{name: slack-help, reporters: []}]}]}}\n", "scopes", "vigil.yaml"},
		{"scope source unknown key", nil, nil, "scopes: {support: {observe: [{sources: [{name: a, reporters: [x], token: y}]}]}}\n", "token", "vigil.yaml"},
		{"secret name", nil, nil, "secrets: {'GitHub Token': x}\n", "secrets", "vigil.yaml"},
		{"missing config file", nil, map[string]string{"VIGIL_CONFIG": "/nonexistent/vigil.yaml"}, "", "config", "VIGIL_CONFIG"},
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

func TestTokensOpenTheListenAddress(t *testing.T) {
	s, err := settingsFor(t, []string{"--listen", "0.0.0.0:7878"}, nil, "tokens:\n  - principal: ci-bot\n    token: 0123456789abcdef0123\n")
	if err != nil || s.tokenMap()["0123456789abcdef0123"] != "ci-bot" {
		t.Fatalf("%+v %v", s, err)
	}
}
