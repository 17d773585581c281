package plugin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/netguard"
	"github.com/vigilhq/vigil/sdk/abi"
)

// Limits bound every plugin call. Zero fields take the defaults.
type Limits struct {
	// ObserveTimeout bounds one observe call (default 5 s); a registry
	// entry's timeout overrides it for its kind.
	ObserveTimeout time.Duration
	// CallTimeout bounds describe and admit (default 1 s).
	CallTimeout time.Duration
	// MemoryMiB caps each instance's memory, guest and Extism kernel each
	// (default 64); a registry entry's memory_mib overrides it.
	MemoryMiB uint32
	// OutputBytes caps one call's output (default 256 KiB).
	OutputBytes int
	// PoolSize is the most instances of one plugin alive at once
	// (default 4). Calls beyond it wait for an instance.
	PoolSize int
}

func (l Limits) withDefaults() Limits {
	if l.ObserveTimeout <= 0 {
		l.ObserveTimeout = 5 * time.Second
	}
	if l.CallTimeout <= 0 {
		l.CallTimeout = time.Second
	}
	if l.MemoryMiB == 0 {
		l.MemoryMiB = 64
	}
	if l.OutputBytes <= 0 {
		l.OutputBytes = 256 << 10
	}
	if l.PoolSize <= 0 {
		l.PoolSize = 4
	}
	return l
}

// Fetcher is the host side of vigil_fetch. It must honour ctx: it runs
// inside a plugin call whose timeout cancels ctx.
type Fetcher interface {
	Fetch(ctx context.Context, call FetchCall) abi.FetchResponse
}

// ExtractionReporter is the host side of vigil_extraction_failed, which a
// Fetcher that keeps validators implements too (the fetch issuer does): it
// forgets the validators stored for the bytes a plugin could not extract,
// so the next fetch is unconditional. A Fetcher that does not implement it
// answers the plugin unavailable.
type ExtractionReporter interface {
	ExtractionFailed(ctx context.Context, call ExtractionCall) abi.ExtractionFailedResponse
}

// ExtractionCall is one extraction failure a plugin reported, with the
// grants of its kind.
type ExtractionCall struct {
	Kind    string
	Entry   Entry
	Request abi.ExtractionFailedRequest
}

// Execer is the host side of vigil_exec. It must honour ctx: it runs
// inside a plugin call whose timeout cancels ctx, and the command must end
// (with its process group) when ctx does.
type Execer interface {
	Exec(ctx context.Context, call ExecCall) abi.ExecResponse
}

// ExecCall is one command a plugin asked for: its kind's grants (the
// programs resolved to absolute paths at load), and the recipient of the
// watch being observed, whose workspace the command runs in.
type ExecCall struct {
	Kind      string
	Entry     Entry
	Recipient string
	// RegisteredBy is the principal that registered the watch ("" for the
	// host's own).
	RegisteredBy string
	Request      abi.ExecRequest
}

// WorkspaceOwner is the recipient whose workspace the command runs in
// (kind.WorkspaceOwner).
func (c ExecCall) WorkspaceOwner() string { return kind.WorkspaceOwner(c.Recipient, c.RegisteredBy) }

// FetchCall is one fetch a plugin asked for, with the grants of its kind
// and the cadence of the watch being observed (Every; 0 outside a probe),
// which tells the issuer how old a held result that watch may be served.
type FetchCall struct {
	Kind    string
	Entry   Entry
	Request abi.FetchRequest
	Every   time.Duration
}

// Metrics receives one report per plugin call (outcome is "ok" or one of
// the Fault* reasons) and per fetch a plugin asks for (outcome is "ok" or
// the failure reason).
type Metrics interface {
	PluginCall(kind, export, outcome string, d time.Duration)
	Fetch(kind, outcome string)
}

type nopMetrics struct{}

func (nopMetrics) PluginCall(string, string, string, time.Duration) {}
func (nopMetrics) Fetch(string, string)                             {}

// Config configures a Runtime.
type Config struct {
	// Bundled holds the bundled plugins: *.wasm files and an optional
	// registry.json at its root. Nil for none.
	Bundled fs.FS
	// Dir is the plugin directory: *.wasm files and an optional
	// registry.json. "" for bundled plugins only.
	Dir string
	// Extra is a .wasm file loaded beside the bundled plugins and the
	// directory (vigil plugin try FILE). Its kind is served by it: any
	// other file claiming the kind is set aside (kind.pinned), so a new
	// build of a kind can be tried under the grants the registry gives
	// that kind. "" for none.
	Extra string
	// CacheDir keeps wazero's compilation cache, so a restart does not
	// recompile. "" keeps it in memory only.
	CacheDir string
	Limits   Limits
	Fetcher  Fetcher
	Execer   Execer
	Metrics  Metrics
	Logger   *slog.Logger
	// ResolvePrograms turns an exec grant's programs (absolute paths, or
	// names on PATH) into absolute paths, once, when the kind loads; an
	// error is that kind's load problem. Nil keeps the programs as written.
	ResolvePrograms func(list []string) ([]string, error)
	// SecretNames are the secrets the host holds. A registry entry's grant
	// of a secret the host does not hold grants nothing (it is logged at
	// load), so admit refuses a watch that names it instead of the watch
	// failing every fetch.
	SecretNames []string
	// Kinds, when set, is where the runtime registers one kind.Kind per
	// loaded plugin, as source "plugins", replaced on every reload and
	// emptied on Close. The scheduler serves watches from there.
	Kinds Registrar
	// WallClock, when set, is what a guest reads as its WASI wall clock.
	// Nil keeps wazero's fake clock (2022-01-01T00:00:00Z, a millisecond
	// on per reading), which is what the host runs: a plugin takes time
	// from its input, never from here. The conformance suite moves it to
	// catch a plugin that reads it.
	WallClock func() time.Time
}

type runtimeConfig struct {
	limits    Limits
	cache     wazero.CompilationCache
	wallClock func() time.Time
}

// Runtime serves the loaded plugins: Admit and Observe by kind, Reload to
// pick up a changed plugin directory without a restart.
type Runtime struct {
	cfg     Config
	rc      *runtimeConfig
	log     *slog.Logger
	metrics Metrics

	reload sync.Mutex // one reload at a time
	set    atomic.Pointer[pluginSet]

	chMu sync.Mutex // guards changed
	// changed is closed once the next generation is in force, then
	// dropped; nil until Changed asks for one.
	changed chan struct{}
}

// Changed is a channel closed once the next generation of plugins is in
// force (a reload, changed or not; Close): a waiter reads Plugins again
// and asks for the next one. Unlike the kinds registry's, it closes after
// the set is published, so what Plugins answers then is the new set.
func (r *Runtime) Changed() <-chan struct{} {
	r.chMu.Lock()
	defer r.chMu.Unlock()
	if r.changed == nil {
		r.changed = make(chan struct{})
	}
	return r.changed
}

// notify closes the channel Changed handed out, if any.
func (r *Runtime) notify() {
	r.chMu.Lock()
	defer r.chMu.Unlock()
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
}

// pluginSet is one generation of loaded plugins. It is immutable; Reload
// swaps in a new one.
type pluginSet struct {
	kinds    map[string]*loaded
	problems []*LoadError
	modules  []*module // every module this set holds, including kind-less ones
	registry Registry
}

// loaded is a kind served by a module.
type loaded struct {
	info   kind.Info
	entry  Entry
	schema *paramsSchema
	mod    *module
	// guard is the destination guard of the kind's private ranges, for
	// the destinations its admit names.
	guard *netguard.Guard
}

// New builds a runtime and loads the plugins. Problems with single plugins
// are in Problems(), never an error here; the error is for what makes the
// whole runtime unusable (an unreadable plugin directory or registry, an
// unusable cache directory).
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	r := &Runtime{cfg: cfg, log: cfg.Logger, metrics: cfg.Metrics}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	r.log = r.log.With("component", "plugin")
	if r.metrics == nil {
		r.metrics = nopMetrics{}
	}
	var cache wazero.CompilationCache
	if cfg.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("plugin compilation cache %s: %w", cfg.CacheDir, err)
		}
		cache = c
	} else {
		cache = wazero.NewCompilationCache()
	}
	r.rc = &runtimeConfig{limits: cfg.Limits.withDefaults(), cache: cache, wallClock: cfg.WallClock}
	r.set.Store(&pluginSet{kinds: map[string]*loaded{}})
	if _, err := r.Reload(ctx); err != nil {
		_ = cache.Close(ctx)
		return nil, err
	}
	if cfg.Kinds != nil {
		cfg.Kinds.Explain(Source, func(name string) error { return r.unknownKind(r.set.Load(), name) })
	}
	return r, nil
}

// Close retires every plugin (in-flight calls finish first) and the cache.
func (r *Runtime) Close(ctx context.Context) error {
	r.reload.Lock()
	defer r.reload.Unlock()
	old := r.set.Swap(&pluginSet{kinds: map[string]*loaded{}})
	r.notify()
	r.register(nil)
	if r.cfg.Kinds != nil {
		r.cfg.Kinds.Explain(Source, nil)
	}
	for _, m := range old.modules {
		m.retire(ctx)
	}
	return r.rc.cache.Close(ctx)
}

// Source is the name under which the runtime registers its kinds.
const Source = "plugins"

// Registrar is where the runtime registers its kinds: a *kind.Registry.
// Explain lets the runtime say why a kind is not served (its plugin did
// not load).
type Registrar interface {
	Replace(source string, kinds []kind.Kind) error
	Explain(source string, f func(name string) error)
}

// runtimeKind is a loaded kind's info as a kind.Kind served by r.
type runtimeKind struct {
	r    *Runtime
	info kind.Info
}

var _ kind.Kind = runtimeKind{}

func (k runtimeKind) Info() kind.Info { return k.info }

// Admit asks the plugin with the params alone: a plugin reads no record
// of the host, so its params name none the caller might not read.
func (k runtimeKind) Admit(ctx context.Context, req kind.AdmitRequest) (kind.Admission, error) {
	return k.r.Admit(ctx, k.info.Kind, req.Params)
}

func (k runtimeKind) Observe(ctx context.Context, req abi.ObserveRequest) (kind.Observation, error) {
	return k.r.Observe(ctx, req)
}

// register makes set's kinds what the runtime serves in cfg.Kinds. A kind
// the host already serves itself (a built-in) stays the host's, and the
// plugin claiming it is left out; the conflicts are returned, for the
// caller to report.
func (r *Runtime) register(set *pluginSet) (dropped []*kind.ConflictError) {
	if r.cfg.Kinds == nil {
		return nil
	}
	var ks []kind.Kind
	if set != nil {
		for _, l := range set.kinds {
			// Each call goes through the runtime, so it reaches the
			// generation in force when it is made.
			ks = append(ks, runtimeKind{r, l.info})
		}
		sort.Slice(ks, func(i, j int) bool { return ks[i].Info().Kind < ks[j].Info().Kind })
	}
	for {
		err := r.cfg.Kinds.Replace(Source, ks)
		var ce *kind.ConflictError
		if !errors.As(err, &ce) {
			if err != nil {
				r.log.Error("registering the plugins' kinds", "err", err)
			}
			return dropped
		}
		dropped = append(dropped, ce)
		ks = slices.DeleteFunc(ks, func(k kind.Kind) bool { return k.Info().Kind == ce.Kind })
	}
}

// Report is the result of a load: what serves, and what could not.
type Report struct {
	Loaded   []kind.Info
	Problems []*LoadError
}

// candidate is one .wasm file found on a load.
type candidate struct {
	file  string // label: "bundled:timer.wasm" or the path
	name  string // base name, what a registry entry's wasm names
	dir   bool   // from the plugin directory
	extra bool   // Config.Extra
	bytes []byte
	sum   string
}

// Reload reads the bundled set and the plugin directory again and swaps in
// the result. Unchanged files keep their compiled module and warm
// instances; a call in flight finishes on the module it started on.
//
// It logs what loaded, what did not and why, and a count of each, or the
// error that kept the set before in force: here, so a reload says the
// same whoever asked for it (SIGHUP, POST /api/v1/plugins/reload, start).
func (r *Runtime) Reload(ctx context.Context) (Report, error) {
	r.reload.Lock()
	defer r.reload.Unlock()

	reg, cands, err := r.scan()
	if err != nil {
		r.log.Error("plugin reload failed; keeping the plugins loaded before", "err", err)
		return Report{}, err
	}
	old := r.set.Load()
	reuse := map[string]*module{}
	for _, m := range old.modules {
		reuse[m.file+"\x00"+m.sum] = m
	}

	next := &pluginSet{kinds: map[string]*loaded{}, registry: reg}
	claims := map[string][]*loaded{}
	kept := map[*module]bool{}
	// The first start compiles every plugin (10 to 70 s without a warm
	// cache), so it says so before and after; a reload that changed
	// nothing compiles nothing and says nothing of it.
	compiling := 0
	for _, c := range cands {
		if reuse[c.file+"\x00"+c.sum] == nil && c.bytes != nil {
			compiling++
		}
	}
	start := time.Now()
	if compiling > 0 {
		r.log.Info(fmt.Sprintf("compiling %d plugins", compiling), "cache", r.cacheLabel())
	}
	for _, c := range cands {
		l, perr := r.load(ctx, c, reg, reuse[c.file+"\x00"+c.sum])
		if perr != nil {
			next.problems = append(next.problems, perr)
			continue
		}
		next.modules = append(next.modules, l.mod)
		kept[l.mod] = true
		claims[l.info.Kind] = append(claims[l.info.Kind], l)
	}
	if compiling > 0 {
		took := time.Since(start)
		r.log.Info(fmt.Sprintf("compiled %d plugins in %s", compiling, took.Round(time.Millisecond)), "cache", r.cacheLabel(), "took", took)
	}
	for kind, ls := range claims {
		if w, ok := r.resolve(kind, ls, reg, next); ok {
			next.kinds[kind] = w
		}
	}
	for kind, e := range reg.Kinds {
		if e.Wasm == "" {
			continue
		}
		if _, ok := next.kinds[kind]; !ok && !hasProblemFor(next.problems, kind) {
			next.problems = append(next.problems, &LoadError{File: e.Wasm, Kind: kind, Rule: "registry.wasm",
				Err: fmt.Errorf("registry entry kinds.%s names %s, which is not in the plugin directory", kind, e.Wasm)})
		}
	}
	// A kind the host serves itself is not this generation's either: out
	// of what it lists and serves, and in its problems, before the set is
	// published.
	for _, ce := range r.register(next) {
		l, ok := next.kinds[ce.Kind]
		if !ok {
			continue
		}
		delete(next.kinds, ce.Kind)
		next.problems = append(next.problems, &LoadError{File: l.info.File, Kind: ce.Kind, Rule: RuleKindHost,
			Err: fmt.Errorf("the host serves kind %s itself (%s), so this plugin is not loaded; give the plugin's kind another name", ce.Kind, ce.Holder)})
	}
	r.set.Store(next)
	r.notify()
	for _, m := range old.modules {
		if !kept[m] {
			m.retire(ctx)
		}
	}
	rep := Report{Loaded: next.infos(), Problems: next.problems}
	for _, in := range rep.Loaded {
		r.log.Info("plugin loaded", "kind", in.Kind, "file", in.File, "version", in.Version, "observable", in.Observable)
	}
	for _, p := range rep.Problems {
		r.log.Warn("plugin not loaded", "file", p.File, "kind", p.Kind, "rule", p.Rule, "err", p.Err)
	}
	r.log.Info("plugins loaded", "kinds", len(rep.Loaded), "problems", len(rep.Problems))
	return rep, nil
}

// cacheLabel is where compiled code is kept, for the log.
func (r *Runtime) cacheLabel() string {
	if r.cfg.CacheDir == "" {
		return "memory only"
	}
	return r.cfg.CacheDir
}

func hasProblemFor(ps []*LoadError, kind string) bool {
	return slices.ContainsFunc(ps, func(p *LoadError) bool { return p.Kind == kind })
}

// resolve picks the module serving kind among those claiming it.
func (r *Runtime) resolve(kind string, ls []*loaded, reg Registry, next *pluginSet) (*loaded, bool) {
	if len(ls) == 1 {
		return ls[0], true
	}
	if r.cfg.Extra != "" {
		for _, l := range ls {
			if l.mod.file == r.cfg.Extra {
				for _, o := range ls {
					if o != l {
						next.problems = append(next.problems, &LoadError{File: o.mod.file, Kind: kind, Rule: RuleKindPinned,
							Err: fmt.Errorf("it claims kind %s, which the file tried, %s, serves", kind, l.mod.file)})
					}
				}
				return l, true
			}
		}
	}
	if want := reg.Kinds[kind].Wasm; want != "" {
		for _, l := range ls {
			if r.cfg.Dir != "" && l.mod.file == filepath.Join(r.cfg.Dir, want) {
				// The pin settles the conflict; every other claimant is
				// a file the host does not load, and says so.
				for _, o := range ls {
					if o != l {
						next.problems = append(next.problems, &LoadError{File: o.mod.file, Kind: kind, Rule: RuleKindPinned,
							Err: fmt.Errorf("it claims kind %s, which kinds.%s.wasm in %s gives to %s; remove the file, or name it in kinds.%s.wasm",
								kind, kind, RegistryFile, l.mod.file, kind)})
					}
				}
				return l, true
			}
		}
	}
	files := make([]string, len(ls))
	for i, l := range ls {
		files[i] = l.mod.file
	}
	sort.Strings(files)
	next.problems = append(next.problems, &LoadError{File: strings.Join(files, ", "), Kind: kind, Rule: "kind.conflict",
		Err: fmt.Errorf("%s all claim kind %s; remove all but one, or choose one with kinds.%s.wasm in %s",
			strings.Join(files, " and "), kind, kind, RegistryFile)})
	return nil, false
}

// scan reads both registries and every candidate file.
func (r *Runtime) scan() (Registry, []candidate, error) {
	reg := Registry{}
	var cands []candidate
	if r.cfg.Bundled != nil {
		b, err := readRegistry(r.cfg.Bundled, "bundled:"+RegistryFile)
		if err != nil {
			return reg, nil, err
		}
		reg = reg.merge(b)
		// Bundled plugins sit at the root or one folder down (kind/kind.wasm).
		top, _ := fs.Glob(r.cfg.Bundled, "*.wasm")
		nested, _ := fs.Glob(r.cfg.Bundled, "*/*.wasm")
		for _, n := range append(top, nested...) {
			data, err := fs.ReadFile(r.cfg.Bundled, n)
			if err != nil {
				return reg, nil, fmt.Errorf("bundled plugin %s: %w", n, err)
			}
			cands = append(cands, newCandidate("bundled:"+n, path.Base(n), false, data))
		}
	}
	if r.cfg.Dir != "" {
		// os.Stat on the path itself, so the error names the directory
		// (fs.Stat of os.DirFS's "." would say only "stat .").
		st, err := os.Stat(r.cfg.Dir)
		if err != nil {
			return reg, nil, fmt.Errorf("plugin directory: %w", err)
		}
		if !st.IsDir() {
			return reg, nil, fmt.Errorf("plugin directory: %s: %w", r.cfg.Dir, syscall.ENOTDIR)
		}
		dirFS := os.DirFS(r.cfg.Dir)
		d, err := readRegistry(dirFS, filepath.Join(r.cfg.Dir, RegistryFile))
		if err != nil {
			return reg, nil, err
		}
		reg = reg.merge(d)
		names, err := fs.Glob(dirFS, "*.wasm")
		if err != nil {
			return reg, nil, err
		}
		for _, n := range names {
			data, err := fs.ReadFile(dirFS, n)
			if err != nil {
				// One unreadable file is that file's problem; carry on.
				cands = append(cands, candidate{file: filepath.Join(r.cfg.Dir, n), name: n, dir: true})
				continue
			}
			cands = append(cands, newCandidate(filepath.Join(r.cfg.Dir, n), n, true, data))
		}
	}
	if r.cfg.Extra != "" {
		data, err := os.ReadFile(r.cfg.Extra)
		if err != nil {
			return reg, nil, fmt.Errorf("plugin file: %w", err)
		}
		c := newCandidate(r.cfg.Extra, filepath.Base(r.cfg.Extra), false, data)
		c.extra = true
		cands = append(cands, c)
	}
	return reg, cands, nil
}

func newCandidate(file, name string, dir bool, data []byte) candidate {
	s := sha256.Sum256(data)
	return candidate{file: file, name: name, dir: dir, bytes: data, sum: hex.EncodeToString(s[:])}
}

// load compiles (or reuses) one candidate, runs describe and validates it.
func (r *Runtime) load(ctx context.Context, c candidate, reg Registry, prev *module) (*loaded, *LoadError) {
	if c.bytes == nil {
		return nil, &LoadError{File: c.file, Rule: "read", Err: errors.New("file could not be read")}
	}
	// A registry entry that names this file decides its memory up front;
	// otherwise the default applies until describe says the kind.
	memFor := func(kind string) uint32 {
		if e, ok := reg.Kinds[kind]; ok && e.MemoryMiB > 0 {
			return e.MemoryMiB
		}
		return r.rc.limits.MemoryMiB
	}
	guess := ""
	for k, e := range reg.Kinds {
		if e.Wasm == c.name && c.dir {
			guess = k
		}
	}
	mod := prev
	if mod == nil || mod.pages != memFor(guess)*16 {
		var err error
		mod, err = compile(ctx, r.rc, c.file, c.sum, c.bytes, memFor(guess), &hostCtx{fetch: r.cfg.Fetcher, exec: r.cfg.Execer, metrics: r.metrics})
		if err != nil {
			return nil, &LoadError{File: c.file, Rule: "compile", Err: err}
		}
	}
	d, schema, every, lerr := r.describe(ctx, mod)
	if lerr != nil {
		if mod != prev {
			mod.retire(ctx)
		}
		return nil, lerr
	}
	if want := memFor(d.Kind) * 16; want != mod.pages {
		// The kind's entry asks for other memory than the file was built
		// with: build it again under the right cap.
		if mod != prev {
			mod.retire(ctx)
		}
		var err error
		mod, err = compile(ctx, r.rc, c.file, c.sum, c.bytes, memFor(d.Kind), &hostCtx{fetch: r.cfg.Fetcher, exec: r.cfg.Execer, metrics: r.metrics})
		if err != nil {
			return nil, &LoadError{File: c.file, Kind: d.Kind, Rule: "compile", Err: err}
		}
	}
	entry := reg.Kinds[d.Kind]
	if missing := slices.DeleteFunc(slices.Clone(entry.Secrets), func(n string) bool { return slices.Contains(r.cfg.SecretNames, n) }); len(missing) > 0 {
		r.log.Warn("the registry grants secrets the host does not hold; they grant nothing", "kind", d.Kind, "secrets", missing, "setting", "secrets")
		entry.Secrets = slices.DeleteFunc(slices.Clone(entry.Secrets), func(n string) bool { return !slices.Contains(r.cfg.SecretNames, n) })
	}
	if entry.Exec != nil && r.cfg.ResolvePrograms != nil {
		progs, err := r.cfg.ResolvePrograms(entry.Exec.Programs)
		if err != nil {
			if mod != prev {
				mod.retire(ctx)
			}
			return nil, &LoadError{File: c.file, Kind: d.Kind, Rule: "registry.exec", Err: fmt.Errorf("kinds.%s.exec.programs: %w", d.Kind, err)}
		}
		g := *entry.Exec
		g.Programs = progs
		entry.Exec = &g
	}
	mod.hostCtx.set(d.Kind, entry)
	info := kind.Info{
		Kind: d.Kind, File: c.file, Source: r.sourceOf(c), SHA256: c.sum, Version: d.Version, Summary: d.Summary,
		Standing: d.Standing, DefaultEvery: every, Capabilities: d.Capabilities,
		Grants: entry.grants(), Observable: true, Example: d.Example, Schema: d.ParamsSchema,
	}
	info.Wakes = exportsWake(c.bytes)
	for _, need := range d.Capabilities {
		if !slices.Contains(entry.Capabilities, need) {
			info.Observable = false
			info.Setting = fmt.Sprintf("kinds.%s.capabilities", d.Kind)
			break
		}
	}
	return &loaded{info: info, entry: entry, schema: schema, mod: mod, guard: guardFor(entry.PrivateRanges)}, nil
}

// sourceOf is where c came from (Info.Source).
func (r *Runtime) sourceOf(c candidate) string {
	switch {
	case c.extra:
		return c.file
	case c.dir:
		return r.cfg.Dir
	default:
		return "bundled"
	}
}

// guardFor is the destination guard of a kind's private ranges, as the
// fetch issuer builds it. A range that does not parse allows nothing (the
// registry refuses one).
func guardFor(ranges []string) *netguard.Guard {
	var allow []netip.Prefix
	for _, s := range ranges {
		if p, err := netip.ParsePrefix(s); err == nil {
			allow = append(allow, p)
		}
	}
	return netguard.New(allow)
}

func (r *Runtime) describe(ctx context.Context, mod *module) (abi.Describe, *paramsSchema, time.Duration, *LoadError) {
	if !mod.acquire() {
		return abi.Describe{}, nil, 0, &LoadError{File: mod.file, Rule: "describe", Err: ErrClosed}
	}
	defer mod.release(ctx)
	start := time.Now()
	out, err := mod.call(ctx, "", abi.ExportDescribe, nil, r.rc.limits.CallTimeout)
	r.metrics.PluginCall("", abi.ExportDescribe, outcomeOf(err), time.Since(start))
	if err != nil {
		return abi.Describe{}, nil, 0, &LoadError{File: mod.file, Rule: "describe.call", Err: err}
	}
	d, schema, every, bad := validateDescribe(out)
	if bad != nil {
		return d, nil, 0, &LoadError{File: mod.file, Kind: kindIfValid(d.Kind), Rule: bad.rule, Err: bad.err}
	}
	return d, schema, every, nil
}

func kindIfValid(k string) string {
	if abi.ValidKind(k) {
		return k
	}
	return ""
}

func outcomeOf(err error) string {
	var ce *kind.CallError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &ce):
		return ce.Reason
	default:
		return "error"
	}
}

func (s *pluginSet) infos() []kind.Info {
	out := make([]kind.Info, 0, len(s.kinds))
	for _, l := range s.kinds {
		out = append(out, l.info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

// Plugins lists the loaded plugins, by kind.
func (r *Runtime) Plugins() []kind.Info { return r.set.Load().infos() }

// Problems lists what the last load could not serve.
func (r *Runtime) Problems() []*LoadError { return slices.Clone(r.set.Load().problems) }

// Lookup returns the loaded plugin of kind.
func (r *Runtime) Lookup(kindName string) (kind.Info, bool) {
	l, ok := r.set.Load().kinds[kindName]
	if !ok {
		return kind.Info{}, false
	}
	return l.info, true
}

// observeTimeout is the kind's observe timeout: its registry timeout, or
// the default; with an exec grant and no registry timeout, long enough
// for the longest command the grant allows and a little over, so the
// command's own timeout (which ends its process group) fires first.
func observeTimeout(l Limits, e Entry) time.Duration {
	if t := time.Duration(e.Timeout); t > 0 {
		return t
	}
	if e.Exec != nil {
		return e.Exec.Max() + l.ObserveTimeout
	}
	return l.ObserveTimeout
}

// Admit decides whether a watch of kind with params may be written. It
// returns an Admission, an *api.Error (the watch must not be written), or an
// error when the plugin could not answer (a *kind.CallError). It checks
// configuration only and never reaches the network: the plugin's admit
// gets no fetch, and the destinations it names are judged without DNS
// (see checkDestination).
func (r *Runtime) Admit(ctx context.Context, kindName string, params json.RawMessage) (kind.Admission, error) {
	set := r.set.Load()
	l, ok := set.kinds[kindName]
	if !ok {
		return kind.Admission{}, r.unknownKind(set, kindName)
	}
	if !l.info.Observable {
		return kind.Admission{}, &api.Error{Code: api.CodeWatchUnobservable, Setting: l.info.Setting,
			Message: fmt.Sprintf("kind %s needs capabilities %s, and %s grants %s: add them to %s",
				kindName, strings.Join(l.info.Capabilities, ", "), RegistryFile, describeGrants(l.entry.Capabilities), l.info.Setting)}
	}
	if len(bytes.TrimSpace(params)) == 0 {
		params = json.RawMessage("null")
	}
	if field, msg, ok := l.schema.validate(params); !ok {
		if field == "" {
			field = "params"
		} else {
			field = "params." + field
		}
		return kind.Admission{}, &api.Error{Code: api.CodeInvalidParams, Field: field, Message: msg}
	}
	in, err := json.Marshal(abi.AdmitRequest{Kind: kindName, Params: params, Grants: l.entry.grants()})
	if err != nil {
		return kind.Admission{}, err
	}
	var resp abi.AdmitResponse
	var eps []abi.Endpoint
	_, err = r.invoke(ctx, l, abi.ExportAdmit, in, r.rc.limits.CallTimeout, func(out []byte) error {
		if err := abi.StrictUnmarshal(out, &resp); err != nil {
			return fmt.Errorf("admit output: %w", err)
		}
		if !resp.OK && resp.Code != abi.CodeUnobservable && resp.Code != abi.CodeInvalidParams {
			return fmt.Errorf("admit answered ok:false with code %q", resp.Code)
		}
		if err := checkPartitionKey(resp); err != nil {
			return err
		}
		if err := checkNextCheck(resp); err != nil {
			return err
		}
		var err error
		eps, err = checkDestinations(resp, l.info.Capabilities)
		return err
	})
	if err != nil {
		return kind.Admission{}, err
	}
	switch {
	case resp.OK:
		for i, d := range resp.Destinations {
			if ref := l.checkDestination(ctx, d, eps[i]); ref != nil {
				return kind.Admission{}, ref
			}
		}
		a := kind.Admission{Destinations: resp.Destinations, PartitionKey: resp.PartitionKey}
		if resp.Deadline != nil {
			a.Deadline = *resp.Deadline
		}
		if resp.NextCheck != nil {
			a.NextCheck = resp.NextCheck.UTC()
		}
		return a, nil
	case resp.Code == abi.CodeUnobservable:
		setting := resp.Setting
		if setting == "" {
			setting = fmt.Sprintf("kinds.%s", kindName)
		}
		return kind.Admission{}, &api.Error{Code: api.CodeWatchUnobservable, Message: resp.Message, Setting: setting}
	default:
		field := "params"
		if resp.Field != "" {
			field = "params." + resp.Field
		}
		return kind.Admission{}, &api.Error{Code: api.CodeInvalidParams, Message: resp.Message, Field: field}
	}
}

// checkPartitionKey holds admit's partition key to the contract: on an ok
// answer only, at most abi.MaxPartitionKey bytes. Any other answer is the
// plugin's fault (ErrBadPartitionKey).
func checkPartitionKey(resp abi.AdmitResponse) error {
	switch k := resp.PartitionKey; {
	case k == "":
		return nil
	case !resp.OK:
		return fmt.Errorf("%w: a partition key on a refusal", ErrBadPartitionKey)
	case len(k) > abi.MaxPartitionKey:
		return fmt.Errorf("%w: %d bytes, at most %d", ErrBadPartitionKey, len(k), abi.MaxPartitionKey)
	}
	return nil
}

// checkDestinations holds admit's destinations to the contract and parses
// them: on an ok answer only, from a kind that declares fetch, at most
// abi.MaxDestinations, each target as abi.ParseDestination reads it. Any
// other answer is the plugin's fault (ErrBadDestinations).
func checkDestinations(resp abi.AdmitResponse, caps []string) ([]abi.Endpoint, error) {
	ds := resp.Destinations
	switch {
	case resp.Destinations == nil:
		return nil, nil
	case !resp.OK:
		return nil, fmt.Errorf("%w: destinations on a refusal", ErrBadDestinations)
	case !slices.Contains(caps, abi.CapabilityFetch):
		return nil, fmt.Errorf("%w: destinations from a kind that does not declare the %s capability", ErrBadDestinations, abi.CapabilityFetch)
	case len(ds) > abi.MaxDestinations:
		return nil, fmt.Errorf("%w: %d destinations, at most %d", ErrBadDestinations, len(ds), abi.MaxDestinations)
	}
	eps := make([]abi.Endpoint, len(ds))
	for i, d := range ds {
		ep, err := abi.ParseDestination(d.Target)
		if err != nil {
			return nil, fmt.Errorf("%w: destinations[%d]: %w", ErrBadDestinations, i, err)
		}
		if err := abi.CheckDestinationField(d.Field); err != nil {
			return nil, fmt.Errorf("%w: destinations[%d]: %w", ErrBadDestinations, i, err)
		}
		eps[i] = ep
	}
	return eps, nil
}

// checkDestination refuses a destination every fetch of the watch would
// be refused: a host outside the kind's fetch grants (watch_unobservable,
// as the issuer's not_granted), or an address the kind's destination guard
// refuses (destination_refused). The address check reads literals only
// (an IP, localhost, the inet_aton forms, through netguard's
// LiteralResolver): a name that needs DNS is judged at each fetch, since
// admission never reaches the network.
func (l *loaded) checkDestination(ctx context.Context, d abi.Destination, ep abi.Endpoint) *api.Error {
	kind := l.info.Kind
	field, from := "", ""
	if d.Field != "" {
		field = "params." + d.Field
		from = " (" + field + ")"
	}
	if !abi.HostGranted(l.entry.FetchHosts, ep.Host) {
		setting := fmt.Sprintf("kinds.%s.fetch_hosts", kind)
		return &api.Error{Code: api.CodeWatchUnobservable, Field: field, Setting: setting,
			Message: fmt.Sprintf("host %s%s is not granted to kind %s, so every fetch of the watch would be refused: add it to %s in %s",
				ep.Host, from, kind, setting, RegistryFile)}
	}
	_, err := l.guard.Resolve(ctx, netguard.LiteralResolver{}, ep.Host)
	var re *netguard.RefusedError
	if !errors.As(err, &re) {
		return nil // allowed, or a name only DNS can tell: judged at each fetch
	}
	what := "is " + re.Reason
	if re.Host != "" {
		what = fmt.Sprintf("reaches %s, %s", re.Addr, re.Reason)
	}
	setting := fmt.Sprintf("kinds.%s.private_ranges", kind)
	return &api.Error{Code: api.CodeDestinationRefused, Field: field, Setting: setting,
		Message: fmt.Sprintf("host %s%s %s, which the fetch destination guard refuses on every probe: name a public host, or allow its range in %s in %s",
			ep.Host, from, what, setting, RegistryFile)}
}

func describeGrants(caps []string) string {
	if len(caps) == 0 {
		return "none"
	}
	return strings.Join(caps, ", ")
}

func (r *Runtime) unknownKind(set *pluginSet, kind string) error {
	msg := fmt.Sprintf("no plugin serves kind %q", kind)
	for _, p := range set.problems {
		if p.Kind == kind {
			msg = fmt.Sprintf("the plugin for kind %q did not load: %v", kind, p)
		}
	}
	where := "the plugin directory (--plugins)"
	if r.cfg.Dir != "" {
		where = r.cfg.Dir
	}
	return &api.Error{Code: api.CodeWatchUnobservable, Message: msg + "; add its .wasm to " + where,
		Setting: fmt.Sprintf("kinds.%s.wasm", kind)}
}

// Observe makes one bounded observe call for a watch. Faults come back as a
// pending Observation with Fault set, and are counted. The error is for
// what is not "I could not tell": no plugin for the kind (the row settles
// unwatchable: errors.Is(err, ErrUnknownKind)), a plugin that raised an
// error (a call for the wrong kind: errors.Is(err, ErrRaised)), or ctx
// ending.
func (r *Runtime) Observe(ctx context.Context, req abi.ObserveRequest) (kind.Observation, error) {
	set := r.set.Load()
	l, ok := set.kinds[req.Kind]
	if !ok {
		return kind.Observation{}, fmt.Errorf("%w %q", kind.ErrUnknownKind, req.Kind)
	}
	in, err := json.Marshal(req)
	if err != nil {
		return kind.Observation{}, err
	}
	timeout := observeTimeout(r.rc.limits, l.entry)
	var obs kind.Observation
	_, err = r.invoke(ctx, l, abi.ExportObserve, in, timeout, func(out []byte) error {
		var err error
		obs, err = checkObservation(out, l.info.Standing)
		return err
	})
	if err != nil {
		var ce *kind.CallError
		if errors.As(err, &ce) && ce.Reason != kind.FaultRaised {
			return faulted(ce), nil
		}
		return kind.Observation{}, err
	}
	return obs, nil
}

func faulted(ce *kind.CallError) kind.Observation {
	return kind.Observation{Status: abi.StatusPending, Note: "plugin fault: " + ce.Reason + ": " + ce.Err.Error(), Fault: ce}
}

// invoke calls an export on a kind's module, keeping the module alive for
// the call even if a reload retires it meanwhile. check, when given, holds
// the output to the contract; a failure is a FaultContract. Each call is
// counted once, with its final outcome.
func (r *Runtime) invoke(ctx context.Context, l *loaded, export string, in []byte, timeout time.Duration, check func([]byte) error) ([]byte, error) {
	if !l.mod.acquire() {
		// Retired and closed between the lookup and now: the new set has
		// the kind's current module.
		if nl, ok := r.set.Load().kinds[l.info.Kind]; ok && nl != l && nl.mod.acquire() {
			l = nl
		} else {
			return nil, fmt.Errorf("%w %q", kind.ErrUnknownKind, l.info.Kind)
		}
	}
	defer l.mod.release(ctx)
	start := time.Now()
	out, err := l.mod.call(ctx, l.info.Kind, export, in, timeout)
	if err == nil && check != nil {
		if cerr := check(out); cerr != nil {
			err = &kind.CallError{Kind: l.info.Kind, Export: export, Reason: kind.FaultContract, Err: cerr}
		}
	}
	r.metrics.PluginCall(l.info.Kind, export, outcomeOf(err), time.Since(start))
	return out, err
}

// checkObservation decodes an observe output and holds it to the contract.
func checkObservation(out []byte, standing bool) (kind.Observation, error) {
	var resp abi.ObserveResponse
	if err := abi.StrictUnmarshal(out, &resp); err != nil {
		return kind.Observation{}, fmt.Errorf("observe output: %w", err)
	}
	obs := kind.Observation{Status: resp.Status, Note: resp.Note, Outcome: resp.Outcome, Baseline: resp.Baseline}
	if resp.NextCheck != nil {
		obs.NextCheck = *resp.NextCheck
	}
	hasBase := len(resp.Baseline) > 0 && string(resp.Baseline) != "null"
	switch resp.Status {
	case abi.StatusPending:
		if resp.Outcome != nil {
			return obs, errors.New("pending with an outcome")
		}
	case abi.StatusSettled:
		if standing {
			return obs, errors.New("a standing kind answered settled")
		}
		if resp.NextCheck != nil {
			return obs, errors.New("next_check on a settled answer")
		}
	case abi.StatusChanged:
		if !standing {
			return obs, errors.New("changed from a kind that is not standing")
		}
		if !hasBase {
			return obs, errors.New("changed without a baseline")
		}
	default:
		return obs, fmt.Errorf("unknown status %q", resp.Status)
	}
	if resp.Status != abi.StatusPending && (resp.Outcome == nil || resp.Outcome.Result == "") {
		return obs, fmt.Errorf("%s without an outcome result", resp.Status)
	}
	// A wait may keep a baseline between probes (the http kind's first
	// fingerprint) on a pending answer; a settled one ends the watch.
	if hasBase && !standing && resp.Status != abi.StatusPending {
		return obs, errors.New("a baseline on a settled answer from a kind that is not standing")
	}
	return obs, nil
}
