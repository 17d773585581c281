package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/internal/wasmbuild"
	"github.com/vigilhq/vigil/sdk/abi"
)

// testPlugins builds the test plugins the dry run's tests load from a file.
var testPlugins wasmbuild.Builder

// tryJSON runs vigil plugin try with args and --json, and decodes the
// report; code is the exit code.
func tryJSON(t *testing.T, args ...string) (tryReport, int) {
	t.Helper()
	out, errOut, err := run(t, context.Background(), append([]string{"plugin", "try", "--json"}, args...)...)
	var rep tryReport
	if jerr := json.Unmarshal([]byte(out), &rep); jerr != nil {
		t.Fatalf("%v: not a report: %v\n%s\n%s", args, jerr, out, errOut)
	}
	code := exitCodeOf(err)
	if code != rep.ExitCode {
		t.Fatalf("exit %d, the report says %d", code, rep.ExitCode)
	}
	return rep, code
}

// registryDir is a plugin directory holding only a registry.json.
func registryDir(t *testing.T, registry string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, plugin.RegistryFile), []byte(registry), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The bundled timer, tried with its example and with params, answers
// pending with its instant as next_check, the natural deadline a minute
// on, and no fetch; in text and in JSON.
func TestPluginTryTheBundledTimer(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	rep, code := tryJSON(t, "timer", "--params", `{"at":"`+at.Format(time.RFC3339)+`"}`)
	if code != tryAnswered || rep.Kind != "timer" || rep.Source != "bundled" || len(rep.SHA256) != 64 || rep.Version == "" {
		t.Fatalf("exit %d: %+v", code, rep)
	}
	if rep.Admit == nil || !rep.Admit.OK || rep.Admit.Deadline == nil || !rep.Admit.Deadline.Equal(at.Add(time.Minute)) {
		t.Fatalf("admit %+v", rep.Admit)
	}
	o := rep.Observe
	if o == nil || o.Status != abi.StatusPending || o.NextCheck == nil || !o.NextCheck.Equal(at) || o.NextProbe == nil || !o.NextProbe.Equal(at) {
		t.Fatalf("observe %+v", o)
	}
	if len(rep.Fetches) != 0 || len(rep.Commands) != 0 || len(rep.Warnings) != 0 {
		t.Fatalf("fetches %v, commands %v, warnings %v", rep.Fetches, rep.Commands, rep.Warnings)
	}

	out, _, err := run(t, context.Background(), "plugin", "try", "timer")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"timer", "bundled", "admit", "ok", "natural deadline 2030-01-01T14:01:00Z", "pending", "next_check 2030-01-01T14:00:00Z"} {
		if !strings.Contains(out, want) {
			t.Errorf("the example's dry run lacks %q:\n%s", want, out)
		}
	}
	if left, err := os.ReadDir(cwd); err != nil || len(left) != 0 {
		t.Fatalf("the dry run wrote into the current directory: %v %v", left, err)
	}
}

// A file that claims a kind a bundled plugin serves is the one tried: a
// new build of a kind is tried under the kind's grants, and the bundled
// file is set aside.
func TestPluginTryAFileWinsItsKind(t *testing.T) {
	b, err := os.ReadFile(timerWasm)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "mytimer.wasm")
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, code := tryJSON(t, f)
	if code != tryAnswered || rep.Kind != "timer" || rep.File != f || rep.Source != f || rep.Observe == nil || rep.Observe.Status != abi.StatusPending {
		t.Fatalf("exit %d: %+v", code, rep)
	}
}

// Params that are not the kind's are admit's refusal, with its code and
// field, exit 2; params from a file and from stdin are read as given;
// params that are not JSON are a usage error, ExitUsage.
func TestPluginTryRefusesAndReadsParams(t *testing.T) {
	rep, code := tryJSON(t, "timer", "--params", `{"at":"soon"}`)
	if code != tryRefused || rep.Admit == nil || rep.Admit.OK || rep.Admit.Code != api.CodeInvalidParams || rep.Admit.Field != "params.at" || rep.Observe != nil {
		t.Fatalf("exit %d: %+v", code, rep.Admit)
	}

	f := filepath.Join(t.TempDir(), "params.json")
	if err := os.WriteFile(f, []byte(`{"at":"2030-06-01T00:00:00Z"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if rep, code := tryJSON(t, "timer", "--params", "@"+f); code != tryAnswered || !jsonEqual(rep.Params, `{"at":"2030-06-01T00:00:00Z"}`) {
		t.Fatalf("@file: exit %d, params %s", code, rep.Params)
	}
	var out strings.Builder
	root := newRoot(&out, &strings.Builder{})
	root.SetIn(strings.NewReader(`{"at":"2030-07-01T00:00:00Z"}`))
	root.SetArgs([]string{"plugin", "try", "timer", "--params", "-"})
	if err := root.ExecuteContext(context.Background()); err != nil || !strings.Contains(out.String(), "2030-07-01T00:00:00Z") {
		t.Fatalf("stdin: %v\n%s", err, out.String())
	}

	_, _, err := run(t, context.Background(), "plugin", "try", "timer", "--params", `{"at":`)
	if code := exitCodeOf(err); code != ExitUsage || !strings.Contains(err.Error(), "not JSON") {
		t.Fatalf("params that are not JSON: exit %d, %v", code, err)
	}
	for _, every := range []string{"0s", "-1m", "soon"} {
		if _, _, err := run(t, context.Background(), "plugin", "try", "timer", "--every", every); exitCodeOf(err) != ExitUsage || !strings.Contains(err.Error(), "--every") {
			t.Fatalf("--every %s: %v", every, err)
		}
	}
	big := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(big, []byte(`"`+strings.Repeat("x", 1<<20)+`"`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = run(t, context.Background(), "plugin", "try", "timer", "--params", "@"+big)
	if code := exitCodeOf(err); code != ExitUsage || !strings.Contains(err.Error(), "1 MiB") {
		t.Fatalf("params over 1 MiB: exit %d, %v", code, err)
	}
}

// A kind nobody serves, a file that is not there and a file that does not
// compile are load errors, exit 4, each naming what failed.
func TestPluginTryLoadErrors(t *testing.T) {
	rep, code := tryJSON(t, "no.such.kind")
	if code != tryLoadError || rep.Load == nil || rep.Load.Setting != "kinds.no.such.kind.wasm" {
		t.Fatalf("unknown kind: exit %d, %+v", code, rep.Load)
	}
	rep, code = tryJSON(t, filepath.Join(t.TempDir(), "missing.wasm"))
	if code != tryLoadError || rep.Load == nil || rep.Load.Rule != "read" {
		t.Fatalf("missing file: exit %d, %+v", code, rep.Load)
	}
	junk := filepath.Join(t.TempDir(), "junk.wasm")
	if err := os.WriteFile(junk, []byte("not wasm"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, code = tryJSON(t, junk)
	if code != tryLoadError || rep.Load == nil || rep.Load.Rule != "compile" || rep.Load.File != junk {
		t.Fatalf("junk file: exit %d, %+v", code, rep.Load)
	}
}

// A plugin loaded from its file fetches from a server on 127.0.0.1 that
// the registry of the config file's plugin directory grants (fetch_hosts
// and private_ranges): the fetch is
// made through the issuer and reported with its status and bytes. Without
// the private range the destination guard refuses
// the same fetch, and the report gives its reason; the plugin answers
// pending, exit 0.
func TestPluginTryFetchesThroughTheIssuer(t *testing.T) {
	var hits int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		_, _ = w.Write([]byte("hello"))
	}))
	defer srv.Close()
	wasm := testPlugins.Build(t, filepath.Join("..", "..", "internal", "plugin", "testdata", "fetcher"))
	params := `{"url":"` + srv.URL + `/x"}`

	// The grant comes from the plugin directory serve's config file names.
	granted := registryDir(t, `{"kinds":{"test.fetcher":{"capabilities":["fetch"],"fetch_hosts":["127.0.0.1"],"private_ranges":["127.0.0.0/8"]}}}`)
	config := filepath.Join(t.TempDir(), "vigil.yaml")
	if err := os.WriteFile(config, []byte("plugins: "+granted+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, code := tryJSON(t, wasm, "--config", config, "--params", params)
	if code != tryAnswered || rep.Kind != "test.fetcher" || rep.Source != wasm || rep.File != wasm {
		t.Fatalf("exit %d: %+v", code, rep)
	}
	if rep.Observe == nil || rep.Observe.Status != abi.StatusSettled || rep.Observe.Outcome == nil || rep.Observe.Outcome.Result != "200" {
		t.Fatalf("observe %+v", rep.Observe)
	}
	if len(rep.Fetches) != 1 || hits != 1 {
		t.Fatalf("fetches %+v, server hits %d", rep.Fetches, hits)
	}
	f := rep.Fetches[0]
	if f.Method != "GET" || f.URL != srv.URL+"/x" || f.Status != 200 || f.Bytes != 5 || f.FromCache || f.Failure != nil {
		t.Fatalf("fetch %+v", f)
	}

	guarded := registryDir(t, `{"kinds":{"test.fetcher":{"capabilities":["fetch"],"fetch_hosts":["127.0.0.1"]}}}`)
	rep, code = tryJSON(t, wasm, "--plugins", guarded, "--params", params)
	if code != tryAnswered || rep.Observe == nil || rep.Observe.Status != abi.StatusPending {
		t.Fatalf("exit %d: observe %+v", code, rep.Observe)
	}
	if len(rep.Fetches) != 1 || rep.Fetches[0].Failure == nil || rep.Fetches[0].Failure.Reason != abi.FetchDestinationRefused ||
		!strings.Contains(rep.Fetches[0].Failure.Message, "127.0.0.1") || hits != 1 {
		t.Fatalf("the guard's refusal: %+v, server hits %d", rep.Fetches, hits)
	}
	out, _, err := run(t, context.Background(), "plugin", "try", wasm, "--plugins", guarded, "--params", params)
	if err != nil || !strings.Contains(out, "refused: destination_refused") {
		t.Fatalf("text: %v\n%s", err, out)
	}

	// Not granted fetch at all, the kind is refused at admit, naming the
	// setting, exit 2.
	rep, code = tryJSON(t, wasm, "--params", params)
	if code != tryRefused || rep.Admit == nil || rep.Admit.Code != api.CodeWatchUnobservable || rep.Admit.Setting != "kinds.test.fetcher.capabilities" {
		t.Fatalf("no grant: exit %d, %+v", code, rep.Admit)
	}
}

// The bundled http kind names its URL as a destination, so a loopback URL
// without a private range is refused at admit by the destination guard,
// with its code and the field, before any fetch.
func TestPluginTryAdmitRefusesALoopbackDestination(t *testing.T) {
	rep, code := tryJSON(t, "http", "--params", `{"url":"http://127.0.0.1:9/x"}`)
	if code != tryRefused || rep.Admit == nil || rep.Admit.Code != api.CodeDestinationRefused || rep.Admit.Field != "params.url" ||
		rep.Admit.Setting != "kinds.http.private_ranges" || len(rep.Fetches) != 0 {
		t.Fatalf("exit %d: %+v, fetches %v", code, rep.Admit, rep.Fetches)
	}
}

// The bundled command kind, granted one program, runs it through the exec
// runner in --workspace, and the report lists the command and its exit.
func TestPluginTryRunsCommands(t *testing.T) {
	dir := registryDir(t, `{"kinds":{"command":{"capabilities":["exec"],"exec":{"programs":["true"]}}}}`)
	rep, code := tryJSON(t, "command", "--plugins", dir, "--workspace", t.TempDir(), "--params", `{"argv":["true"]}`)
	if code != tryAnswered || rep.Observe == nil || rep.Observe.Status != abi.StatusSettled {
		t.Fatalf("exit %d: %+v", code, rep.Observe)
	}
	if len(rep.Commands) != 1 || rep.Commands[0].Argv[0] != "true" || rep.Commands[0].ExitCode != 0 || rep.Commands[0].Failure != nil {
		t.Fatalf("commands %+v", rep.Commands)
	}
}

// A plugin that traps is a plugin fault, exit 3, with the fault's reason.
func TestPluginTryReportsAFault(t *testing.T) {
	wasm := testPlugins.Build(t, filepath.Join("..", "..", "internal", "plugin", "testdata", "trap"))
	rep, code := tryJSON(t, wasm, "--params", `{}`)
	if code != tryFault || rep.Observe == nil || rep.Observe.Fault == nil || rep.Observe.Fault.Reason != kind.FaultTrap {
		t.Fatalf("exit %d: %+v", code, rep.Observe)
	}
}

func jsonEqual(a json.RawMessage, b string) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

// A timer that answers pending with no next_check, its instant half a
// cadence away and its deadline the instant itself, is warned of: serve
// would probe it next at the deadline, and expire it there.
func TestPluginTryWarnsOfAProbePastTheDeadline(t *testing.T) {
	wasm := testPlugins.Build(t, filepath.Join("..", "..", "conformance", "testdata", "quirks", "latetimer"))
	at := time.Now().Add(30 * time.Second).UTC().Truncate(time.Second)
	rep, code := tryJSON(t, wasm, "--params", `{"at":"`+at.Format(time.RFC3339)+`"}`)
	if code != tryAnswered || rep.Observe == nil || rep.Observe.Status != abi.StatusPending || rep.Observe.NextCheck != nil {
		t.Fatalf("exit %d: %+v", code, rep.Observe)
	}
	if rep.Observe.NextProbe == nil || !rep.Observe.NextProbe.Equal(at) {
		t.Fatalf("next probe %v, want the deadline %s", rep.Observe.NextProbe, at)
	}
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "after its natural deadline "+at.Format(time.RFC3339)) {
		t.Fatalf("warnings %q", rep.Warnings)
	}
	// With a cadence that leaves a probe before the instant, no warning.
	if rep, _ := tryJSON(t, wasm, "--every", "5s", "--params", `{"at":"`+at.Format(time.RFC3339)+`"}`); len(rep.Warnings) != 0 {
		t.Fatalf("warnings at a 5s cadence: %q", rep.Warnings)
	}
}

// An admit whose answer breaks the contract is the plugin's fault, not a
// refusal of the params: exit 3, with the admission's code plugin_fault.
func TestPluginTryReportsAnAdmitFault(t *testing.T) {
	wasm := testPlugins.Build(t, filepath.Join("..", "..", "conformance", "testdata", "broken", "baddestinations"))
	rep, code := tryJSON(t, wasm) // its example
	if code != tryFault || rep.Admit == nil || rep.Admit.OK || rep.Admit.Code != api.CodePluginFault || rep.Observe != nil {
		t.Fatalf("exit %d: %+v", code, rep.Admit)
	}
}

// A standing kind's first try records a baseline; tried again with that
// baseline (--baseline) after its subject changed, it answers changed:
// the check after the first, attempt 2.
func TestPluginTryAStandingKindWithItsBaseline(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "version %d", hits.Add(1))
	}))
	defer srv.Close()
	wasm := testPlugins.Build(t, filepath.Join("..", "..", "conformance", "testdata", "good", "standing"))
	dir := registryDir(t, `{"kinds":{"good.standing":{"capabilities":["fetch","exec"],"fetch_hosts":["127.0.0.1"],"private_ranges":["127.0.0.0/8"],"exec":{"programs":["true"]}}}}`)
	args := []string{wasm, "--plugins", dir, "--workspace", t.TempDir(), "--params", `{"url":"` + srv.URL + `/"}`}

	first, code := tryJSON(t, args...)
	if code != tryAnswered || first.Observe == nil || first.Observe.Status != abi.StatusPending || len(first.Observe.Baseline) == 0 || first.Observe.Deadline != nil {
		t.Fatalf("first: exit %d: %+v", code, first.Observe)
	}
	next, code := tryJSON(t, append(args, "--baseline", string(first.Observe.Baseline))...)
	if code != tryAnswered || next.Observe == nil || next.Observe.Status != abi.StatusChanged || jsonEqual(next.Observe.Baseline, string(first.Observe.Baseline)) {
		t.Fatalf("with the baseline: exit %d: %+v", code, next.Observe)
	}
	if _, _, err := run(t, context.Background(), "plugin", "try", wasm, "--params", "-", "--baseline", "-"); exitCodeOf(err) != ExitUsage ||
		!strings.Contains(err.Error(), "cannot both read standard input") {
		t.Fatalf("both from stdin: %v", err)
	}
}

// clipText puts s on one line and clips it by runes, so a clipped text
// is still UTF-8.
func TestClipTextKeepsRunesWhole(t *testing.T) {
	if got := clipText("{\"a\":\n\t 1}", 80); got != `{"a": 1}` {
		t.Errorf("one line: %q", got)
	}
	got := clipText(strings.Repeat("é", 100), 80)
	if !utf8.ValidString(got) || utf8.RuneCountInString(got) != 80 || !strings.HasSuffix(got, "…") {
		t.Errorf("clipped: %q (%d runes)", got, utf8.RuneCountInString(got))
	}
}

// --event hands a recorded event to the kind's wake and prints the keys:
// the ci kind, built from its source, names the commit a completed check
// suite is about, as its admit keys a watch on it; an event it does not
// read names none; a kind without wake is nothing to try (exit 4).
func TestPluginTryWakesOnARecordedEvent(t *testing.T) {
	wasm := testPlugins.Build(t, filepath.Join("..", "..", "plugins", "ci"))
	events := filepath.Join("..", "..", "plugins", "ci", "testdata", "events")
	const key = "https://api.github.com/repos/vigilhq/vigil/commits/0123456789abcdef0123456789abcdef01234567"
	rep, code := tryJSON(t, wasm, "--event", filepath.Join(events, "github-check_suite-completed.json"), "--event-name", "check_suite")
	if code != tryAnswered || rep.Kind != "ci" || rep.Wake == nil || rep.Admit != nil || rep.Observe != nil ||
		rep.Wake.Event != "check_suite" || rep.Wake.Source != abi.SourceGitHub || !reflect.DeepEqual(rep.Wake.Keys, []string{key}) {
		t.Fatalf("exit %d: %+v %+v", code, rep, rep.Wake)
	}
	rep, code = tryJSON(t, wasm, "--event", filepath.Join(events, "gitea-status-pending.json"), "--event-name", "status", "--source", "gitea")
	if code != tryAnswered || rep.Wake == nil || rep.Wake.Keys == nil || len(rep.Wake.Keys) != 0 {
		t.Fatalf("a pending status: exit %d: %+v", code, rep.Wake)
	}
	out, _, err := run(t, context.Background(), "plugin", "try", wasm, "--event", filepath.Join(events, "github-check_suite-completed.json"), "--event-name", "check_suite")
	if err != nil || !strings.Contains(out, "1 key(s)") || !strings.Contains(out, key) || strings.Contains(out, "params") {
		t.Fatalf("text: %v\n%s", err, out)
	}
	rep, code = tryJSON(t, "timer", "--event", filepath.Join(events, "github-check_suite-completed.json"), "--event-name", "check_suite")
	if code != tryLoadError || rep.Load == nil || !strings.Contains(rep.Load.Error, "does not wake") || rep.Wake != nil {
		t.Fatalf("a kind without wake: exit %d: %+v", code, rep.Load)
	}
}

// --event's flags are checked before anything loads: a name is needed,
// the source is a known scheme, the body is JSON of at most 1 MiB, and a
// watch's flags have no part in a wake.
func TestPluginTryEventFlags(t *testing.T) {
	dir := t.TempDir()
	body := filepath.Join(dir, "event.json")
	if err := os.WriteFile(body, []byte(`{"action":"completed"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	notJSON := filepath.Join(dir, "form.txt")
	if err := os.WriteFile(notJSON, []byte(`payload=%7B%7D`), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(`"`+strings.Repeat("x", maxEventBody)+`"`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		says string
	}{
		{[]string{"--event", body}, "--event-name"},
		{[]string{"--event", body, "--event-name", "push", "--source", "gitlab"}, "--source"},
		{[]string{"--event", body, "--event-name", "check suite"}, "printable"},
		{[]string{"--event", body, "--event-name", strings.Repeat("e", abi.MaxWakeEvent+1)}, "at most"},
		{[]string{"--event", notJSON, "--event-name", "push"}, "not JSON"},
		{[]string{"--event", big, "--event-name", "push"}, "more than 1 MiB"},
		{[]string{"--event", filepath.Join(dir, "missing.json"), "--event-name", "push"}, "missing.json"},
		{[]string{"--event", body, "--event-name", "push", "--params", `{}`}, "--params"},
		{[]string{"--event-name", "push"}, "--event FILE"},
	} {
		_, _, err := run(t, context.Background(), append([]string{"plugin", "try", "timer"}, tt.args...)...)
		if code := exitCodeOf(err); code != ExitUsage || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%v: exit %d, %v; want a usage error saying %q", tt.args, code, err, tt.says)
		}
	}
}
