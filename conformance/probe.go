package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"

	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/sdk/abi"
)

// probe calls a plugin's exports directly, under the runtime's limits, for
// the few checks the runtime cannot make: which functions the module
// exports, describe's raw answer (the runtime refuses a bad one and keeps
// only the first broken rule), and a call for another kind (the runtime
// routes by kind, so it never sends one). Everything else goes through
// plugin.Runtime.
type probe struct {
	compiled *extism.CompiledPlugin
}

// Bounds the probe shares with the runtime's defaults.
const (
	probeMemoryMiB   = 64
	probeCallTimeout = time.Second
	probeObserveTime = 5 * time.Second
)

func openProbe(ctx context.Context, wasm []byte, cache wazero.CompilationCache, f plugin.Fetcher) (*probe, error) {
	rc := wazero.NewRuntimeConfig().WithCloseOnContextDone(true).WithCompilationCache(cache)
	manifest := extism.Manifest{
		Wasm:   []extism.Wasm{extism.WasmData{Data: wasm, Name: "main"}},
		Memory: &extism.ManifestMemory{MaxPages: probeMemoryMiB * 16},
	}
	compiled, err := extism.NewCompiledPlugin(ctx, manifest, extism.PluginConfig{RuntimeConfig: rc, EnableWasi: true},
		[]extism.HostFunction{probeFetch(f), probeExtractionFailed(), probeExec()})
	if err != nil {
		return nil, err
	}
	return &probe{compiled: compiled}, nil
}

func (p *probe) close(ctx context.Context) { _ = p.compiled.Close(ctx) }

// instance starts a fresh instance, with no config and a discarded
// stdout and stderr.
func (p *probe) instance(ctx context.Context) (*extism.Plugin, error) {
	inst, err := p.compiled.Instance(ctx, extism.PluginInstanceConfig{ModuleConfig: wazero.NewModuleConfig()})
	if err != nil {
		return nil, err
	}
	inst.AllowedHosts = nil
	return inst, nil
}

// rawCall is one direct call's outcome.
type rawCall struct {
	out []byte
	// raised is the error message the plugin set (error_set) and returned
	// non-zero with; the instance is sound.
	raised string
	// fault is a call that did not come back as an answer or an error: a
	// trap, a timeout, a failure to start.
	fault error
	// timedOut says the fault is the call's timeout.
	timedOut bool
}

// call runs export once on inst, bounded by timeout.
func call(ctx context.Context, inst *extism.Plugin, export string, in []byte, timeout time.Duration) rawCall {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rc, out, err := inst.CallWithContext(cctx, export, in)
	switch {
	case cctx.Err() != nil && err != nil:
		return rawCall{fault: fmt.Errorf("no answer within %s", timeout), timedOut: true}
	case err == nil && rc == 0:
		return rawCall{out: out}
	case err != nil && !isTrap(err) && inst.GetError() == err.Error():
		return rawCall{raised: err.Error()}
	case err == nil:
		return rawCall{raised: fmt.Sprintf("returned %d with no error message", rc)}
	default:
		return rawCall{fault: err}
	}
}

// isTrap reports whether err left the instance in an undefined state, the
// runtime's rule.
func isTrap(err error) bool {
	s := err.Error()
	for _, sign := range []string{"wasm error:", "module closed", "module is closed", "recovered by wazero", "failed to initialize runtime"} {
		if strings.Contains(s, sign) {
			return true
		}
	}
	return false
}

// describeOutcome is what the probe learnt of describe.
type describeOutcome struct {
	missing []string // exports the module lacks
	wake    bool     // the module exports the optional wake
	first   rawCall
	again   rawCall // the same instance, a second time
	fresh   rawCall // a new instance
	err     error   // no instance could be started
}

func (p *probe) describe(ctx context.Context) describeOutcome {
	var d describeOutcome
	inst, err := p.instance(ctx)
	if err != nil {
		d.err = err
		return d
	}
	defer func() { _ = inst.Close(ctx) }()
	for _, e := range []string{abi.ExportDescribe, abi.ExportAdmit, abi.ExportObserve} {
		if !inst.FunctionExists(e) {
			d.missing = append(d.missing, e)
		}
	}
	d.wake = inst.FunctionExists(abi.ExportWake)
	if !inst.FunctionExists(abi.ExportDescribe) {
		return d
	}
	d.first = call(ctx, inst, abi.ExportDescribe, nil, probeCallTimeout)
	d.again = call(ctx, inst, abi.ExportDescribe, nil, probeCallTimeout)
	other, err := p.instance(ctx)
	if err != nil {
		d.fresh = rawCall{fault: err}
		return d
	}
	defer func() { _ = other.Close(ctx) }()
	d.fresh = call(ctx, other, abi.ExportDescribe, nil, probeCallTimeout)
	return d
}

// observeAs makes one observe call with req, on a fresh instance.
func (p *probe) observeAs(ctx context.Context, req abi.ObserveRequest) rawCall {
	inst, err := p.instance(ctx)
	if err != nil {
		return rawCall{fault: err}
	}
	defer func() { _ = inst.Close(ctx) }()
	in, err := json.Marshal(req)
	if err != nil {
		return rawCall{fault: err}
	}
	return call(ctx, inst, abi.ExportObserve, in, probeObserveTime)
}

// probeFetch is vigil_fetch for the probe: the suite's fake fetch, read
// through the same call context.
func probeFetch(f plugin.Fetcher) extism.HostFunction {
	fn := extism.NewHostFunctionWithStack(abi.HostFetch, func(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
		var resp abi.FetchResponse
		raw, err := p.ReadBytes(stack[0])
		var req abi.FetchRequest
		if err == nil {
			err = abi.StrictUnmarshal(raw, &req)
		}
		if err != nil {
			resp = failure(abi.FetchInvalidRequestOptions, "request is not a fetch request")
		} else {
			resp = f.Fetch(ctx, plugin.FetchCall{Request: req})
		}
		out, _ := json.Marshal(resp)
		off, err := p.WriteBytes(out)
		if err != nil {
			panic(errors.New("vigil_fetch: writing the response"))
		}
		stack[0] = off
	}, []extism.ValueType{extism.ValueTypeI64}, []extism.ValueType{extism.ValueTypeI64})
	fn.SetNamespace(abi.HostNamespace)
	return fn
}

// probeExtractionFailed is vigil_extraction_failed for the probe: its
// fake fetch keeps no validators, so there is nothing to forget. It is
// there so a plugin that imports it can be instantiated at all.
func probeExtractionFailed() extism.HostFunction {
	return probeConstant(abi.HostExtractionFailed, abi.ExtractionFailedResponse{})
}

// probeExec is vigil_exec for the probe: the suite runs no commands. It
// is there so a plugin that imports it can be instantiated at all.
func probeExec() extism.HostFunction {
	return probeConstant(abi.HostExec, abi.ExecResponse{ExitCode: -1,
		Failure: &abi.FetchFailure{Reason: abi.ExecUnavailable, Message: "the conformance suite runs no commands"}})
}

// probeConstant is the host function name answering resp to every call,
// whatever the request.
func probeConstant(name string, resp any) extism.HostFunction {
	out, _ := json.Marshal(resp)
	fn := extism.NewHostFunctionWithStack(name, func(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
		off, err := p.WriteBytes(out)
		if err != nil {
			panic(errors.New(name + ": writing the response"))
		}
		stack[0] = off
	}, []extism.ValueType{extism.ValueTypeI64}, []extism.ValueType{extism.ValueTypeI64})
	fn.SetNamespace(abi.HostNamespace)
	return fn
}
