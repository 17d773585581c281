package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/syncbuf"
	"github.com/vigilhq/vigil/sdk/abi"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func timerReq(at, now time.Time, id string) abi.ObserveRequest {
	return abi.ObserveRequest{
		Kind: "timer", WatchID: id, Now: now, Attempt: 1,
		Params: json.RawMessage(fmt.Sprintf(`{"at":%q}`, at.Format(time.RFC3339Nano))),
	}
}

func TestBundledTimerLoads(t *testing.T) {
	r := newRuntime(t, Config{})
	if p := r.Problems(); len(p) != 0 {
		t.Fatalf("problems: %v", p)
	}
	info, ok := r.Lookup("timer")
	if !ok {
		t.Fatalf("timer not loaded; have %v", r.Plugins())
	}
	if info.File != "bundled:timer/timer.wasm" || info.Version != "1.0.0" || info.Standing || !info.Observable || info.DefaultEvery != time.Minute {
		t.Fatalf("info = %+v", info)
	}
}

func TestTimerObserve(t *testing.T) {
	r := newRuntime(t, Config{})
	at := t0.Add(time.Hour)

	obs, err := r.Observe(context.Background(), timerReq(at, t0, "w1"))
	if err != nil {
		t.Fatal(err)
	}
	if obs.Status != abi.StatusPending || !obs.NextCheck.Equal(at) || obs.Fault != nil {
		t.Fatalf("before: %+v", obs)
	}

	obs, err = r.Observe(context.Background(), timerReq(at, at, "w1"))
	if err != nil {
		t.Fatal(err)
	}
	if obs.Status != abi.StatusSettled || obs.Outcome == nil || obs.Outcome.Result != "fired" {
		t.Fatalf("at: %+v", obs)
	}
}

func TestAdmit(t *testing.T) {
	r := newRuntime(t, Config{})
	ctx := context.Background()
	tests := []struct {
		name, kind, params string
		code, field        string
		setting            string
	}{
		{name: "ok", kind: "timer", params: `{"at":"2030-01-01T00:00:00Z"}`},
		{name: "unknown kind", kind: "nope", params: `{}`, code: api.CodeWatchUnobservable, setting: "kinds.nope.wasm"},
		{name: "missing field", kind: "timer", params: `{}`, code: api.CodeInvalidParams, field: "params.at"},
		{name: "unknown field", kind: "timer", params: `{"at":"2030-01-01T00:00:00Z","every":"1s"}`, code: api.CodeInvalidParams, field: "params.every"},
		{name: "wrong type", kind: "timer", params: `{"at":5}`, code: api.CodeInvalidParams, field: "params.at"},
		{name: "bad format", kind: "timer", params: `{"at":"tomorrow"}`, code: api.CodeInvalidParams, field: "params.at"},
		{name: "not an object", kind: "timer", params: `[]`, code: api.CodeInvalidParams, field: "params"},
		{name: "no params", kind: "timer", params: ``, code: api.CodeInvalidParams, field: "params"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			adm, err := r.Admit(ctx, tt.kind, json.RawMessage(tt.params))
			if tt.code == "" {
				if err != nil {
					t.Fatalf("want admitted, got %v", err)
				}
				// The timer names its own deadline: its instant plus a minute.
				if want := time.Date(2030, 1, 1, 0, 1, 0, 0, time.UTC); !adm.Deadline.Equal(want) {
					t.Fatalf("deadline %v, want %v", adm.Deadline, want)
				}
				return
			}
			var ref *api.Error
			if !errors.As(err, &ref) {
				t.Fatalf("want a refusal, got %v", err)
			}
			if ref.Code != tt.code || ref.Field != tt.field || ref.Setting != tt.setting {
				t.Fatalf("refusal = %+v", ref)
			}
			if ref.Message == "" {
				t.Fatal("refusal without a message")
			}
		})
	}
}

// Each misbehaving plugin proves its bound: the call comes back within the
// timeout and a margin, as a pending observation with the fault named; the
// host serves other kinds meanwhile; and the next call on that plugin works.
func TestFaultsAreBounded(t *testing.T) {
	const margin = 2 * time.Second // generous: this bounds a hang, it does not measure speed
	tests := []struct {
		plugin, kind string
		reasons      []string
		timeout      time.Duration
	}{
		{"loop", "test.loop", []string{kind.FaultTimeout}, 300 * time.Millisecond},
		// Room for the memory cap to be the bound that stops it, even on a
		// loaded machine: growing to 32 MiB is not instant.
		{"alloc", "test.alloc", []string{kind.FaultMemory, kind.FaultTrap}, 5 * time.Second},
		// Where the timeout is not the bound under test, it is long enough
		// that a loaded machine's first call (which initializes the
		// instance) cannot run into it first.
		{"trap", "test.trap", []string{kind.FaultTrap}, 5 * time.Second},
		{"bigout", "test.bigout", []string{kind.FaultTooLarge}, 5 * time.Second},
		{"offcontract", "test.offcontract", []string{kind.FaultContract}, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.plugin, func(t *testing.T) {
			m := &recordingMetrics{}
			dir := pluginDir(t, "", tt.plugin)
			timeout := tt.timeout
			r := newRuntime(t, Config{Dir: dir, Metrics: m, Limits: Limits{ObserveTimeout: timeout, MemoryMiB: 32}})
			ctx := context.Background()
			req := abi.ObserveRequest{Kind: tt.kind, WatchID: "w", Now: t0, Params: json.RawMessage(`{"n":0}`)}

			start := time.Now()
			obs, err := r.Observe(ctx, req)
			elapsed := time.Since(start)
			if err != nil {
				t.Fatalf("a fault must come back as an observation, got error %v", err)
			}
			if elapsed > timeout+margin {
				t.Fatalf("call took %s, bound is %s", elapsed, timeout+margin)
			}
			if obs.Status != abi.StatusPending || obs.Fault == nil || !slices.Contains(tt.reasons, obs.Fault.Reason) {
				t.Fatalf("obs = %+v (fault %v), want pending with fault %v", obs, obs.Fault, tt.reasons)
			}
			if !strings.HasPrefix(obs.Note, "plugin fault: ") {
				t.Fatalf("note = %q", obs.Note)
			}
			if n := m.count(tt.kind, abi.ExportObserve, obs.Fault.Reason); n != 1 {
				t.Fatalf("fault counted %d times", n)
			}
			if n := m.count(tt.kind, abi.ExportObserve, "ok"); n != 0 {
				t.Fatalf("a faulted call also counted as ok %d times", n)
			}

			// Other kinds are unaffected.
			if obs, err := r.Observe(ctx, timerReq(t0, t0, "t")); err != nil || obs.Status != abi.StatusSettled {
				t.Fatalf("timer after fault: %+v %v", obs, err)
			}
			// The plugin itself still serves.
			req.Params = json.RawMessage(`{"n":1}`)
			obs, err = r.Observe(ctx, req)
			if err != nil || obs.Status != abi.StatusPending || obs.Fault != nil || obs.Note != "quick" {
				t.Fatalf("next call: %+v %v", obs, err)
			}
		})
	}
}

func TestBadDescribeIsRefusedAlone(t *testing.T) {
	dir := pluginDir(t, "", "badschema")
	r := newRuntime(t, Config{Dir: dir})
	if _, ok := r.Lookup("timer"); !ok {
		t.Fatal("a bad plugin took the bundled timer down")
	}
	if _, ok := r.Lookup("test.badschema"); ok {
		t.Fatal("bad plugin loaded")
	}
	ps := r.Problems()
	if len(ps) != 1 || ps[0].Rule != "describe.params_schema" || ps[0].File != filepath.Join(dir, "badschema.wasm") {
		t.Fatalf("problems = %v", ps)
	}
	// Registering its kind says why.
	var ref *api.Error
	if _, err := r.Admit(context.Background(), "test.badschema", json.RawMessage(`{}`)); !errors.As(err, &ref) ||
		ref.Code != api.CodeWatchUnobservable || !strings.Contains(ref.Message, "did not load") {
		t.Fatalf("admit = %v", err)
	}
}

func TestTwoPluginsClaimingOneKind(t *testing.T) {
	timer := filepath.Join("..", "..", "plugins", "timer", "timer.wasm")
	dir := t.TempDir()
	copyFile(t, timer, filepath.Join(dir, "a.wasm"))
	copyFile(t, timer, filepath.Join(dir, "b.wasm"))

	r := newRuntime(t, Config{Dir: dir})
	if _, ok := r.Lookup("timer"); ok {
		t.Fatal("a contested kind must not be served")
	}
	ps := r.Problems()
	if len(ps) != 1 || ps[0].Rule != "kind.conflict" {
		t.Fatalf("problems = %v", ps)
	}
	for _, f := range []string{"a.wasm", "b.wasm", "bundled:timer/timer.wasm"} {
		if !strings.Contains(ps[0].Error(), f) {
			t.Fatalf("conflict does not name %s: %v", f, ps[0])
		}
	}

	// The registry settles it: b.wasm serves, and each file it set aside
	// is reported, not ignored.
	if err := os.WriteFile(filepath.Join(dir, RegistryFile), []byte(`{"kinds":{"timer":{"wasm":"b.wasm"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := r.Reload(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	info, ok := r.Lookup("timer")
	if !ok || info.File != filepath.Join(dir, "b.wasm") {
		t.Fatalf("after choosing: %+v %v", info, rep.Problems)
	}
	checkPinned(t, rep.Problems, filepath.Join(dir, "b.wasm"), "bundled:timer/timer.wasm", filepath.Join(dir, "a.wasm"))
	checkPinned(t, r.Problems(), filepath.Join(dir, "b.wasm"), "bundled:timer/timer.wasm", filepath.Join(dir, "a.wasm"))
}

// checkPinned checks that the problems are one kind.pinned for the timer
// kind per file in setAside, in order, each naming the file that serves.
func checkPinned(t *testing.T, ps []*LoadError, serves string, setAside ...string) {
	t.Helper()
	var files []string
	for _, p := range ps {
		files = append(files, p.File)
		if p.Rule != RuleKindPinned || p.Kind != "timer" || !strings.Contains(p.Error(), serves) || !strings.Contains(p.Error(), "kinds.timer.wasm") {
			t.Errorf("problem %v: want %s for kind timer naming %s and the setting", p, RuleKindPinned, serves)
		}
	}
	slices.Sort(files)
	want := slices.Sorted(slices.Values(setAside))
	if !slices.Equal(files, want) {
		t.Fatalf("problems name %v, want %v", files, want)
	}
}

// A reload logs what loaded, each file that did not (a pinned-out one
// included) and a count, whoever asked for it: the API's reload calls
// Reload alone, so the log must come from here.
func TestReloadLogsWhatLoadedAndWhatNot(t *testing.T) {
	timer := filepath.Join("..", "..", "plugins", "timer", "timer.wasm")
	dir := t.TempDir()
	copyFile(t, timer, filepath.Join(dir, "a.wasm"))
	if err := os.WriteFile(filepath.Join(dir, RegistryFile), []byte(`{"kinds":{"timer":{"wasm":"a.wasm"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf syncbuf.Buffer
	r := newRuntime(t, Config{Dir: dir, Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	buf.Reset()
	if _, err := r.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	type line struct {
		Msg, Kind, File, Rule string
		Kinds, Problems       int
	}
	var got []line
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var ln line
		if err := json.Unmarshal([]byte(l), &ln); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		got = append(got, ln)
	}
	has := func(want line) bool { return slices.Contains(got, want) }
	loaded := len(r.Plugins())
	for _, want := range []line{
		{Msg: "plugin loaded", Kind: "timer", File: filepath.Join(dir, "a.wasm")},
		{Msg: "plugin not loaded", Kind: "timer", File: "bundled:timer/timer.wasm", Rule: RuleKindPinned},
		{Msg: "plugins loaded", Kinds: loaded, Problems: 1},
	} {
		if !has(want) {
			t.Errorf("no log line %+v in:\n%s", want, buf.String())
		}
	}

	// A reload that cannot read the registry keeps the plugins before,
	// and says so.
	if err := os.WriteFile(filepath.Join(dir, RegistryFile), []byte(`{"kinds":`), 0o644); err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if _, err := r.Reload(context.Background()); err == nil {
		t.Fatal("a broken registry reloaded")
	}
	if !strings.Contains(buf.String(), "plugin reload failed") {
		t.Fatalf("the failed reload logged:\n%s", buf.String())
	}
}

func TestConcurrentCallsNeverShareAnInstance(t *testing.T) {
	r := newRuntime(t, Config{Limits: Limits{PoolSize: 3}})
	const workers, calls = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers*calls)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				at := t0.Add(time.Duration(w*1000+i) * time.Second)
				id := fmt.Sprintf("w%d-%d", w, i)
				obs, err := r.Observe(context.Background(), timerReq(at, at, id))
				if err != nil {
					errs <- err
					return
				}
				want := "reached " + at.Format(time.RFC3339)
				if obs.Status != abi.StatusSettled || obs.Outcome.Summary != want {
					errs <- fmt.Errorf("%s: got %+v, want summary %q", id, obs, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// blockingFetcher holds every fetch until release is closed.
type blockingFetcher struct {
	entered chan FetchCall
	release chan struct{}
}

func (f *blockingFetcher) Fetch(ctx context.Context, call FetchCall) abi.FetchResponse {
	f.entered <- call
	select {
	case <-f.release:
		return abi.FetchResponse{Status: 200, Body: []byte("hello")}
	case <-ctx.Done():
		return abi.FetchResponse{Failure: &abi.FetchFailure{Reason: abi.FetchTimeout, Message: ctx.Err().Error()}}
	}
}

const fetchGrant = `{"kinds":{"test.fetcher":{"capabilities":["fetch"],"fetch_hosts":["example.org"]}}}`

func TestFetchNeedsItsGrant(t *testing.T) {
	ctx := context.Background()
	params := json.RawMessage(`{"url":"https://example.org/x"}`)

	r := newRuntime(t, Config{Dir: pluginDir(t, "", "fetcher")})
	var ref *api.Error
	_, err := r.Admit(ctx, "test.fetcher", params)
	if !errors.As(err, &ref) || ref.Code != api.CodeWatchUnobservable || ref.Setting != "kinds.test.fetcher.capabilities" ||
		!strings.Contains(ref.Message, "kinds.test.fetcher.capabilities") {
		t.Fatalf("ungranted admit = %v", err)
	}
	// Even called anyway, the host function refuses before any fetcher.
	obs, err := r.Observe(ctx, abi.ObserveRequest{Kind: "test.fetcher", Now: t0, Params: params})
	if err != nil || obs.Status != abi.StatusPending || !strings.Contains(obs.Note, abi.FetchNotGranted) {
		t.Fatalf("ungranted observe = %+v %v", obs, err)
	}

	f := &blockingFetcher{entered: make(chan FetchCall, 1), release: make(chan struct{})}
	close(f.release)
	r = newRuntime(t, Config{Dir: pluginDir(t, fetchGrant, "fetcher"), Fetcher: f})
	if _, err := r.Admit(ctx, "test.fetcher", params); err != nil {
		t.Fatalf("granted admit = %v", err)
	}
	obs, err = r.Observe(ctx, abi.ObserveRequest{Kind: "test.fetcher", Now: t0, Params: params})
	if err != nil || obs.Status != abi.StatusSettled || obs.Outcome.Result != "200" || obs.Outcome.Summary != "hello" {
		t.Fatalf("granted observe = %+v %v", obs, err)
	}
	call := <-f.entered
	if call.Kind != "test.fetcher" || call.Request.URL != "https://example.org/x" || call.Request.Method != "GET" ||
		len(call.Entry.FetchHosts) != 1 || call.Entry.FetchHosts[0] != "example.org" {
		t.Fatalf("fetch call = %+v", call)
	}
}

// The cadence the scheduler puts on the call's context reaches the
// Fetcher on the call, so the issuer can hold a result for it.
func TestFetchCarriesTheCadence(t *testing.T) {
	f := &blockingFetcher{entered: make(chan FetchCall, 2), release: make(chan struct{})}
	close(f.release)
	r := newRuntime(t, Config{Dir: pluginDir(t, fetchGrant, "fetcher"), Fetcher: f})
	req := abi.ObserveRequest{Kind: "test.fetcher", Now: t0, Params: json.RawMessage(`{"url":"https://example.org/x"}`)}
	if _, err := r.Observe(kind.WithCadence(context.Background(), time.Minute), req); err != nil {
		t.Fatal(err)
	}
	if call := <-f.entered; call.Every != time.Minute {
		t.Fatalf("every on the fetch call: %s", call.Every)
	}
	if _, err := r.Observe(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if call := <-f.entered; call.Every != 0 {
		t.Fatalf("every outside a probe: %s", call.Every)
	}
}

// reportingFetcher answers every fetch with an unextractable body and
// records the extraction reports it is given.
type reportingFetcher struct {
	mu      sync.Mutex
	reports []ExtractionCall
}

func (f *reportingFetcher) Fetch(context.Context, FetchCall) abi.FetchResponse {
	return abi.FetchResponse{Status: 200, Body: []byte("unextractable"), Fingerprint: "fp-1"}
}

func (f *reportingFetcher) ExtractionFailed(_ context.Context, call ExtractionCall) abi.ExtractionFailedResponse {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reports = append(f.reports, call)
	return abi.ExtractionFailedResponse{Forgot: true}
}

// A plugin's report of a failed extraction reaches the Fetcher through
// vigil_extraction_failed, with the request as fetched and the answer's
// fingerprint; a Fetcher that keeps no validators answers unavailable.
func TestExtractionFailedReachesTheFetcher(t *testing.T) {
	ctx := context.Background()
	req := abi.ObserveRequest{Kind: "test.fetcher", Now: t0, Params: json.RawMessage(`{"url":"https://example.org/x"}`)}
	f := &reportingFetcher{}
	r := newRuntime(t, Config{Dir: pluginDir(t, fetchGrant, "fetcher"), Fetcher: f})
	obs, err := r.Observe(ctx, req)
	if err != nil || obs.Note != "extraction failed: forgot true, err <nil>" {
		t.Fatalf("observe = %+v %v", obs, err)
	}
	if len(f.reports) != 1 || f.reports[0].Kind != "test.fetcher" || f.reports[0].Request.Fingerprint != "fp-1" ||
		f.reports[0].Request.Request.URL != "https://example.org/x" || f.reports[0].Request.Request.Method != "GET" {
		t.Fatalf("reports = %+v", f.reports)
	}

	plain := struct{ Fetcher }{f} // a Fetcher without ExtractionFailed
	r = newRuntime(t, Config{Dir: pluginDir(t, fetchGrant, "fetcher"), Fetcher: plain})
	if obs, err := r.Observe(ctx, req); err != nil || !strings.Contains(obs.Note, abi.FetchUnavailable) {
		t.Fatalf("observe without a reporter = %+v %v", obs, err)
	}
	if len(f.reports) != 1 {
		t.Fatalf("reports = %+v", f.reports)
	}

	// A kind not granted fetch could have fetched nothing to report.
	r = newRuntime(t, Config{Dir: pluginDir(t, "", "fetcher"), Fetcher: f})
	only := req
	only.Params = json.RawMessage(`{"url":"https://example.org/x","report_only":true}`)
	if obs, err := r.Observe(ctx, only); err != nil || !strings.Contains(obs.Note, abi.FetchNotGranted) {
		t.Fatalf("ungranted report = %+v %v", obs, err)
	}
	if len(f.reports) != 1 {
		t.Fatalf("reports = %+v", f.reports)
	}
}

func TestFetchHonoursTheCallTimeout(t *testing.T) {
	f := &blockingFetcher{entered: make(chan FetchCall, 1), release: make(chan struct{})}
	r := newRuntime(t, Config{Dir: pluginDir(t, fetchGrant, "fetcher"), Fetcher: f, Limits: Limits{ObserveTimeout: 200 * time.Millisecond}})
	obs, err := r.Observe(context.Background(), abi.ObserveRequest{Kind: "test.fetcher", Now: t0, Params: json.RawMessage(`{"url":"https://example.org/"}`)})
	if err != nil {
		t.Fatal(err)
	}
	// Either the plugin saw the fetch time out and said pending, or the
	// module was interrupted first; both are pending, neither is settled.
	if obs.Status != abi.StatusPending {
		t.Fatalf("obs = %+v", obs)
	}
}

func TestReload(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	f := &blockingFetcher{entered: make(chan FetchCall, 1), release: make(chan struct{})}
	r := newRuntime(t, Config{Dir: dir, Fetcher: f})
	if _, ok := r.Lookup("test.fetcher"); ok {
		t.Fatal("loaded before it was added")
	}

	// Add.
	copyFile(t, testPlugin(t, "fetcher"), filepath.Join(dir, "fetcher.wasm"))
	if err := os.WriteFile(filepath.Join(dir, RegistryFile), []byte(fetchGrant), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Lookup("test.fetcher"); !ok {
		t.Fatalf("not loaded after add: %v", r.Problems())
	}

	// A call in flight while the plugin is removed finishes on the old module.
	done := make(chan kind.Observation, 1)
	go func() {
		obs, _ := r.Observe(ctx, abi.ObserveRequest{Kind: "test.fetcher", Now: t0, Params: json.RawMessage(`{"url":"https://example.org/"}`)})
		done <- obs
	}()
	<-f.entered
	if err := os.Remove(filepath.Join(dir, "fetcher.wasm")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Lookup("test.fetcher"); ok {
		t.Fatal("still loaded after remove")
	}
	close(f.release)
	if obs := <-done; obs.Status != abi.StatusSettled || obs.Outcome.Result != "200" {
		t.Fatalf("in-flight call: %+v", obs)
	}
	if _, err := r.Observe(ctx, abi.ObserveRequest{Kind: "test.fetcher", Now: t0, Params: json.RawMessage(`{"url":"x"}`)}); !errors.Is(err, kind.ErrUnknownKind) {
		t.Fatalf("removed kind: %v", err)
	}

	// A registry entry that names a file that is not there is reported.
	if err := os.WriteFile(filepath.Join(dir, RegistryFile), []byte(`{"kinds":{"test.fetcher":{"wasm":"fetcher.wasm"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if ps := r.Problems(); len(ps) != 1 || ps[0].Rule != "registry.wasm" || !strings.Contains(ps[0].Error(), "fetcher.wasm") {
		t.Fatalf("problems = %v", ps)
	}
}

func TestReloadKeepsUnchangedModules(t *testing.T) {
	r := newRuntime(t, Config{})
	before := r.set.Load().kinds["timer"].mod
	if _, err := r.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := r.set.Load().kinds["timer"].mod; after != before {
		t.Fatal("an unchanged plugin was recompiled on reload")
	}
}

func TestWrongKindIsAnErrorNotPending(t *testing.T) {
	r := newRuntime(t, Config{})
	l := r.set.Load().kinds["timer"]
	req := timerReq(t0, t0, "w")
	req.Kind = "ci"
	in, _ := json.Marshal(req)
	_, err := r.invoke(context.Background(), l, abi.ExportObserve, in, time.Second, nil)
	if !errors.Is(err, kind.ErrRaised) || !strings.Contains(err.Error(), "routing bug") {
		t.Fatalf("err = %v", err)
	}
}

func TestRegistryErrorsRefuseToStart(t *testing.T) {
	tests := map[string]string{
		"unknown field":        `{"kinds":{"timer":{"capabilties":["fetch"]}}}`,
		"unknown capability":   `{"kinds":{"timer":{"capabilities":["teleport"]}}}`,
		"bad kind":             `{"kinds":{"Timer":{}}}`,
		"wasm with a path":     `{"kinds":{"timer":{"wasm":"../timer.wasm"}}}`,
		"timeout too long":     `{"kinds":{"timer":{"timeout":"1h"}}}`,
		"memory too large":     `{"kinds":{"timer":{"memory_mib":8192}}}`,
		"read floor negative":  `{"kinds":{"timer":{"min_read_interval":"-1m"}}}`,
		"read floor too long":  `{"kinds":{"timer":{"min_read_interval":"25h"}}}`,
		"fetch host with path": `{"kinds":{"timer":{"fetch_hosts":["example.org/x"]}}}`,
		"bad private range":    `{"kinds":{"timer":{"private_ranges":["10.0.0.0"]}}}`,
		"inner wildcard host":  `{"kinds":{"timer":{"fetch_hosts":["api.*.com"]}}}`,
		"bad secret name":      `{"kinds":{"timer":{"secrets":["GitHub Token"]}}}`,
		"exec without grant":   `{"kinds":{"timer":{"capabilities":["exec"]}}}`,
		"grant without exec":   `{"kinds":{"timer":{"exec":{"programs":["true"]}}}}`,
		"exec no programs":     `{"kinds":{"timer":{"capabilities":["exec"],"exec":{"programs":[]}}}}`,
		"exec relative path":   `{"kinds":{"timer":{"capabilities":["exec"],"exec":{"programs":["bin/true"]}}}}`,
		"exec bad env":         `{"kinds":{"timer":{"capabilities":["exec"],"exec":{"programs":["true"],"env":["A-B"]}}}}`,
		"exec timeout":         `{"kinds":{"timer":{"capabilities":["exec"],"exec":{"programs":["true"],"max_timeout":"1h"}}}}`,
		"exec outlasts call":   `{"kinds":{"timer":{"capabilities":["exec"],"exec":{"programs":["true"],"max_timeout":"10s"},"timeout":"10s"}}}`,
		"wasm not .wasm":       `{"kinds":{"timer":{"wasm":"timer.so"}}}`,
		"not json":             `{"kinds":`,
	}
	for name, reg := range tests {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, RegistryFile), []byte(reg), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := New(context.Background(), Config{Dir: dir})
			var re *RegistryError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), RegistryFile) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

// An exec grant's programs are resolved when the kind loads; one that
// cannot be is that kind's load problem, naming the setting, and the
// kind is not served.
func TestExecProgramsResolveAtLoad(t *testing.T) {
	reg := `{"kinds":{"timer":{"capabilities":["exec"],"exec":{"programs":["nope"]}}}}`
	r := newRuntime(t, Config{Dir: pluginDir(t, reg),
		ResolvePrograms: func(list []string) ([]string, error) { return nil, errors.New(list[0] + " is not on PATH") }})
	if _, ok := r.Lookup("timer"); ok {
		t.Fatal("a kind whose programs do not resolve is served")
	}
	ps := r.Problems()
	if len(ps) != 1 || ps[0].Rule != "registry.exec" || !strings.Contains(ps[0].Error(), "kinds.timer.exec.programs") {
		t.Fatalf("problems %v", ps)
	}
}

func TestObserveTimeoutCoversTheExecGrant(t *testing.T) {
	l := Limits{}.withDefaults()
	if got := observeTimeout(l, Entry{}); got != 5*time.Second {
		t.Fatalf("default %s", got)
	}
	if got := observeTimeout(l, Entry{Timeout: Duration(time.Minute)}); got != time.Minute {
		t.Fatalf("registry timeout %s", got)
	}
	if got := observeTimeout(l, Entry{Exec: &ExecGrant{Programs: []string{"true"}}}); got <= DefaultExecTimeout {
		t.Fatalf("exec default %s does not cover the command's %s", got, DefaultExecTimeout)
	}
}

func TestMissingPluginDirRefusesToStart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nope")
	_, err := New(context.Background(), Config{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "plugin directory") || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v", err)
	}
	// The message names the directory, not os.DirFS's ".".
	if !strings.Contains(err.Error(), dir) {
		t.Fatalf("err = %v, does not name %s", err, dir)
	}
}

func TestPluginDirThatIsAFileRefusesToStart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New(context.Background(), Config{Dir: file})
	if err == nil || !strings.Contains(err.Error(), file) || !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("err = %v", err)
	}
}

func TestCompilationCacheIsWritten(t *testing.T) {
	dir := t.TempDir()
	r, err := New(context.Background(), Config{Bundled: newRuntime(t, Config{}).cfg.Bundled, CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		t.Fatalf("cache dir empty: %v", err)
	}
}

// A burst of calls waits for an instance instead of growing the pool.
func TestPoolBoundsConcurrentInstances(t *testing.T) {
	const pool, callers = 2, 6
	f := &blockingFetcher{entered: make(chan FetchCall, callers), release: make(chan struct{})}
	r := newRuntime(t, Config{Dir: pluginDir(t, fetchGrant, "fetcher"), Fetcher: f, Limits: Limits{PoolSize: pool}})
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = r.Observe(context.Background(), abi.ObserveRequest{Kind: "test.fetcher", Now: t0, Params: json.RawMessage(`{"url":"https://example.org/"}`)})
		}()
	}
	// Wait until every caller is accounted for: blocked in a fetch (it has
	// an instance) or queued for one.
	m := r.set.Load().kinds["test.fetcher"].mod
	entered := 0
	for entered+int(m.queued.Load()) < callers {
		select {
		case <-f.entered:
			entered++
		default:
			runtime.Gosched()
		}
	}
	if entered != pool {
		t.Fatalf("%d calls got an instance at once, pool is %d", entered, pool)
	}
	close(f.release)
	wg.Wait()
	if got := len(f.entered); got != callers-pool {
		t.Fatalf("%d later fetches, want %d", got, callers-pool)
	}
}

// A registry entry's config reaches every instance, including the one that
// ran describe, and a reload's new config reaches warm instances too.
func TestRegistryConfigReachesEveryCall(t *testing.T) {
	ctx := context.Background()
	dir := pluginDir(t, `{"kinds":{"test.config":{"config":{"greeting":"hello"}}}}`, "config")
	r := newRuntime(t, Config{Dir: dir, Limits: Limits{PoolSize: 3}})
	req := abi.ObserveRequest{Kind: "test.config", Now: t0, Params: json.RawMessage(`{}`)}
	check := func(want string) {
		t.Helper()
		var wg sync.WaitGroup
		notes := make(chan string, 6)
		for range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				obs, err := r.Observe(ctx, req)
				if err != nil {
					t.Error(err)
				}
				notes <- obs.Note
			}()
		}
		wg.Wait()
		close(notes)
		for n := range notes {
			if n != want {
				t.Fatalf("a call saw config %q, want %q", n, want)
			}
		}
	}
	check("hello")
	if err := os.WriteFile(filepath.Join(dir, RegistryFile), []byte(`{"kinds":{"test.config":{"config":{"greeting":"bye"}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	check("bye")
}

func TestReloadReplacesAFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.wasm")
	copyFile(t, testPlugin(t, "config"), file)
	r := newRuntime(t, Config{Dir: dir})
	if _, ok := r.Lookup("test.config"); !ok {
		t.Fatal("not loaded")
	}
	copyFile(t, testPlugin(t, "offcontract"), file)
	if _, err := r.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Lookup("test.config"); ok {
		t.Fatal("the replaced plugin still serves")
	}
	if info, ok := r.Lookup("test.offcontract"); !ok || info.File != file {
		t.Fatalf("the replacement does not serve: %+v %v", info, r.Problems())
	}
}

// A plugin cannot read host files, make its own HTTP requests through
// Extism, or see the real clock.
func TestSandbox(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	r := newRuntime(t, Config{Dir: pluginDir(t, "", "sandbox")})
	observe := func(params string) kind.Observation {
		t.Helper()
		obs, err := r.Observe(context.Background(), abi.ObserveRequest{Kind: "test.sandbox", Now: t0, Params: json.RawMessage(params)})
		if err != nil {
			t.Fatal(err)
		}
		return obs
	}

	if obs := observe(`{"try":"fs"}`); obs.Fault != nil || !strings.HasPrefix(obs.Note, "fs: ") || obs.Note == "fs: <nil>" {
		t.Fatalf("file read: %+v", obs)
	}
	if obs := observe(`{"try":"http","url":"` + srv.URL + `"}`); obs.Fault == nil || !strings.Contains(obs.Note, "not allowed") {
		t.Fatalf("http_request: %+v", obs)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the plugin reached a server %d times", n)
	}
	obs := observe(`{"try":"clock"}`)
	if !strings.HasPrefix(obs.Note, "clock: 2022-01-01") {
		t.Fatalf("the guest clock is not the fixed one: %q", obs.Note)
	}
}

// A call whose caller has already gone does not take (and then discard)
// a warm instance.
func TestCancelledCallSparesTheInstances(t *testing.T) {
	r := newRuntime(t, Config{})
	m := r.set.Load().kinds["timer"].mod
	m.mu.Lock()
	warm := len(m.idle)
	m.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 20 {
		if _, err := r.Observe(ctx, timerReq(t0, t0, "w")); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.idle) != warm {
		t.Fatalf("warm instances %d -> %d", warm, len(m.idle))
	}
}

// A registry grant of a secret the host does not hold grants nothing: the
// plugin's admit sees only held secrets, and so does the fetcher.
func TestSecretGrantNeedsAHeldSecret(t *testing.T) {
	reg := `{"kinds":{"test.fetcher":{"capabilities":["fetch"],"fetch_hosts":["example.org"],"secrets":["held","missing"]}}}`
	f := &blockingFetcher{entered: make(chan FetchCall, 1), release: make(chan struct{})}
	close(f.release)
	r := newRuntime(t, Config{Dir: pluginDir(t, reg, "fetcher"), Fetcher: f, SecretNames: []string{"held", "other"}})
	info, ok := r.Lookup("test.fetcher")
	if !ok || !slices.Equal(info.Grants.Secrets, []string{"held"}) {
		t.Fatalf("grants = %+v", info.Grants)
	}
	if _, err := r.Observe(context.Background(), abi.ObserveRequest{Kind: "test.fetcher", Now: t0, Params: json.RawMessage(`{"url":"https://example.org/x"}`)}); err != nil {
		t.Fatal(err)
	}
	if call := <-f.entered; !slices.Equal(call.Entry.Secrets, []string{"held"}) {
		t.Fatalf("fetch call entry secrets = %v", call.Entry.Secrets)
	}
}

// Changed closes once a reload's set is in force, so a waiter reading
// Plugins then sees the new set (a cluster node republishes its digest
// from it); a channel asked for after that waits for the next reload.
func TestChangedClosesOnceTheNewSetIsInForce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r := newRuntime(t, Config{Dir: dir, Bundled: fstest.MapFS{}})
	changed := r.Changed()
	select {
	case <-changed:
		t.Fatal("closed before any reload")
	default:
	}
	copyFile(t, testPlugin(t, "fetcher"), filepath.Join(dir, "fetcher.wasm"))
	if err := os.WriteFile(filepath.Join(dir, RegistryFile), []byte(fetchGrant), 0o644); err != nil {
		t.Fatal(err)
	}
	seen := make(chan []kind.Info, 1)
	go func() {
		<-changed
		seen <- r.Plugins()
	}()
	if _, err := r.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if got := <-seen; len(got) != 1 || got[0].Kind != "test.fetcher" {
		t.Fatalf("plugins when Changed closed: %+v", got)
	}
	next := r.Changed()
	select {
	case <-next:
		t.Fatal("the next channel is closed before the next reload")
	default:
	}
	if _, err := r.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	<-next
}
