package plugin

// Performance benchmarks of the plugin runtime. docs/BENCHMARKS.md has the
// results and how to read them. Run with
//
//	go test -run XXX -bench . -benchmem ./internal/plugin/ ./plugins/timer/
//
// The observe benchmarks peel the product path one layer at a time, all on
// the bundled timer.wasm and the same pending request:
//
//	runtime            Runtime.Observe: pool, JSON both ways, timeout (the product)
//	extism-timeout     extism Plugin.CallWithContext, interruptible, per-call timeout
//	extism-notimeout   the same without WithCloseOnContextDone
//	wazero-timeout     raw wazero and a minimal Go kernel, interruptible, per-call timeout
//	wazero-notimeout   the same without WithCloseOnContextDone
//
// and plugins/timer/timer_bench_test.go runs the same logic natively.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/vigilhq/vigil/internal/benchtest"
	"github.com/vigilhq/vigil/internal/wasmbuild"
	"github.com/vigilhq/vigil/plugins"
	"github.com/vigilhq/vigil/sdk/abi"
)

// benchTimeout is the per-call bound of the interruptible variants: the
// product's default ObserveTimeout.
const benchTimeout = 5 * time.Second

// pendingReq is the common observe: a timer an hour away.
func pendingReq() abi.ObserveRequest { return timerReq(t0.Add(time.Hour), t0, "w") }

func pendingInput(b *testing.B) []byte {
	b.Helper()
	in, err := json.Marshal(pendingReq())
	if err != nil {
		b.Fatal(err)
	}
	return in
}

// checkPending fails b unless out is the timer's pending answer.
func checkPending(b *testing.B, out []byte) {
	b.Helper()
	obs, err := checkObservation(out, false)
	if err != nil {
		b.Fatalf("output %q: %v", out, err)
	}
	if obs.Status != abi.StatusPending || !obs.NextCheck.Equal(t0.Add(time.Hour)) {
		b.Fatalf("output %q: not the pending answer", out)
	}
}

func timerWasm(b *testing.B) []byte {
	b.Helper()
	wasm, err := fs.ReadFile(plugins.Bundled(), "timer/timer.wasm")
	if err != nil {
		b.Fatal(err)
	}
	return wasm
}

// sharedCache opens the shared test compilation cache.
func sharedCache(b *testing.B) wazero.CompilationCache {
	b.Helper()
	c, err := wazero.NewCompilationCacheWithDir(wasmbuild.CacheDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// benchRuntime is newRuntime for a benchmark.
func benchRuntime(b *testing.B, cfg Config) *Runtime {
	b.Helper()
	if cfg.Bundled == nil {
		cfg.Bundled = plugins.Bundled()
	}
	if cfg.CacheDir == "" {
		cfg.CacheDir = wasmbuild.CacheDir()
	}
	r, err := New(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	if p := r.Problems(); len(p) != 0 {
		b.Fatalf("problems: %v", p)
	}
	b.Cleanup(func() { _ = r.Close(context.Background()) })
	return r
}

// BenchmarkObserve is one warm observe of the bundled timer (pending), down
// the layers listed at the top of this file.
func BenchmarkObserve(b *testing.B) {
	ctx := context.Background()

	b.Run("runtime", func(b *testing.B) {
		r := benchRuntime(b, Config{})
		req := pendingReq()
		benchtest.Timed(b, func() error {
			obs, err := r.Observe(ctx, req)
			if err != nil {
				return err
			}
			if obs.Fault != nil || obs.Status != abi.StatusPending {
				return fmt.Errorf("observation %+v", obs)
			}
			return nil
		})
	})

	for _, interruptible := range []bool{true, false} {
		name := map[bool]string{true: "timeout", false: "notimeout"}[interruptible]

		b.Run("extism-"+name, func(b *testing.B) {
			p := extismPlugin(b, interruptible)
			in := pendingInput(b)
			call := func() ([]byte, error) {
				cctx := ctx
				if interruptible {
					var cancel context.CancelFunc
					cctx, cancel = context.WithTimeout(ctx, benchTimeout)
					defer cancel()
				}
				rc, out, err := p.CallWithContext(cctx, abi.ExportObserve, in)
				if err == nil && rc != 0 {
					err = fmt.Errorf("rc %d", rc)
				}
				return out, err
			}
			out, err := call()
			if err != nil {
				b.Fatal(err)
			}
			checkPending(b, out)
			benchtest.Timed(b, func() error { _, err := call(); return err })
		})

		b.Run("wazero-"+name, func(b *testing.B) {
			g := newRawGuest(b, interruptible, nil)
			in := pendingInput(b)
			out, err := g.call(ctx, abi.ExportObserve, in)
			if err != nil {
				b.Fatal(err)
			}
			checkPending(b, out)
			calls0 := g.k.calls
			benchtest.Timed(b, func() error { _, err := g.call(ctx, abi.ExportObserve, in); return err })
			b.ReportMetric(float64(g.k.calls-calls0)/float64(b.N+1), "kernel-calls/op")
			b.ReportMetric(float64(g.mod.Memory().Size()), "guest-mem-B")
		})
	}

	// Throughput with both cores busy, on the default pool of 4.
	b.Run("runtime-parallel", func(b *testing.B) {
		r := benchRuntime(b, Config{})
		req := pendingReq()
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				obs, err := r.Observe(ctx, req)
				if err != nil || obs.Fault != nil {
					b.Errorf("observe: %+v %v", obs, err)
					return
				}
			}
		})
	})
}

// extismPlugin is one instance of timer.wasm under Extism, configured as
// compile in instance.go does, with or without WithCloseOnContextDone.
func extismPlugin(b *testing.B, interruptible bool) *extism.Plugin {
	b.Helper()
	ctx := context.Background()
	pages := uint32(64 * 16)
	rc := wazero.NewRuntimeConfig().
		WithCloseOnContextDone(interruptible).
		WithMemoryLimitPages(pages).
		WithCompilationCache(sharedCache(b))
	manifest := extism.Manifest{
		Wasm:   []extism.Wasm{extism.WasmData{Data: timerWasm(b), Name: "main"}},
		Memory: &extism.ManifestMemory{MaxPages: pages},
	}
	compiled, err := extism.NewCompiledPlugin(ctx, manifest, extism.PluginConfig{
		RuntimeConfig: rc,
		EnableWasi:    true,
	}, []extism.HostFunction{stubFetch()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = compiled.Close(ctx) })
	mc := wazero.NewModuleConfig().WithStderr(io.Discard).WithStdout(io.Discard)
	p, err := compiled.Instance(ctx, extism.PluginInstanceConfig{ModuleConfig: mc})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close(ctx) })
	return p
}

// stubFetch stands in for vigil_fetch: the timer does not fetch, and a
// module that imports it needs it defined.
func stubFetch() extism.HostFunction {
	f := extism.NewHostFunctionWithStack(abi.HostFetch, func(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
		off, err := p.WriteBytes([]byte(`{"failure":{"reason":"unavailable","message":"benchmark stub"}}`))
		if err != nil {
			panic(err)
		}
		stack[0] = off
	}, []extism.ValueType{extism.ValueTypeI64}, []extism.ValueType{extism.ValueTypeI64})
	f.SetNamespace(abi.HostNamespace)
	return f
}

// rawKernel is a minimal Go implementation of the Extism kernel
// (extism:host/env): a byte slice with a bump allocator that resets on
// every call. A block's length sits in the 8 bytes before it; offset 0 is
// never a block, so 0 can mean "out of memory" as the ABI says.
type rawKernel struct {
	mem    []byte
	next   uint64
	input  []byte
	out    []byte // a view of mem set by output_set
	errOff uint64
	calls  int // host function calls, for kernel-calls/op
}

const rawKernelMax = 64 << 20

func (k *rawKernel) reset(input []byte) {
	k.next, k.input, k.out, k.errOff = 8, input, nil, 0
}

func (k *rawKernel) alloc(n uint64) uint64 {
	off := k.next + 8
	end := (off + n + 7) &^ 7
	if end > rawKernelMax {
		return 0
	}
	if end > uint64(len(k.mem)) {
		k.mem = append(k.mem, make([]byte, max(end, 2*uint64(len(k.mem)))-uint64(len(k.mem)))...)
	}
	binary.LittleEndian.PutUint64(k.mem[off-8:], n)
	k.next = end
	return off
}

func (k *rawKernel) length(off uint64) uint64 {
	if off < 16 || off > k.next {
		return 0
	}
	return binary.LittleEndian.Uint64(k.mem[off-8:])
}

func (k *rawKernel) block(off uint64) []byte { return k.mem[off : off+k.length(off)] }

func (k *rawKernel) inputU64(off uint64) uint64 {
	if off+8 <= uint64(len(k.input)) {
		return binary.LittleEndian.Uint64(k.input[off:])
	}
	var w [8]byte
	if off < uint64(len(k.input)) {
		copy(w[:], k.input[off:])
	}
	return binary.LittleEndian.Uint64(w[:])
}

// hostModule defines the kernel's functions. All of them, whether or not
// a guest imports them; a host module may export more than is imported.
func (k *rawKernel) hostModule(rt wazero.Runtime) wazero.HostModuleBuilder {
	hb := rt.NewHostModuleBuilder("extism:host/env")
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	def := func(name string, params, results []api.ValueType, f func(stack []uint64)) {
		hb.NewFunctionBuilder().WithGoFunction(api.GoFunc(func(_ context.Context, stack []uint64) {
			k.calls++
			f(stack)
		}), params, results).Export(name)
	}
	def("input_length", nil, []api.ValueType{i64}, func(s []uint64) { s[0] = uint64(len(k.input)) })
	def("input_load_u64", []api.ValueType{i64}, []api.ValueType{i64}, func(s []uint64) { s[0] = k.inputU64(s[0]) })
	def("input_load_u8", []api.ValueType{i64}, []api.ValueType{i32}, func(s []uint64) { s[0] = uint64(k.input[s[0]]) })
	def("alloc", []api.ValueType{i64}, []api.ValueType{i64}, func(s []uint64) { s[0] = k.alloc(s[0]) })
	def("free", []api.ValueType{i64}, nil, func([]uint64) {})
	def("length", []api.ValueType{i64}, []api.ValueType{i64}, func(s []uint64) { s[0] = k.length(s[0]) })
	def("load_u64", []api.ValueType{i64}, []api.ValueType{i64}, func(s []uint64) { s[0] = binary.LittleEndian.Uint64(k.mem[s[0]:]) })
	def("load_u8", []api.ValueType{i64}, []api.ValueType{i32}, func(s []uint64) { s[0] = uint64(k.mem[s[0]]) })
	def("store_u64", []api.ValueType{i64, i64}, nil, func(s []uint64) { binary.LittleEndian.PutUint64(k.mem[s[0]:], s[1]) })
	def("store_u8", []api.ValueType{i64, i32}, nil, func(s []uint64) { k.mem[s[0]] = byte(s[1]) })
	def("output_set", []api.ValueType{i64, i64}, nil, func(s []uint64) { k.out = k.mem[s[0] : s[0]+s[1]] })
	def("error_set", []api.ValueType{i64}, nil, func(s []uint64) { k.errOff = s[0] })
	def("config_get", []api.ValueType{i64}, []api.ValueType{i64}, func(s []uint64) { s[0] = 0 })
	for _, l := range []string{"log_info", "log_warn", "log_error", "log_debug"} {
		def(l, []api.ValueType{i64}, nil, func([]uint64) {})
	}
	return hb
}

// rawGuest is timer.wasm instantiated on wazero directly, over rawKernel.
type rawGuest struct {
	k             *rawKernel
	mod           api.Module
	exports       map[string]api.Function
	interruptible bool
}

// newRawGuest instantiates timer.wasm with WASI and rawKernel and runs
// _initialize. A non-nil listener factory is compiled in (call counting).
func newRawGuest(b *testing.B, interruptible bool, lf experimental.FunctionListenerFactory) *rawGuest {
	b.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().
		WithCloseOnContextDone(interruptible).
		WithMemoryLimitPages(64*16).
		WithCompilationCache(sharedCache(b)))
	b.Cleanup(func() { _ = rt.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)

	k := &rawKernel{mem: make([]byte, 64<<10)}
	if _, err := k.hostModule(rt).Instantiate(ctx); err != nil {
		b.Fatal(err)
	}
	cctx := ctx
	if lf != nil {
		cctx = experimental.WithFunctionListenerFactory(ctx, lf)
	}
	cm, err := rt.CompileModule(cctx, timerWasm(b))
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range cm.ImportedFunctions() {
		if mod, name, _ := f.Import(); mod == abi.HostNamespace && name == abi.HostFetch {
			_, err := rt.NewHostModuleBuilder(abi.HostNamespace).NewFunctionBuilder().
				WithGoFunction(api.GoFunc(func(_ context.Context, s []uint64) {
					resp := []byte(`{"failure":{"reason":"unavailable","message":"benchmark stub"}}`)
					off := k.alloc(uint64(len(resp)))
					copy(k.mem[off:], resp)
					s[0] = off
				}), []api.ValueType{api.ValueTypeI64}, []api.ValueType{api.ValueTypeI64}).
				Export(abi.HostFetch).Instantiate(ctx)
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	mod, err := rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().
		WithStartFunctions().WithStdout(io.Discard).WithStderr(io.Discard))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := mod.ExportedFunction("_initialize").Call(ctx); err != nil {
		b.Fatal(err)
	}
	g := &rawGuest{k: k, mod: mod, exports: map[string]api.Function{}, interruptible: interruptible}
	for _, name := range []string{abi.ExportDescribe, abi.ExportAdmit, abi.ExportObserve} {
		g.exports[name] = mod.ExportedFunction(name)
	}
	return g
}

// call runs one export: input in, a copy of the output out.
func (g *rawGuest) call(ctx context.Context, export string, input []byte) ([]byte, error) {
	g.k.reset(input)
	if g.interruptible {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, benchTimeout)
		defer cancel()
	}
	res, err := g.exports[export].Call(ctx)
	if err != nil {
		return nil, err
	}
	if res[0] != 0 {
		return nil, fmt.Errorf("rc %d: %s", res[0], g.k.block(g.k.errOff))
	}
	return bytes.Clone(g.k.out), nil
}

// BenchmarkGuestCalls counts the guest's wasm function calls per observe
// (wazero-notimeout with a function listener compiled in). Only calls/op
// is meaningful: the listener makes the timing useless. With the
// interruptible checks at ~1 per call plus 1 per loop iteration, calls/op
// is a lower bound on the checks a call makes.
func BenchmarkGuestCalls(b *testing.B) {
	ctx := context.Background()
	var n int
	lf := experimental.FunctionListenerFactoryFunc(func(api.FunctionDefinition) experimental.FunctionListener {
		return countCalls{&n}
	})
	g := newRawGuest(b, false, lf)
	in := pendingInput(b)
	if _, err := g.call(ctx, abi.ExportObserve, in); err != nil {
		b.Fatal(err)
	}
	n = 0
	b.ResetTimer()
	for range b.N {
		if _, err := g.call(ctx, abi.ExportObserve, in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/float64(b.N), "calls/op")
}

type countCalls struct{ n *int }

func (c countCalls) Before(context.Context, api.Module, api.FunctionDefinition, []uint64, experimental.StackIterator) {
	*c.n++
}
func (countCalls) After(context.Context, api.Module, api.FunctionDefinition, []uint64) {}
func (countCalls) Abort(context.Context, api.Module, api.FunctionDefinition, error)    {}

// spinWasm is a hand-assembled module exporting spin(n i32): a loop of n
// iterations doing nothing else. Under WithCloseOnContextDone every
// iteration passes the loop header's check, so the difference between the
// two BenchmarkInterruptCheck cases is the cost of one check.
//
//	(func (export "spin") (param i32)
//	  (loop $l (br_if $l (local.tee 0 (i32.sub (local.get 0) (i32.const 1))))))
var spinWasm = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
	0x01, 0x05, 0x01, 0x60, 0x01, 0x7f, 0x00, // type: (i32) -> ()
	0x03, 0x02, 0x01, 0x00, // func 0: type 0
	0x07, 0x08, 0x01, 0x04, 's', 'p', 'i', 'n', 0x00, 0x00, // export "spin" func 0
	0x0a, 0x10, 0x01, 0x0e, 0x00, // code: 1 body of 14 bytes, no locals
	0x03, 0x40, // loop
	0x20, 0x00, 0x41, 0x01, 0x6b, 0x22, 0x00, // local.get 0, i32.const 1, i32.sub, local.tee 0
	0x0d, 0x00, // br_if 0
	0x0b, 0x0b, // end loop, end func
}

// BenchmarkInterruptCheck measures the per-iteration cost of wazero's
// interruptible mode on a bare loop; ns/iter with and without.
func BenchmarkInterruptCheck(b *testing.B) {
	const iters = 100_000
	for _, interruptible := range []bool{false, true} {
		b.Run(map[bool]string{true: "timeout", false: "notimeout"}[interruptible], func(b *testing.B) {
			ctx := context.Background()
			rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(interruptible))
			defer rt.Close(ctx)
			mod, err := rt.Instantiate(ctx, spinWasm)
			if err != nil {
				b.Fatal(err)
			}
			spin := mod.ExportedFunction("spin")
			b.ResetTimer()
			for range b.N {
				cctx, cancel := context.WithTimeout(ctx, benchTimeout)
				if _, err := spin.Call(cctx, iters); err != nil {
					b.Fatal(err)
				}
				cancel()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/iters, "ns/iter")
		})
	}
}

// BenchmarkWasmCall is the fixed cost of one call from Go into wasm
// (spin(1): one loop iteration), as Extism makes ~10 of them per observe.
// Under WithCloseOnContextDone each call also starts a goroutine that
// watches the context. The context has a deadline, made once, as in an
// observe.
func BenchmarkWasmCall(b *testing.B) {
	for _, interruptible := range []bool{false, true} {
		b.Run(map[bool]string{true: "timeout", false: "notimeout"}[interruptible], func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(interruptible))
			defer rt.Close(ctx)
			mod, err := rt.Instantiate(ctx, spinWasm)
			if err != nil {
				b.Fatal(err)
			}
			spin := mod.ExportedFunction("spin")
			stack := []uint64{1}
			b.ReportAllocs()
			for b.Loop() {
				stack[0] = 1
				if err := spin.CallWithStack(ctx, stack); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkNew is plugin.New loading the bundled plugins, with an empty
// compilation cache (a fresh directory each time: everything compiles) and
// with a warm one (populated once, before the timer starts).
func BenchmarkNew(b *testing.B) {
	ctx := context.Background()
	start := func(b *testing.B, dir string) {
		b.StartTimer()
		r, err := New(ctx, Config{Bundled: plugins.Bundled(), CacheDir: dir})
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		if p := r.Problems(); len(p) != 0 {
			b.Fatalf("problems: %v", p)
		}
		_ = r.Close(ctx)
	}
	b.Run("cold-cache", func(b *testing.B) {
		b.StopTimer()
		for range b.N {
			dir, err := os.MkdirTemp("", "vigil-bench-cache-")
			if err != nil {
				b.Fatal(err)
			}
			start(b, dir)
			_ = os.RemoveAll(dir)
		}
	})
	b.Run("warm-cache", func(b *testing.B) {
		b.StopTimer()
		dir := b.TempDir()
		start(b, dir) // populates the cache
		b.ResetTimer()
		for range b.N {
			start(b, dir)
		}
	})
}

// BenchmarkNewInstance is what growing the pool by one costs: instantiate
// (Extism kernel and guest), then the first observe, which runs the Go
// guest's _initialize, then a second, warm, observe for comparison.
func BenchmarkNewInstance(b *testing.B) {
	ctx := context.Background()
	r := benchRuntime(b, Config{})
	mod := r.set.Load().kinds["timer"].mod
	in := pendingInput(b)
	var inst, first, second time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		i, err := mod.newInstance(ctx)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		for _, d := range []*time.Duration{&first, &second} {
			s := time.Now()
			rc, _, err := i.p.CallWithContext(ctx, abi.ExportObserve, in)
			if err != nil || rc != 0 {
				b.Fatalf("observe: rc %d, %v", rc, err)
			}
			*d += time.Since(s)
		}
		inst += t1.Sub(start)
		_ = i.p.Close(ctx)
	}
	n := float64(b.N)
	b.ReportMetric(float64(inst.Nanoseconds())/n, "instantiate-ns")
	b.ReportMetric(float64(first.Nanoseconds())/n, "first-call-ns")
	b.ReportMetric(float64(second.Nanoseconds())/n, "second-call-ns")
}

// BenchmarkInstanceMemory grows the timer's pool by n warm instances and
// reports, per instance, the resident memory and live Go heap it added and
// its Extism kernel memory. "fresh": 16 instances that have answered one
// observe each. "steady": 2 instances that have answered 10,000 each, by
// when the guest's Go heap (its linear memory) has grown to its steady
// size. ns/op is for all of it; new-ns/inst is the time to create one
// instance and make its first call.
func BenchmarkInstanceMemory(b *testing.B) {
	b.Run("fresh", func(b *testing.B) { benchInstanceMemory(b, 16, 1) })
	b.Run("steady", func(b *testing.B) { benchInstanceMemory(b, 2, 10_000) })
}

func benchInstanceMemory(b *testing.B, n, calls int) {
	ctx := context.Background()
	r := benchRuntime(b, Config{Limits: Limits{PoolSize: n}})
	mod := r.set.Load().kinds["timer"].mod
	in := pendingInput(b)
	observe := func(inst *instance) {
		rc, out, err := inst.p.CallWithContext(ctx, abi.ExportObserve, in)
		if err != nil || rc != 0 {
			b.Fatalf("observe: rc %d, %v", rc, err)
		}
		checkPending(b, out)
	}
	var rss, heap, kernel, first float64
	b.StopTimer()
	for range b.N {
		// Drop the idle instances (describe's), so every get below
		// creates one.
		mod.mu.Lock()
		idle := mod.idle
		mod.idle = nil
		mod.mu.Unlock()
		for _, old := range idle {
			_ = old.p.Close(ctx)
		}
		rss0, heap0 := memNow(b)

		ins := make([]*instance, 0, n)
		b.StartTimer()
		for range n {
			start := time.Now()
			inst, err := mod.get(ctx)
			if err != nil {
				b.Fatal(err)
			}
			observe(inst)
			first += float64(time.Since(start).Nanoseconds()) / float64(n)
			ins = append(ins, inst)
			for range calls - 1 {
				observe(inst)
			}
		}
		b.StopTimer()

		rss1, heap1 := memNow(b)
		rss += float64(rss1-rss0) / float64(n)
		heap += float64(heap1-heap0) / float64(n)
		for _, inst := range ins {
			kernel += float64(inst.p.Memory().Size()) / float64(n)
			mod.put(ctx, inst, true)
		}
	}
	b.ReportMetric(rss/float64(b.N), "rss-B/inst")
	b.ReportMetric(heap/float64(b.N), "heap-B/inst")
	b.ReportMetric(kernel/float64(b.N), "kernel-mem-B/inst")
	b.ReportMetric(first/float64(b.N), "new-ns/inst")
}

// memNow returns the process's resident bytes and the live Go heap, after
// a full collection that also hands freed memory back to the OS.
func memNow(b *testing.B) (rss, heap int64) {
	b.Helper()
	debug.FreeOSMemory()
	raw, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		b.Skip("no /proc/self/statm:", err)
	}
	f := strings.Fields(string(raw))
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		b.Fatal(err)
	}
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return pages * int64(os.Getpagesize()), int64(s[0].Value.Uint64())
}
