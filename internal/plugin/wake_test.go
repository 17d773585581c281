package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"pgregory.net/rapid"

	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/sdk/abi"
)

// wakeRuntime is a runtime over the test.wake plugin and the others
// named, with a generous call timeout (the cores are shared, and these
// tests are about answers) unless lim says otherwise.
func wakeRuntime(t *testing.T, lim Limits, m Metrics, names ...string) *Runtime {
	t.Helper()
	if lim.CallTimeout == 0 {
		lim.CallTimeout = 10 * time.Second
	}
	dir := pluginDir(t, `{"kinds":{"test.dests":{"capabilities":["fetch"],"fetch_hosts":["*"]}}}`, append([]string{"wake"}, names...)...)
	return newRuntime(t, Config{Bundled: fstest.MapFS{}, Dir: dir, Limits: lim, Metrics: m})
}

// wakeBody is a test.wake event whose body is body.
func wakeBody(body string) abi.WakeRequest {
	return abi.WakeRequest{Event: "check_suite", Source: abi.SourceGitHub, Body: json.RawMessage(body)}
}

// The load reads which plugins export wake, raw or through the Go SDK's
// sdk/wake, into Info.Wakes; a kind without it answers ErrNoWake and an
// unknown kind ErrUnknownKind, with no plugin called.
func TestWakeIsReadFromTheExports(t *testing.T) {
	m := &recordingMetrics{}
	r := wakeRuntime(t, Limits{}, m, "wakesdk", "dests")
	if p := r.Problems(); len(p) != 0 {
		t.Fatalf("problems: %v", p)
	}
	for k, wakes := range map[string]bool{"test.wake": true, "test.wakesdk": true, "test.dests": false} {
		info, ok := r.Lookup(k)
		if !ok || info.Wakes != wakes {
			t.Errorf("%s: wakes = %v, want %v", k, info.Wakes, wakes)
		}
	}
	keys, err := r.Wake(context.Background(), "test.wakesdk", wakeBody(`{"sha":"abc","repository":{"full_name":"a/b"}}`))
	if err != nil || !slices.Equal(keys, []string{"commit/abc"}) {
		t.Fatalf("the SDK plugin's wake: %q, %v", keys, err)
	}
	if _, err := r.Wake(context.Background(), "test.dests", wakeBody(`{}`)); !errors.Is(err, kind.ErrNoWake) {
		t.Fatalf("a plugin without wake: %v, want ErrNoWake", err)
	}
	if _, err := r.Wake(context.Background(), "test.none", wakeBody(`{}`)); !errors.Is(err, kind.ErrUnknownKind) {
		t.Fatalf("an unknown kind: %v, want ErrUnknownKind", err)
	}
	if n := m.count("test.dests", abi.ExportWake, "ok") + m.count("test.dests", abi.ExportWake, kind.FaultRaised); n != 0 {
		t.Fatalf("the plugin without wake was called %d times", n)
	}
	// The runtime's kinds are Wakers, as the kinds registry serves them.
	reg := kind.NewRegistry()
	newRuntime(t, Config{Bundled: fstest.MapFS{}, Dir: pluginDir(t, "", "wake"), Kinds: reg, Limits: Limits{CallTimeout: 10 * time.Second}})
	k, ok := reg.Get("test.wake")
	if _, isWaker := k.(kind.Waker); !ok || !isWaker || !k.Info().Wakes {
		t.Fatalf("the registry's test.wake is %T (ok %v), not a Waker that wakes", k, ok)
	}
	if keys, err := reg.Wake(context.Background(), "test.wake", wakeBody(`{}`)); err != nil || !slices.Equal(keys, []string{"check_suite", "github"}) {
		t.Fatalf("through the registry: %q, %v", keys, err)
	}
}

// A plugin written with the SDK that sets Wake without importing
// sdk/wake exports no wake; the SDK refuses it, so the host does not load
// it, and says what to import.
func TestAWakeWithoutItsExportIsNotLoaded(t *testing.T) {
	r := newRuntime(t, Config{Bundled: fstest.MapFS{}, Dir: pluginDir(t, "", "wakeunlinked"), Limits: Limits{CallTimeout: 10 * time.Second}})
	ps := r.Problems()
	if len(ps) != 1 || ps[0].Rule != "describe.call" || !strings.Contains(ps[0].Error(), `import _ "github.com/vigilhq/vigil/sdk/wake"`) {
		t.Fatalf("problems %v; want describe.call naming the import", ps)
	}
}

// Wake's keys come back distinct, in the plugin's order.
func TestWakeAnswersTheKeys(t *testing.T) {
	r := wakeRuntime(t, Limits{}, nil)
	for _, tt := range []struct {
		answer string
		want   []string
	}{
		{`{"keys":["b","a","b"]}`, []string{"b", "a"}},
		{`{"keys":[]}`, []string{}},
		{`{"keys":null}`, []string{}},
		{`{"keys":["` + strings.Repeat("k", abi.MaxPartitionKey) + `"]}`, []string{strings.Repeat("k", abi.MaxPartitionKey)}},
	} {
		keys, err := r.Wake(context.Background(), "test.wake", wakeBody(`{"answer":`+tt.answer+`}`))
		if err != nil || !slices.Equal(keys, tt.want) {
			t.Errorf("%.60s: %q, %v; want %q", tt.answer, keys, err, tt.want)
		}
	}
	// The host hands the plugin the event as it came: its name, source
	// and body (null when there was none).
	keys, err := r.Wake(context.Background(), "test.wake", abi.WakeRequest{Event: "workflow_run", Source: abi.SourceGitea})
	if err != nil || !slices.Equal(keys, []string{"workflow_run", "gitea"}) {
		t.Fatalf("%q, %v", keys, err)
	}
}

func manyKeys(n int) string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	b, _ := json.Marshal(abi.WakeResponse{Keys: keys})
	return string(b)
}

// An answer off the contract, an error, a call past the timeout or an
// output past the cap is a fault that wakes nothing, never keys, and the
// plugin keeps serving after it.
func TestWakeOffTheContractIsAFault(t *testing.T) {
	m := &recordingMetrics{}
	r := wakeRuntime(t, Limits{OutputBytes: 64 << 10}, m)
	for _, tt := range []struct {
		name, body, reason string
		bad                bool // answers ErrBadWake
	}{
		{"not JSON", `{"answer":"keys"}`, kind.FaultContract, true},
		{"an unknown field", `{"answer":{"keys":[],"more":1}}`, kind.FaultContract, true},
		{"keys of another type", `{"answer":{"keys":"a"}}`, kind.FaultContract, true},
		{"too many keys", `{"answer":` + manyKeys(abi.MaxWakeKeys+1) + `}`, kind.FaultContract, true},
		{"an empty key", `{"answer":{"keys":["a",""]}}`, kind.FaultContract, true},
		{"a key over the bound", `{"answer":{"keys":["` + strings.Repeat("k", abi.MaxPartitionKey+1) + `"]}}`, kind.FaultContract, true},
		{"an error", `{"raise":"cannot read it"}`, kind.FaultRaised, false},
		{"output over the cap", `{"answer":{"keys":["` + strings.Repeat("k", 70<<10) + `"]}}`, kind.FaultTooLarge, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			keys, err := r.Wake(context.Background(), "test.wake", wakeBody(tt.body))
			var ce *kind.CallError
			if keys != nil || !errors.As(err, &ce) || ce.Reason != tt.reason || ce.Export != abi.ExportWake || errors.Is(err, ErrBadWake) != tt.bad {
				t.Fatalf("wake = %q, %v; want a %s fault (ErrBadWake %v)", keys, err, tt.reason, tt.bad)
			}
		})
	}
	if keys, err := r.Wake(context.Background(), "test.wake", wakeBody(`{"answer":`+manyKeys(abi.MaxWakeKeys)+`}`)); err != nil || len(keys) != abi.MaxWakeKeys {
		t.Fatalf("%d keys at the bound: %v", len(keys), err)
	}
	if n := m.count("test.wake", abi.ExportWake, kind.FaultContract); n != 6 {
		t.Fatalf("%d wake calls counted bad_output, want 6", n)
	}
}

// Wake is bounded by the call timeout, as admit is: a wake that never
// answers is interrupted, its instance discarded, and the next call is
// served.
func TestWakeIsBoundedByTheCallTimeout(t *testing.T) {
	r := wakeRuntime(t, Limits{CallTimeout: 300 * time.Millisecond}, nil)
	start := time.Now()
	_, err := r.Wake(context.Background(), "test.wake", wakeBody(`{"loop":true}`))
	var ce *kind.CallError
	if !errors.As(err, &ce) || ce.Reason != kind.FaultTimeout {
		t.Fatalf("wake = %v, want a timeout", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the timeout took %s", took)
	}
	// A slow instance start on a busy machine is not this test's question:
	// retry the sound call a few times.
	var keys []string
	for range 5 {
		if keys, err = r.Wake(context.Background(), "test.wake", wakeBody(`{}`)); err == nil {
			break
		}
	}
	if err != nil || len(keys) != 2 {
		t.Fatalf("after the timeout: %q, %v", keys, err)
	}
}

// An event off what the wake input promises a plugin is the caller's
// bug: refused before any plugin is called.
func TestWakeRefusesAnEventOffTheContract(t *testing.T) {
	m := &recordingMetrics{}
	r := wakeRuntime(t, Limits{}, m)
	for name, ev := range map[string]abi.WakeRequest{
		"an unknown source":      {Event: "push", Source: "gitlab"},
		"no source":              {Event: "push"},
		"a long event name":      {Event: strings.Repeat("e", abi.MaxWakeEvent+1), Source: abi.SourceGitHub},
		"a space in the name":    {Event: "check suite", Source: abi.SourceGitHub},
		"a body that is no JSON": {Event: "push", Source: abi.SourceGitHub, Body: json.RawMessage(`{"a":`)},
	} {
		if _, err := r.Wake(context.Background(), "test.wake", ev); !errors.Is(err, ErrBadEvent) {
			t.Errorf("%s: %v, want ErrBadEvent", name, err)
		}
	}
	if n := m.count("test.wake", abi.ExportWake, "ok"); n != 0 {
		t.Fatalf("the plugin was called %d times", n)
	}
	if _, err := r.Wake(context.Background(), "test.wake", abi.WakeRequest{Event: strings.Repeat("e", abi.MaxWakeEvent), Source: abi.SourceStandard}); err != nil {
		t.Fatalf("a name at the bound: %v", err)
	}
}

// wasmExportModule is a minimal binary module with an export section
// naming the given functions, and a memory export beside them.
func wasmExportModule(funcs []string) []byte {
	leb := func(n int) []byte {
		var out []byte
		for {
			c := byte(n & 0x7f)
			n >>= 7
			if n != 0 {
				out = append(out, c|0x80)
				continue
			}
			return append(out, c)
		}
	}
	name := func(s string) []byte { return append(leb(len(s)), s...) }
	sec := leb(len(funcs) + 1)
	sec = append(append(sec, name("memory")...), 2, 0)
	for i, f := range funcs {
		sec = append(append(sec, name(f)...), 0)
		sec = append(sec, leb(i)...)
	}
	b := []byte("\x00asm\x01\x00\x00\x00")
	b = append(b, 3, 1, 0) // a function section with no functions
	b = append(b, 7)
	b = append(b, leb(len(sec))...)
	return append(b, sec...)
}

func TestWasmFuncExportsReadsTheExportSection(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		funcs := rapid.SliceOfN(rapid.String(), 0, 200).Draw(t, "funcs")
		got, err := wasmFuncExports(wasmExportModule(funcs))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, funcs) && !(len(got) == 0 && len(funcs) == 0) {
			t.Fatalf("read %q, want %q", got, funcs)
		}
	})
	if !exportsWake(wasmExportModule([]string{"describe", "wake"})) || exportsWake(wasmExportModule([]string{"describe", "wakes"})) {
		t.Fatal("exportsWake misreads the section")
	}
	if exportsWake([]byte("not wasm")) {
		t.Fatal("an unreadable module exports wake")
	}
}

// FuzzWasmFuncExports: any bytes are read without a panic, and what
// reads as a module reads the same again.
func FuzzWasmFuncExports(f *testing.F) {
	f.Add(wasmExportModule([]string{"wake"}))
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x07\xff\xff\xff\xff\x0f"))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, errA := wasmFuncExports(b)
		c, errC := wasmFuncExports(b)
		if (errA == nil) != (errC == nil) || !slices.Equal(a, c) {
			t.Fatal("two reads of the same bytes differ")
		}
	})
}
