package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/sdk/abi"
)

// destsRuntime serves the test.dests plugin (its admit answers
// params.answer verbatim) under the given registry entry, and no bundled
// plugin.
func destsRuntime(t *testing.T, entry string) *Runtime {
	t.Helper()
	return destsRuntimeOf(t, "dests", entry)
}

// destsRuntimeOf is destsRuntime with the test.dests plugin of testdata/name.
func destsRuntimeOf(t *testing.T, name, entry string) *Runtime {
	t.Helper()
	dir := pluginDir(t, `{"kinds":{"test.dests":`+entry+`}}`, name)
	// A generous call timeout: the cores are shared, and these tests are
	// about answers, not time.
	r := newRuntime(t, Config{Bundled: fstest.MapFS{}, Dir: dir, Limits: Limits{CallTimeout: 10 * time.Second}})
	if p := r.Problems(); len(p) != 0 {
		t.Fatalf("problems: %v", p)
	}
	return r
}

// admitAnswer admits a test.dests watch whose admit answers answer.
func admitAnswer(r *Runtime, answer string) (kind.Admission, error) {
	return r.Admit(context.Background(), "test.dests", json.RawMessage(`{"answer":`+answer+`}`))
}

func okNaming(target, field string) string {
	d, _ := json.Marshal([]abi.Destination{{Target: target, Field: field}})
	return `{"ok":true,"destinations":` + string(d) + `}`
}

// Each literal destination the fetch guard always refuses is refused at
// registration, as destination_refused naming the param and the setting
// that would allow it; a public host and a name that only DNS can judge
// pass.
func TestAdmitRefusesDestinationsTheGuardRefuses(t *testing.T) {
	r := destsRuntime(t, `{"capabilities":["fetch"],"fetch_hosts":["*"]}`)
	const setting = "kinds.test.dests.private_ranges"
	tests := []struct {
		target string
		says   string // "" when admitted
	}{
		{"http://127.0.0.1/healthz", "is loopback"},
		{"http://169.254.169.254/latest/meta-data/", "cloud metadata"},
		{"http://[::ffff:127.0.0.1]/", "IPv4-mapped form of 127.0.0.1"},
		{"http://2130706433/", "reaches 127.0.0.1, loopback"},
		{"http://0x7f000001/", "reaches 127.0.0.1"},
		{"http://127.1:8080/", "reaches 127.0.0.1"},
		{"http://localhost/", "loopback"},
		{"http://api.localhost/", "loopback"},
		{"https://10.1.2.3/", "private (RFC 1918)"},
		{"http://192.168.1.1/", "private (RFC 1918)"},
		{"http://[::1]:9000/", "loopback"},
		{"http://[fe80::1%25eth0]/", "link-local"},
		{"http://[fd00::1]/", "unique-local"},
		{"100.64.0.1:80", "CGNAT"},
		{"https://status.example.com/healthz", ""},
		{"https://93.184.216.34/", ""},
		{"https://[2606:2800:220:1::1]/", ""},
		{"internal.example.com", ""}, // a name: judged at each fetch, by what it resolves to
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			adm, err := admitAnswer(r, okNaming(tt.target, "url"))
			if tt.says == "" {
				if err != nil || len(adm.Destinations) != 1 || adm.Destinations[0].Target != tt.target {
					t.Fatalf("admit = %+v, %v; want admitted", adm, err)
				}
				return
			}
			var ref *api.Error
			if !errors.As(err, &ref) {
				t.Fatalf("admit = %+v, %v; want a refusal", adm, err)
			}
			if ref.Code != api.CodeDestinationRefused || ref.Field != "params.url" || ref.Setting != setting ||
				!strings.Contains(ref.Message, tt.says) || !strings.Contains(ref.Message, setting) {
				t.Fatalf("refusal = %+v; want %s naming params.url and %s, saying %q", ref, api.CodeDestinationRefused, setting, tt.says)
			}
		})
	}
	// Without a field, the refusal names none.
	_, err := admitAnswer(r, okNaming("localhost:8080", ""))
	var ref *api.Error
	if !errors.As(err, &ref) || ref.Code != api.CodeDestinationRefused || ref.Field != "" {
		t.Fatalf("admit = %v; want destination_refused naming no field", err)
	}
}

// The operator's private_ranges allow a range as the fetch guard does, for
// a literal and for a name that reaches it.
func TestAdmitAllowsGrantedPrivateRanges(t *testing.T) {
	r := destsRuntime(t, `{"capabilities":["fetch"],"fetch_hosts":["*"],"private_ranges":["127.0.0.0/8","::1/128","10.20.0.0/16"]}`)
	for _, target := range []string{"http://127.0.0.1:8080/", "http://2130706433/", "http://localhost/", "https://10.20.1.2/", "[::1]:443"} {
		if _, err := admitAnswer(r, okNaming(target, "url")); err != nil {
			t.Errorf("%s: %v, want admitted", target, err)
		}
	}
	_, err := admitAnswer(r, okNaming("https://10.21.0.1/", "url"))
	var ref *api.Error
	if !errors.As(err, &ref) || ref.Code != api.CodeDestinationRefused {
		t.Fatalf("10.21.0.1 outside the granted 10.20.0.0/16: %v", err)
	}
}

// A host outside the kind's fetch grants is refused as the fetch would
// be (not_granted), naming kinds.<kind>.fetch_hosts.
func TestAdmitRefusesDestinationsOutsideTheGrants(t *testing.T) {
	r := destsRuntime(t, `{"capabilities":["fetch"],"fetch_hosts":["api.github.com","*.example.com"]}`)
	const setting = "kinds.test.dests.fetch_hosts"
	for target, ok := range map[string]bool{
		"https://api.github.com/repos":   true,
		"API.GitHub.com.":                true,
		"https://status.example.com/":    true,
		"https://example.com/":           false, // *.example.com is the names under it
		"https://gitea.example.org/api/": false,
		"http://127.0.0.1/":              false,
	} {
		t.Run(target, func(t *testing.T) {
			_, err := admitAnswer(r, okNaming(target, "api_base"))
			if ok {
				if err != nil {
					t.Fatalf("admit = %v, want admitted", err)
				}
				return
			}
			var ref *api.Error
			if !errors.As(err, &ref) || ref.Code != api.CodeWatchUnobservable || ref.Setting != setting ||
				ref.Field != "params.api_base" || !strings.Contains(ref.Message, setting) {
				t.Fatalf("admit = %v; want watch_unobservable naming %s and params.api_base", err, setting)
			}
		})
	}
}

// Destinations off the contract are the plugin's fault: a fault (a
// *CallError, bad_output, answering ErrBadDestinations), never a refusal
// that would blame the caller.
func TestMalformedDestinationsAreAFault(t *testing.T) {
	r := destsRuntime(t, `{"capabilities":["fetch"],"fetch_hosts":["*"]}`)
	many := make([]abi.Destination, abi.MaxDestinations+1)
	for i := range many {
		many[i] = abi.Destination{Target: fmt.Sprintf("h%d.example.com", i)}
	}
	tooMany, _ := json.Marshal(abi.AdmitResponse{OK: true, Destinations: many})
	tests := map[string]string{
		"a scheme not http":       okNaming("ftp://example.com/", "url"),
		"userinfo":                okNaming("https://u:p@example.com/", "url"),
		"not a host":              okNaming("example.com/path", ""),
		"an empty target":         okNaming("", "url"),
		"a bad port":              okNaming("example.com:99999", ""),
		"an unbracketed IPv6":     okNaming("::1", ""),
		"a malformed field":       okNaming("example.com", "u rl"),
		"too many":                string(tooMany),
		"on a refusal":            `{"ok":false,"code":"invalid_params","message":"no","destinations":[{"target":"example.com"}]}`,
		"an unknown member":       `{"ok":true,"destinations":[{"target":"example.com","port":80}]}`,
		"a string, not an object": `{"ok":true,"destinations":["example.com"]}`,
		"a target not a string":   `{"ok":true,"destinations":[{"target":80}]}`,
	}
	for name, answer := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := admitAnswer(r, answer)
			var ce *kind.CallError
			var ref *api.Error
			if !errors.As(err, &ce) || ce.Reason != kind.FaultContract || !errors.Is(err, kind.ErrFault) || errors.As(err, &ref) {
				t.Fatalf("admit = %v; want a bad_output fault", err)
			}
		})
	}
	// The ones about destinations say so, by type.
	_, err := admitAnswer(r, okNaming("ftp://example.com/", "url"))
	var de *abi.DestinationError
	if !errors.Is(err, ErrBadDestinations) || !errors.As(err, &de) {
		t.Fatalf("admit = %v; want ErrBadDestinations wrapping the parser's *abi.DestinationError", err)
	}
	// The plugin keeps serving.
	if _, err := admitAnswer(r, okNaming("example.com", "")); err != nil {
		t.Fatal(err)
	}
}

// A kind that declares no fetch has nothing to name.
func TestDestinationsFromAKindWithoutFetchAreAFault(t *testing.T) {
	r := destsRuntimeOf(t, "destsnofetch", `{}`)
	if _, err := admitAnswer(r, `{"ok":true}`); err != nil {
		t.Fatal(err)
	}
	_, err := admitAnswer(r, okNaming("example.com", ""))
	if !errors.Is(err, ErrBadDestinations) || !errors.Is(err, kind.ErrFault) {
		t.Fatalf("admit = %v; want a fault", err)
	}
}

// The timer at an instant its deadline (at plus a minute) cannot be
// written for is the caller's input: a refusal naming params.at, never a
// plugin fault. Built from source, so it tests the source, not the
// committed .wasm.
func TestTimerBeyondYear9999IsARefusal(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, builder.Build(t, filepath.Join("..", "..", "plugins", "timer")), filepath.Join(dir, "timer.wasm"))
	r := newRuntime(t, Config{Bundled: fstest.MapFS{}, Dir: dir, Limits: Limits{CallTimeout: 10 * time.Second}})
	for _, at := range []string{"9999-12-31T23:59:30Z", "9999-12-31T23:00:00-05:00", "9999-12-31T23:59:59.999999999Z"} {
		_, err := r.Admit(context.Background(), "timer", json.RawMessage(`{"at":"`+at+`"}`))
		var ref *api.Error
		if !errors.As(err, &ref) || ref.Code != api.CodeInvalidParams || ref.Field != "params.at" || !strings.Contains(ref.Message, "9999") {
			t.Fatalf("%s: admit = %v; want invalid_params on params.at", at, err)
		}
	}
	if _, err := r.Admit(context.Background(), "timer", json.RawMessage(`{"at":"9999-12-31T23:58:00Z"}`)); err != nil {
		t.Fatalf("the last instant whose deadline RFC 3339 can write: %v", err)
	}
}
