package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"

	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/sdk/abi"
)

// module is one compiled plugin file with its pool of warm instances. A
// module is immutable once built; a reload that changes the file builds a
// new one, and the old one closes when its last in-flight call returns.
type module struct {
	file     string
	sum      string // sha256 of the .wasm
	pages    uint32
	compiled *extism.CompiledPlugin
	lim      Limits
	hostCtx  *hostCtx
	walltime sys.Walltime // nil: wazero's fake clock

	// slots bounds instances checked out at once; idle holds warm ones;
	// queued counts callers waiting for a slot.
	slots  chan struct{}
	queued atomic.Int64
	mu     sync.Mutex
	idle   []*instance

	// lifecycle: calls in flight, and whether the registry still uses it.
	inflight int
	retired  bool
	closed   bool
}

// hostCtx is what the module's host functions need to know about the kind
// they serve; it is filled in once describe has said the kind.
type hostCtx struct {
	mu      sync.RWMutex
	kind    string
	entry   Entry
	fetch   Fetcher
	exec    Execer
	metrics Metrics
}

func (h *hostCtx) get() (string, Entry) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.kind, h.entry
}

func (h *hostCtx) set(kind string, e Entry) {
	h.mu.Lock()
	h.kind, h.entry = kind, e
	h.mu.Unlock()
}

// instance is one warm plugin instance. It is used by one goroutine at a
// time: an Extism instance shared by two goroutines corrupts for good.
type instance struct {
	p      *extism.Plugin
	stderr *tailBuffer
}

// compile builds a module from wasm bytes. It does not instantiate.
func compile(ctx context.Context, cfg *runtimeConfig, file, sum string, wasm []byte, memMiB uint32, hc *hostCtx) (*module, error) {
	if err := checkImports(wasm); err != nil {
		return nil, err
	}
	pages := memMiB * 16 // 64 KiB pages
	rc := wazero.NewRuntimeConfig().
		WithCloseOnContextDone(true).
		WithCompilationCache(cfg.cache)
	manifest := extism.Manifest{
		Wasm: []extism.Wasm{extism.WasmData{Data: wasm, Name: "main"}},
		// MaxPages caps every memory of the runtime, the guest's and the
		// Extism kernel's alike (Extism sets it on the runtime config).
		Memory: &extism.ManifestMemory{MaxPages: pages, MaxVarBytes: 0, MaxHttpResponseBytes: 0},
		// AllowedHosts empty: Extism's own http_request is denied. The only
		// way out is vigil_fetch, which the host screens.
	}
	compiled, err := extism.NewCompiledPlugin(ctx, manifest, extism.PluginConfig{
		RuntimeConfig: rc,
		EnableWasi:    true,
	}, []extism.HostFunction{fetchHostFunction(hc), extractionHostFunction(hc), execHostFunction(hc)})
	if err != nil {
		return nil, err
	}
	m := &module{
		file:     file,
		sum:      sum,
		pages:    pages,
		compiled: compiled,
		lim:      cfg.limits,
		hostCtx:  hc,
		slots:    make(chan struct{}, cfg.limits.PoolSize),
	}
	if clock := cfg.wallClock; clock != nil {
		m.walltime = func() (int64, int32) {
			t := clock()
			return t.Unix(), int32(t.Nanosecond())
		}
	}
	return m, nil
}

// acquire marks a call in flight; false once the module is closed.
func (m *module) acquire() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	m.inflight++
	return true
}

func (m *module) release(ctx context.Context) {
	m.mu.Lock()
	m.inflight--
	done := m.retired && m.inflight == 0 && !m.closed
	if done {
		m.closed = true
	}
	m.mu.Unlock()
	if done {
		m.shutdown(ctx)
	}
}

// retire takes the module out of service: it closes now if idle, else when
// its last call returns.
func (m *module) retire(ctx context.Context) {
	m.mu.Lock()
	m.retired = true
	done := m.inflight == 0 && !m.closed
	if done {
		m.closed = true
	}
	m.mu.Unlock()
	if done {
		m.shutdown(ctx)
	}
}

func (m *module) shutdown(ctx context.Context) {
	m.mu.Lock()
	idle := m.idle
	m.idle = nil
	m.mu.Unlock()
	for _, in := range idle {
		_ = in.p.Close(ctx)
	}
	_ = m.compiled.Close(ctx)
}

// get checks an instance out, waiting for a slot; the pool never holds
// more than PoolSize instances, so a burst of calls queues instead of
// growing memory.
func (m *module) get(ctx context.Context) (*instance, error) {
	select {
	case m.slots <- struct{}{}:
	default:
		m.queued.Add(1)
		select {
		case m.slots <- struct{}{}:
			m.queued.Add(-1)
		case <-ctx.Done():
			m.queued.Add(-1)
			return nil, ctx.Err()
		}
	}
	m.mu.Lock()
	if n := len(m.idle); n > 0 {
		in := m.idle[n-1]
		m.idle = m.idle[:n-1]
		m.mu.Unlock()
		return in, nil
	}
	m.mu.Unlock()
	in, err := m.newInstance(ctx)
	if err != nil {
		<-m.slots
		return nil, err
	}
	return in, nil
}

// put returns an instance; a broken one is closed instead.
func (m *module) put(ctx context.Context, in *instance, broken bool) {
	if broken {
		_ = in.p.Close(ctx)
	} else {
		m.mu.Lock()
		m.idle = append(m.idle, in)
		m.mu.Unlock()
	}
	<-m.slots
}

func (m *module) newInstance(ctx context.Context) (*instance, error) {
	stderr := &tailBuffer{max: 2048}
	mc := wazero.NewModuleConfig().WithStderr(stderr).WithStdout(discard{})
	if m.walltime != nil {
		mc = mc.WithWalltime(m.walltime, sys.ClockResolution(time.Microsecond))
	}
	p, err := m.compiled.Instance(ctx, extism.PluginInstanceConfig{ModuleConfig: mc})
	if err != nil {
		return nil, err
	}
	p.AllowedHosts = nil
	return &instance{p: p, stderr: stderr}, nil
}

// call runs one export with a bound. It returns the output, or a
// *kind.CallError saying what went wrong; an instance that trapped, timed out or
// hit its memory cap is discarded, never reused.
func (m *module) call(ctx context.Context, kindName, export string, input []byte, timeout time.Duration) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		// The caller has gone: do not spend (and then discard) an instance.
		return nil, err
	}
	in, err := m.get(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, &kind.CallError{Kind: kindName, Export: export, Reason: kind.FaultInstance, Err: err}
	}
	in.stderr.reset()
	// The kind's config is read on every call: the instance that ran
	// describe existed before the kind was known, and a reload may change
	// the entry while warm instances are kept.
	_, entry := m.hostCtx.get()
	in.p.Config = entry.Config
	cctx, cancel := context.WithTimeout(ctx, timeout)
	rc, out, err := in.p.CallWithContext(cctx, export, input)
	timedOut := cctx.Err() != nil
	cancel()

	switch {
	case err == nil && rc == 0:
		m.put(ctx, in, false)
		if len(out) > m.lim.OutputBytes {
			return nil, &kind.CallError{Kind: kindName, Export: export, Reason: kind.FaultTooLarge,
				Err: fmt.Errorf("%d bytes of output, cap %d", len(out), m.lim.OutputBytes)}
		}
		return out, nil
	case timedOut:
		m.put(ctx, in, true)
		if ctx.Err() != nil { // the caller gave up, not the plugin
			return nil, ctx.Err()
		}
		return nil, &kind.CallError{Kind: kindName, Export: export, Reason: kind.FaultTimeout,
			Err: fmt.Errorf("no answer within %s", timeout)}
	case err != nil && !fatal(err) && in.p.GetError() == err.Error():
		// error_set: the plugin answered, with an error. The instance is
		// sound.
		m.put(ctx, in, false)
		return nil, &kind.CallError{Kind: kindName, Export: export, Reason: kind.FaultRaised, Err: errors.New(err.Error())}
	case err == nil: // rc != 0 with no message
		m.put(ctx, in, false)
		return nil, &kind.CallError{Kind: kindName, Export: export, Reason: kind.FaultRaised, Err: fmt.Errorf("rc %d with no error message", rc)}
	default:
		m.put(ctx, in, true)
		reason := kind.FaultTrap
		if in.stderr.oom {
			reason = kind.FaultMemory
		}
		if tail := in.stderr.String(); tail != "" {
			err = fmt.Errorf("%w; stderr: %s", err, tail)
		}
		return nil, &kind.CallError{Kind: kindName, Export: export, Reason: reason, Err: err}
	}
}

// fatal reports whether err leaves the instance in an undefined state.
func fatal(err error) bool {
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		return true
	}
	s := err.Error()
	for _, sign := range []string{"wasm error:", "module closed", "module is closed", "recovered by wazero", "failed to initialize runtime"} {
		if strings.Contains(s, sign) {
			return true
		}
	}
	return false
}

// hostFunction is one of vigil's host functions: a JSON request of type Req
// in the block the plugin passes, a JSON answer of type Resp in the block
// it gets back. A block that cannot be read or is not a Req is answered
// fail(invalid, …) without reaching serve; an answer that cannot be
// encoded is replaced by fail(unavailable, …). answered, when set, sees
// every answer, those refusals included.
type hostFunction[Req, Resp any] struct {
	name                 string // abi.Host*
	what                 string // the request, in a refusal: "a fetch request"
	invalid, unavailable string // failure reasons
	fail                 func(reason, msg string) Resp
	serve                func(ctx context.Context, req Req) Resp
	answered             func(Resp)
}

func (h hostFunction[Req, Resp]) build() extism.HostFunction {
	f := extism.NewHostFunctionWithStack(h.name, func(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
		resp := func() Resp {
			raw, err := p.ReadBytes(stack[0])
			if err != nil {
				return h.fail(h.invalid, "unreadable request block")
			}
			_ = p.Free(stack[0])
			var req Req
			if err := abi.StrictUnmarshal(raw, &req); err != nil {
				return h.fail(h.invalid, "request is not "+h.what+": "+err.Error())
			}
			return h.serve(ctx, req)
		}()
		if h.answered != nil {
			h.answered(resp)
		}
		out, err := json.Marshal(resp)
		if err != nil {
			out, _ = json.Marshal(h.fail(h.unavailable, "unencodable response"))
		}
		off, err := p.WriteBytes(out)
		if err != nil {
			panic(fmt.Errorf("%s: writing the response: %w", h.name, err))
		}
		stack[0] = off
	}, []extism.ValueType{extism.ValueTypeI64}, []extism.ValueType{extism.ValueTypeI64})
	f.SetNamespace(abi.HostNamespace)
	return f
}

// fetchHostFunction is vigil_fetch: the plugin's one way to the network.
// It reads an abi.FetchRequest from kernel memory, asks the Fetcher, and
// writes back an abi.FetchResponse. It honours the call's context, so a
// plugin blocked in a fetch is interrupted by its timeout like any other.
func fetchHostFunction(hc *hostCtx) extism.HostFunction {
	return hostFunction[abi.FetchRequest, abi.FetchResponse]{
		name: abi.HostFetch, what: "a fetch request",
		invalid: abi.FetchInvalidRequestOptions, unavailable: abi.FetchUnavailable,
		fail: fetchFailure,
		serve: func(ctx context.Context, req abi.FetchRequest) abi.FetchResponse {
			name, entry := hc.get()
			if !slices.Contains(entry.Capabilities, abi.CapabilityFetch) {
				return fetchFailure(abi.FetchNotGranted, fmt.Sprintf("kind %s is not granted fetch (setting: kinds.%s.capabilities)", name, name))
			}
			if hc.fetch == nil {
				return fetchFailure(abi.FetchUnavailable, "this host has no fetch issuer")
			}
			return hc.fetch.Fetch(ctx, FetchCall{Kind: name, Entry: entry, Request: req, Every: kind.CadenceFrom(ctx)})
		},
		answered: func(resp abi.FetchResponse) {
			if hc.metrics == nil {
				return
			}
			kind, _ := hc.get()
			outcome := "ok"
			if resp.Failure != nil {
				outcome = resp.Failure.Reason
			}
			hc.metrics.Fetch(kind, outcome)
		},
	}.build()
}

// extractionHostFunction is vigil_extraction_failed: the plugin says the
// bytes a fetch answered failed its extraction, and the Fetcher, when it
// is an ExtractionReporter, forgets the validators it stored for them. A
// kind not granted fetch could have fetched nothing, and is refused.
func extractionHostFunction(hc *hostCtx) extism.HostFunction {
	return hostFunction[abi.ExtractionFailedRequest, abi.ExtractionFailedResponse]{
		name: abi.HostExtractionFailed, what: "an extraction report",
		invalid: abi.FetchInvalidRequestOptions, unavailable: abi.FetchUnavailable,
		fail: extractionFailure,
		serve: func(ctx context.Context, req abi.ExtractionFailedRequest) abi.ExtractionFailedResponse {
			kind, entry := hc.get()
			if !slices.Contains(entry.Capabilities, abi.CapabilityFetch) {
				return extractionFailure(abi.FetchNotGranted, fmt.Sprintf("kind %s is not granted fetch (setting: kinds.%s.capabilities)", kind, kind))
			}
			r, ok := hc.fetch.(ExtractionReporter)
			if !ok {
				return extractionFailure(abi.FetchUnavailable, "this host's fetcher keeps no validators")
			}
			return r.ExtractionFailed(ctx, ExtractionCall{Kind: kind, Entry: entry, Request: req})
		},
	}.build()
}

func extractionFailure(reason, msg string) abi.ExtractionFailedResponse {
	return abi.ExtractionFailedResponse{Failure: &abi.FetchFailure{Reason: reason, Message: msg}}
}

// execHostFunction is vigil_exec: a command the operator granted, run by
// the host in the watch's recipient's workspace. Like vigil_fetch it
// honours the call's context, so the plugin's timeout ends the command.
func execHostFunction(hc *hostCtx) extism.HostFunction {
	return hostFunction[abi.ExecRequest, abi.ExecResponse]{
		name: abi.HostExec, what: "an exec request",
		invalid: abi.ExecInvalidRequest, unavailable: abi.ExecUnavailable,
		fail: execFailure,
		serve: func(ctx context.Context, req abi.ExecRequest) abi.ExecResponse {
			name, entry := hc.get()
			if !slices.Contains(entry.Capabilities, abi.CapabilityExec) || entry.Exec == nil {
				return execFailure(abi.ExecNotGranted, fmt.Sprintf("kind %s is not granted exec (setting: kinds.%s.exec)", name, name))
			}
			if hc.exec == nil {
				return execFailure(abi.ExecUnavailable, "this host runs no commands")
			}
			return hc.exec.Exec(ctx, ExecCall{Kind: name, Entry: entry, Recipient: kind.RecipientFrom(ctx), RegisteredBy: kind.RegistrantFrom(ctx), Request: req})
		},
	}.build()
}

func execFailure(reason, msg string) abi.ExecResponse {
	return abi.ExecResponse{ExitCode: -1, Failure: &abi.FetchFailure{Reason: reason, Message: msg}}
}

func fetchFailure(reason, msg string) abi.FetchResponse {
	return abi.FetchResponse{Failure: &abi.FetchFailure{Reason: reason, Message: msg}}
}

// tailBuffer keeps the last max bytes written: a plugin's stderr, for the
// diagnostics of a trap, without letting a chatty plugin grow host memory.
// It also notes whether the guest said it ran out of memory at any point:
// a Go guest says so first and then dumps its goroutines, which push the
// line out of the tail.
type tailBuffer struct {
	max int
	b   []byte
	oom bool
}

var outOfMemory = []byte("out of memory")

func (t *tailBuffer) Write(p []byte) (int, error) {
	if !t.oom {
		// Look across the boundary with what came before, too.
		k := min(len(t.b), len(outOfMemory)-1)
		t.oom = bytes.Contains(append(t.b[len(t.b)-k:len(t.b):len(t.b)], p...), outOfMemory)
	}
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) reset()         { t.b, t.oom = t.b[:0], false }
func (t *tailBuffer) String() string { return strings.TrimSpace(string(t.b)) }

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
