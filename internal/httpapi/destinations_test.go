package httpapi

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/internal/wasmbuild"
)

// sourceFixture is the API over the real plugin runtime, serving http, ci
// and timer built from their sources (not the committed .wasm) and the
// test.dests plugin of internal/plugin, whose admit answers params.answer.
func sourceFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	for name, src := range map[string]string{
		"http": "../../plugins/http", "ci": "../../plugins/ci", "timer": "../../plugins/timer",
		"dests": "../plugin/testdata/dests",
	} {
		if err := wasmbuild.BuildFile(src, filepath.Join(dir, name+".wasm")); err != nil {
			t.Fatal(err)
		}
	}
	registry := `{"kinds":{
	  "http": {"capabilities":["fetch"],"fetch_hosts":["*"]},
	  "ci": {"capabilities":["fetch"],"fetch_hosts":["api.github.com","127.0.0.1"]},
	  "timer": {},
	  "test.dests": {"capabilities":["fetch"],"fetch_hosts":["*.example.com"]}}}`
	if err := os.WriteFile(filepath.Join(dir, plugin.RegistryFile), []byte(registry), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := kind.NewRegistry()
	rt, err := plugin.New(context.Background(), plugin.Config{Bundled: fstest.MapFS{}, Dir: dir, CacheDir: wasmbuild.CacheDir(), Kinds: reg,
		Limits: plugin.Limits{CallTimeout: 10 * time.Second}}) // the cores are shared; this is about answers, not time
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	if p := rt.Problems(); len(p) != 0 {
		t.Fatalf("plugins not loaded: %v", p)
	}
	st := apitest.NewStack(t, apitest.Config{Plugins: reg, Clock: fakeclock.At(t0)})
	app := New(Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients, Plugins: rt},
		Options{BodyLimit: 1 << 16})
	return &fixture{app: app, st: st.Store, sched: st.Scheduler, del: st.Delivery, recips: st.Recipients}
}

// Bad input, named: a watch whose every fetch the host would refuse is a
// 422 at registration naming the setting that would allow it; client input
// a plugin cannot handle is a 422 from admit; a plugin answering a
// malformed destination is a plugin fault, never the caller's 4xx.
func TestRegistrationRefusesWhatCouldNeverBeFetched(t *testing.T) {
	f := sourceFixture(t)
	watch := func(kind, params string) string {
		return `{"kind":"` + kind + `","params":` + params + `,"recipient":{"id":"agent-1"}}`
	}
	url := func(u string) string { return watch("http", `{"url":"`+u+`"}`) }
	answer := func(a string) string { return watch("test.dests", `{"answer":`+a+`}`) }
	const guard = "kinds.http.private_ranges"
	tests := []struct {
		name, body    string
		status        int
		code, field   string
		setting, says string
	}{
		{"loopback", url("http://127.0.0.1/healthz"), 422, api.CodeDestinationRefused, "params.url", guard, "loopback"},
		{"cloud metadata", url("http://169.254.169.254/latest/meta-data/"), 422, api.CodeDestinationRefused, "params.url", guard, "metadata"},
		{"IPv4-mapped loopback", url("http://[::ffff:127.0.0.1]/"), 422, api.CodeDestinationRefused, "params.url", guard, "IPv4-mapped"},
		{"the integer form", url("http://2130706433/"), 422, api.CodeDestinationRefused, "params.url", guard, "reaches 127.0.0.1"},
		{"localhost", url("http://localhost:8080/"), 422, api.CodeDestinationRefused, "params.url", guard, "loopback"},
		{"private", url("https://10.0.0.7/status"), 422, api.CodeDestinationRefused, "params.url", guard, "RFC 1918"},
		{"a public host", url("https://status.example.com/healthz"), 201, "", "", "", ""},
		{"a forge host outside ci's grants", watch("ci", `{"forge":"gitea","api_base":"https://gitea.example.org/api/v1","repo":"a/b","sha":"0123456789abcdef0123456789abcdef01234567"}`),
			422, api.CodeWatchUnobservable, "", "kinds.ci.fetch_hosts", "not granted"},
		{"a forge API on loopback", watch("ci", `{"forge":"github","api_base":"http://127.0.0.1:3000","repo":"a/b","sha":"0123456789abcdef0123456789abcdef01234567"}`),
			422, api.CodeDestinationRefused, "params.api_base", "kinds.ci.private_ranges", "loopback"},
		{"a destination outside the grants, the host's check", answer(`{"ok":true,"destinations":[{"target":"https://other.example.org/","field":"url"}]}`),
			422, api.CodeWatchUnobservable, "params.url", "kinds.test.dests.fetch_hosts", "not granted"},
		{"a granted destination", answer(`{"ok":true,"destinations":[{"target":"https://a.example.com/","field":"url"}]}`), 201, "", "", "", ""},
		{"a malformed destination is the plugin's fault", answer(`{"ok":true,"destinations":[{"target":"ftp://a.example.com/"}]}`),
			503, api.CodePluginFault, "", "", "destination"},
		{"a timer at year 9999", watch("timer", `{"at":"9999-12-31T23:59:59Z"}`), 422, api.CodeInvalidParams, "params.at", "", "9999"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, b := f.do(t, "POST", "/api/v1/watches", tt.body)
			if status != tt.status {
				t.Fatalf("%d %s, want %d", status, b, tt.status)
			}
			if status == 201 {
				return
			}
			var env api.ErrorEnvelope
			if err := json.Unmarshal(b, &env); err != nil {
				t.Fatalf("not the envelope: %s", b)
			}
			e := env.Error
			if e.Code != tt.code || e.Field != tt.field || e.Setting != tt.setting || !strings.Contains(e.Message, tt.says) ||
				(tt.setting != "" && !strings.Contains(e.Message, tt.setting)) {
				t.Fatalf("%s: want code %s, field %q, setting %q, a message saying %q", b, tt.code, tt.field, tt.setting, tt.says)
			}
		})
	}
}
