package conformance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/tetratelabs/wazero"

	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/sdk/abi"
)

// Options configure a run of the suite. The zero value runs every check
// with the defaults.
type Options struct {
	// CasesDir holds the author's cases, one JSON file each; "" for none.
	CasesDir string
	// Run and Skip select checks by id, as regular expressions matched
	// anywhere in the id (like go test -run): a check runs when it
	// matches Run (or Run is "") and does not match Skip (or Skip is "").
	Run, Skip string
	// CacheDir keeps wazero's compilation cache, so a second run does not
	// compile the plugin again; "" keeps one for this run only.
	CacheDir string
	// Seed seeds the generated params; 0 is the suite's fixed seed, so two
	// runs check the same params.
	Seed uint64
	// Generated is how many params robustness.generated-params tries
	// (default 300).
	Generated int
	// ExecPrograms are the programs the suite grants a kind that declares
	// the exec capability (the fake exec runs none of them). Default: the
	// example's argv[0] when its params have an "argv" list, else "true".
	ExecPrograms []string
	// CallTimeout bounds describe and admit (default: the host's, 1 s).
	// Raise it only where the machine is far busier than a host would be
	// (the suite's own tests on a shared CI machine): a plugin the suite
	// passes with more time may still miss the host's bound.
	CallTimeout time.Duration
}

// defaultSeed is the generator's fixed seed.
const defaultSeed = 20261130

// The input every observation of the example gets: one fixed instant,
// one watch, attempt 1 (2 when a baseline is fed back).
var (
	suiteNow     = time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)
	suiteWatchID = "conformance"
)

// The guest wall clocks observe.no-wall-clock runs the plugin under, with
// the input's now fixed: the earliest instant a WASI clock can say (its
// timestamps count nanoseconds from 1970), and one near the latest
// wazero's can (it holds them in an int64, which ends in April 2262).
// Whatever instant a plugin compares the guest's clock with, one of the
// two lies before it and the other after, so a plugin that reads the
// guest's clock instead of now answers differently under them whatever
// its example. Clocks closer together (wazero's default, 2022, and a year
// on) both lie before an instant in the future and miss it.
var (
	earliestGuestClock = time.Unix(0, 0).UTC()
	latestGuestClock   = time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)
)

// guestClock is a guest wall clock starting at start and moving a
// millisecond on per reading, as wazero's fake one does.
func guestClock(start time.Time) func() time.Time {
	var reads atomic.Int64
	return func() time.Time { return start.Add(time.Duration(reads.Add(1)-1) * time.Millisecond) }
}

// suite is one run over one plugin file.
type suite struct {
	opts      Options
	run, skip *regexp.Regexp
	wasm      []byte
	fetch     *fakeFetch
	meter     *meter
	dir       string // the plugin directory the runtime loads

	results map[string]Result
	order   []string // cases ids, in file order

	desc   describeOutcome
	d      abi.Describe
	rt     *plugin.Runtime
	info   kind.Info
	noLoad string // why the runtime did not load the kind
	// noServe says why a loaded kind cannot be admitted: it needs a
	// capability the suite cannot grant.
	noServe string

	example  json.RawMessage // admitted example params; nil if none
	probes   []invalidProbe
	admits   atomic.Int64 // admit calls made
	admitMu  sync.Mutex
	admitHit []string // fetches made from admit
	// badDests are admit answers whose destinations broke the contract
	// (under admitMu).
	badDests []string
	// badNextChecks are admit answers whose next_check broke the
	// contract (under admitMu).
	badNextChecks []string
	// exampleAdm is the example's admission, when it was admitted.
	exampleAdm *kind.Admission

	first        *obsCall // the example's first observation
	exampleCalls []*obsCall
	nondet       bool // observe.deterministic saw two answers

	// generated is robustness's params, each admitted once; nil until
	// the first check that needs them (generatedParams).
	generated *generatedSet
}

// generatedSet is the generated params and what admitting each answered.
type generatedSet struct {
	params   []json.RawMessage
	admitted []bool
	refused  int
	// problems are admits that neither refused nor admitted, as
	// robustness.generated-params reports them.
	problems []string
}

// obsCall is one observe through the runtime.
type obsCall struct {
	label string
	obs   kind.Observation
	err   error
	reqs  []abi.FetchRequest
	took  time.Duration
}

// Check runs the suite over the plugin at wasmPath. The error is for what
// stops the suite from running at all (an unreadable file, a bad Run or
// Skip expression, an unreadable cases directory, ctx ending); everything
// wrong with the plugin is a failed check in the Report.
func Check(ctx context.Context, wasmPath string, opts Options) (Report, error) {
	start := time.Now()
	s := &suite{opts: opts, fetch: &fakeFetch{}, meter: &meter{}, results: map[string]Result{}}
	if s.opts.Generated <= 0 {
		s.opts.Generated = 300
	}
	if s.opts.Seed == 0 {
		s.opts.Seed = defaultSeed
	}
	var err error
	if opts.Run != "" {
		if s.run, err = regexp.Compile(opts.Run); err != nil {
			return Report{}, fmt.Errorf("run: %w", err)
		}
	}
	if opts.Skip != "" {
		if s.skip, err = regexp.Compile(opts.Skip); err != nil {
			return Report{}, fmt.Errorf("skip: %w", err)
		}
	}
	cases, err := readCases(opts.CasesDir)
	if err != nil {
		return Report{}, err
	}
	if s.wasm, err = os.ReadFile(wasmPath); err != nil {
		return Report{}, err
	}
	sum := sha256.Sum256(s.wasm)
	rep := Report{SuiteVersion: SuiteVersion, File: wasmPath, SHA256: hex.EncodeToString(sum[:])}

	if s.opts.CacheDir == "" {
		// One cache for the run, so the probe and the runtimes compile
		// the module once between them.
		tmp, err := os.MkdirTemp("", "vigil-conformance-cache-")
		if err != nil {
			return Report{}, err
		}
		defer func() { _ = os.RemoveAll(tmp) }()
		s.opts.CacheDir = tmp
	}
	err = s.all(ctx, cases)
	if s.rt != nil {
		_ = s.rt.Close(context.WithoutCancel(ctx))
	}
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return Report{}, err
	}

	rep.Kind, rep.Version, rep.Standing = s.d.Kind, s.d.Version, s.d.Standing
	ids := make([]string, 0, len(specs)+len(s.order))
	for _, sp := range specs {
		ids = append(ids, sp.ID)
	}
	ids = append(ids, s.order...)
	rep.Passed = true
	for _, id := range ids {
		res, ok := s.results[id]
		if !ok {
			continue
		}
		rep.Results = append(rep.Results, res)
		if res.Status == Fail && res.Level == Required {
			rep.Passed = false
		}
	}
	rep.Duration = time.Since(start)
	return rep, nil
}

// selected reports whether check id is to run.
func (s *suite) selected(id string) bool {
	return (s.run == nil || s.run.MatchString(id)) && (s.skip == nil || !s.skip.MatchString(id))
}

func (s *suite) anySelected(ids ...string) bool {
	return slices.ContainsFunc(ids, s.selected)
}

// record sets the result of id, if it is selected.
func (s *suite) record(id string, st Status, took time.Duration, format string, args ...any) {
	if !s.selected(id) {
		return
	}
	sp := specOf(id)
	res := Result{ID: id, Level: sp.Level, Status: st, Message: fmt.Sprintf(format, args...), Why: sp.Why, Duration: took}
	if st == Fail {
		res.Fix = sp.Fix
	}
	s.results[id] = res
}

// timed runs a check that returns its status and message, if selected.
func (s *suite) timed(id string, f func() (Status, string)) {
	if !s.selected(id) {
		return
	}
	t := time.Now()
	st, msg := f()
	s.record(id, st, time.Since(t), "%s", msg)
}

func (s *suite) skipAll(msg string, ids ...string) {
	for _, id := range ids {
		if _, done := s.results[id]; !done {
			s.record(id, Skip, 0, "%s", msg)
		}
	}
}

var (
	describeIDs = []string{DescribeABI, DescribeKindGrammar, DescribeSemver, DescribeSchema,
		DescribeCapabilities, DescribeDefaultEvery, DescribeDeterministic}
	admitIDs   = []string{AdmitExample, AdmitRefusesInvalid, AdmitDeterministic, AdmitDestinations, AdmitNamesDests, AdmitNextCheck, AdmitNoFetch}
	observeIDs = []string{ObserveValidResult, ObserveFetchFailure, ObserveExecFailure, ObserveDeterministic,
		ObserveNoWallClock, ObserveBudget, ObserveDeadline}
	standingIDs = []string{StandingFirstSilent, StandingUnchanged, StandingChanged}
)

// needsExample lists the checks that need an answer to the example.
var needsExample = append(append(slices.Clone(observeIDs), standingIDs...), RobustnessGenerated)

func (s *suite) all(ctx context.Context, cases []caseSource) error {
	cache, err := wazero.NewCompilationCacheWithDir(s.opts.CacheDir)
	if err != nil {
		return fmt.Errorf("compilation cache %s: %w", s.opts.CacheDir, err)
	}
	defer func() { _ = cache.Close(context.WithoutCancel(ctx)) }()

	caseIDs := make([]string, len(cases))
	for i, c := range cases {
		caseIDs[i] = c.id
	}
	rest := append(append(append(append(append(slices.Clone(admitIDs), needsExample...), ObserveWrongKind), wakeIDs...), caseIDs...), describeIDs...)

	t := time.Now()
	pr, err := openProbe(ctx, s.wasm, cache, s.fetch)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.record(DescribeExports, Fail, time.Since(t), "the module does not compile: %v", err)
		s.skipAll("the module does not compile (describe.exports)", rest...)
		s.order = caseIDs
		return nil
	}
	defer pr.close(context.WithoutCancel(ctx))
	s.desc = pr.describe(ctx)
	s.describeChecks(time.Since(t))
	s.order = caseIDs

	if err := s.load(ctx); err != nil {
		return err
	}
	if s.rt == nil {
		s.skipAll("the runtime refused the plugin: "+s.noLoad, rest...)
		return nil
	}

	if s.noServe != "" {
		s.skipAll(s.noServe, rest...)
		return nil
	}
	s.admitChecks(ctx)
	s.timed(ObserveWrongKind, func() (Status, string) { return s.wrongKind(ctx, pr) })
	s.wakeChecks(ctx, pr)
	s.observeChecks(ctx)
	if s.selected(RobustnessGenerated) {
		s.robustness(ctx)
	}
	for _, c := range cases {
		if s.selected(c.id) {
			s.runCase(ctx, c)
		}
	}
	// Last: every admit the suite made counts.
	s.timed(AdmitDestinations, s.destinationsOnContract)
	s.timed(AdmitNextCheck, s.nextCheckOnContract)
	s.timed(AdmitNoFetch, func() (Status, string) {
		s.admitMu.Lock()
		defer s.admitMu.Unlock()
		if len(s.admitHit) > 0 {
			return Fail, fmt.Sprintf("admit asked for %d fetch(es); first: %s", len(s.admitHit), s.admitHit[0])
		}
		return Pass, fmt.Sprintf("%d admit calls, no fetch", s.admits.Load())
	})
	return ctx.Err()
}

// describeChecks judges describe's answers, as the probe had them.
func (s *suite) describeChecks(took time.Duration) {
	d := s.desc
	switch {
	case d.err != nil:
		s.record(DescribeExports, Fail, took, "no instance could be started: %v", d.err)
		s.skipAll("no instance could be started (describe.exports)", describeIDs...)
		return
	case len(d.missing) > 0:
		s.record(DescribeExports, Fail, took, "missing export(s): %s", strings.Join(d.missing, ", "))
	case d.wake:
		s.record(DescribeExports, Pass, took, "describe, admit and observe are exported, and the optional wake")
	default:
		s.record(DescribeExports, Pass, took, "describe, admit and observe are exported (the optional wake is not)")
	}
	if slices.Contains(d.missing, abi.ExportDescribe) {
		s.skipAll("there is no describe to call (describe.exports)", describeIDs...)
		return
	}
	if msg := callProblem(d.first); msg != "" {
		s.record(DescribeABI, Fail, took, "describe %s", msg)
		s.skipAll("describe did not answer (describe.abi)", describeIDs...)
		return
	}
	if err := json.Unmarshal(d.first.out, &s.d); err != nil {
		s.record(DescribeABI, Fail, took, "describe's answer is not the contract's JSON: %v", err)
		s.skipAll("describe's answer does not decode (describe.abi)", describeIDs...)
		return
	}
	dd := s.d
	if dd.ABI != abi.Version {
		s.record(DescribeABI, Fail, took, "abi %q, want %q", dd.ABI, abi.Version)
	} else {
		s.record(DescribeABI, Pass, took, "abi %s", dd.ABI)
	}
	if err := abi.CheckKind(dd.Kind); err != nil {
		s.record(DescribeKindGrammar, Fail, 0, "%v", err)
	} else {
		s.record(DescribeKindGrammar, Pass, 0, "kind %s", dd.Kind)
	}
	if !abi.ValidSemver(dd.Version) {
		s.record(DescribeSemver, Fail, 0, "version %q is not a semantic version", dd.Version)
	} else {
		s.record(DescribeSemver, Pass, 0, "version %s", dd.Version)
	}
	if err := compileSchema(dd.ParamsSchema); err != nil {
		s.record(DescribeSchema, Fail, 0, "%v", err)
	} else {
		s.record(DescribeSchema, Pass, 0, "params_schema compiles")
	}
	st, msg := capabilities(dd.Capabilities)
	s.record(DescribeCapabilities, st, 0, "%s", msg)
	st, msg = defaultEvery(dd.DefaultEvery)
	s.record(DescribeDefaultEvery, st, 0, "%s", msg)
	s.timed(DescribeDeterministic, func() (Status, string) {
		for _, c := range []struct {
			what string
			call rawCall
		}{{"a second call on the same instance", d.again}, {"a fresh instance", d.fresh}} {
			if msg := callProblem(c.call); msg != "" {
				return Fail, fmt.Sprintf("describe on %s %s", c.what, msg)
			}
			if !bytes.Equal(c.call.out, d.first.out) {
				return Fail, fmt.Sprintf("describe on %s answered differently: %s, then %s", c.what, clip(d.first.out), clip(c.call.out))
			}
		}
		return Pass, "the same answer three times, on two instances"
	})
}

// callProblem says what is wrong with a call that should have answered.
func callProblem(c rawCall) string {
	switch {
	case c.fault != nil:
		return "faulted: " + c.fault.Error()
	case c.raised != "":
		return "raised an error: " + c.raised
	}
	return ""
}

func capabilities(caps []string) (Status, string) {
	known := abi.KnownCapabilities()
	for i, c := range caps {
		if !slices.Contains(known, c) {
			return Fail, fmt.Sprintf("unknown capability %q (this ABI defines: %s)", c, strings.Join(known, ", "))
		}
		if slices.Contains(caps[:i], c) {
			return Fail, fmt.Sprintf("capability %q listed twice", c)
		}
	}
	if len(caps) == 0 {
		return Pass, "no capabilities"
	}
	return Pass, strings.Join(caps, ", ")
}

// Bounds on default_every, the host's.
const (
	minEvery = time.Second
	maxEvery = 24 * time.Hour
)

func defaultEvery(s string) (Status, string) {
	if s == "" {
		return Pass, "the host's default"
	}
	every, err := time.ParseDuration(s)
	if err != nil {
		return Fail, fmt.Sprintf("default_every %q: %v", s, err)
	}
	if every < minEvery || every > maxEvery {
		return Fail, fmt.Sprintf("default_every %s: want between %s and %s", every, minEvery, maxEvery)
	}
	return Pass, every.String()
}

// compileSchema compiles a params schema as the host does: draft 2020-12
// by default, formats asserted, no reference outside the document.
func compileSchema(raw json.RawMessage) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return errors.New("params_schema is missing")
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("params_schema is not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	const url = "vigil:params.json"
	if err := c.AddResource(url, doc); err != nil {
		return fmt.Errorf("params_schema: %w", err)
	}
	if _, err := c.Compile(url); err != nil {
		return fmt.Errorf("params_schema does not compile: %w", err)
	}
	return nil
}

type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema reference %q: only references within the schema are allowed", url)
}

// clip shortens a JSON value for a message.
func clip(b []byte) string {
	const max = 160
	s := string(b)
	if len(s) > max {
		return s[:max] + fmt.Sprintf("… (%d bytes)", len(s))
	}
	return s
}

// load starts the runtime over a plugin directory holding a copy of the
// file and a registry entry granting the kind what it declares of what the
// suite can fake: fetch, with fetch_hosts ["*"], since the suite's fake
// fetch answers and nothing reaches a network; exec, with the programs
// execPrograms names, since the suite's fake exec runs nothing. The
// limits are production's defaults.
func (s *suite) load(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "vigil-conformance-")
	if err != nil {
		return err
	}
	s.dir = dir
	name := "plugin.wasm"
	if abi.ValidKind(s.d.Kind) {
		name = s.d.Kind + ".wasm"
	}
	if err := os.WriteFile(filepath.Join(dir, name), s.wasm, 0o600); err != nil {
		return err
	}
	if abi.ValidKind(s.d.Kind) {
		entry := plugin.Entry{Wasm: name}
		if slices.Contains(s.d.Capabilities, abi.CapabilityFetch) {
			entry.Capabilities, entry.FetchHosts = append(entry.Capabilities, abi.CapabilityFetch), []string{"*"}
		}
		if slices.Contains(s.d.Capabilities, abi.CapabilityExec) {
			entry.Capabilities = append(entry.Capabilities, abi.CapabilityExec)
			entry.Exec = &plugin.ExecGrant{Programs: s.execPrograms()}
		}
		reg, err := json.Marshal(plugin.Registry{Kinds: map[string]plugin.Entry{s.d.Kind: entry}})
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, plugin.RegistryFile), reg, 0o600); err != nil {
			return err
		}
	}
	rt, err := s.newRuntime(ctx, nil)
	if err != nil {
		return err
	}
	info, ok := rt.Lookup(s.d.Kind)
	if !ok {
		var why []string
		for _, p := range rt.Problems() {
			why = append(why, fmt.Sprintf("%s: %v", p.Rule, p.Err))
		}
		if len(why) == 0 {
			why = append(why, "no kind was served")
		}
		s.noLoad = strings.Join(why, "; ")
		_ = rt.Close(ctx)
		return nil
	}
	s.rt, s.info = rt, info
	if !info.Observable {
		s.noServe = fmt.Sprintf("the kind declares capabilities %s, and suite %d fakes only %s and %s; it cannot grant the rest (%s)",
			strings.Join(info.Capabilities, ", "), SuiteVersion, abi.CapabilityFetch, abi.CapabilityExec, info.Setting)
	}
	return nil
}

// execPrograms is the exec grant's program list: Options.ExecPrograms, or
// the example's argv[0], or "true".
func (s *suite) execPrograms() []string {
	if len(s.opts.ExecPrograms) > 0 {
		return s.opts.ExecPrograms
	}
	var ex struct {
		Argv []string `json:"argv"`
	}
	if json.Unmarshal(s.d.Example, &ex) == nil && len(ex.Argv) > 0 && ex.Argv[0] != "" {
		return []string{ex.Argv[0]}
	}
	return []string{"true"}
}

// newRuntime starts a runtime over the suite's plugin directory; clock,
// when not nil, is the guest's wall clock.
func (s *suite) newRuntime(ctx context.Context, clock func() time.Time) (*plugin.Runtime, error) {
	rt, err := plugin.New(ctx, plugin.Config{
		Dir: s.dir, CacheDir: s.opts.CacheDir, Fetcher: s.fetch, Execer: fakeExec{}, Metrics: s.meter, WallClock: clock,
		Limits: plugin.Limits{CallTimeout: s.opts.CallTimeout},
	})
	if err != nil {
		return nil, fmt.Errorf("starting the plugin runtime: %w", err)
	}
	return rt, nil
}

// admit makes one admit call through the runtime, counting any fetch the
// plugin asks for. Admits never run beside observes, so the meter's count
// over the call is admit's own.
func (s *suite) admit(ctx context.Context, params json.RawMessage) (kind.Admission, error) {
	s.admits.Add(1)
	before := s.meter.fetches.Load()
	sctx, sc := withScope(ctx, answerAdmit)
	a, err := s.rt.Admit(sctx, s.info.Kind, params)
	reqs := sc.requests()
	if n := s.meter.fetches.Load() - before; n > 0 || len(reqs) > 0 {
		what := "a fetch the runtime refused (the kind is not granted fetch)"
		if len(reqs) > 0 {
			what = reqs[0].Method + " " + reqs[0].URL
		}
		s.admitMu.Lock()
		s.admitHit = append(s.admitHit, fmt.Sprintf("%s, admitting %s", what, clip(params)))
		s.admitMu.Unlock()
	}
	if errors.Is(err, plugin.ErrBadDestinations) {
		s.admitMu.Lock()
		s.badDests = append(s.badDests, fmt.Sprintf("admitting %s: %v", clip(params), err))
		s.admitMu.Unlock()
	}
	if errors.Is(err, plugin.ErrBadNextCheck) {
		s.admitMu.Lock()
		s.badNextChecks = append(s.badNextChecks, fmt.Sprintf("admitting %s: %v", clip(params), err))
		s.admitMu.Unlock()
	}
	return a, err
}

// observe makes one observe call through rt, the fake fetch answering
// with a.
func (s *suite) observe(ctx context.Context, rt *plugin.Runtime, label string, req abi.ObserveRequest, a answerer) *obsCall {
	sctx, sc := withScope(ctx, a)
	t := time.Now()
	obs, err := rt.Observe(sctx, req)
	return &obsCall{label: label, obs: obs, err: err, reqs: sc.requests(), took: time.Since(t)}
}

// exampleReq is the observe input of the example, with baseline.
func (s *suite) exampleReq(baseline json.RawMessage) abi.ObserveRequest {
	req := abi.ObserveRequest{Kind: s.info.Kind, WatchID: suiteWatchID, Params: s.example, Now: suiteNow, Attempt: 1}
	if len(baseline) > 0 {
		req.Baseline, req.Attempt = baseline, 2
	}
	return req
}

// observeExample observes the example and keeps the call for
// observe.budget.
func (s *suite) observeExample(ctx context.Context, rt *plugin.Runtime, label string, baseline json.RawMessage, a answerer) *obsCall {
	c := s.observe(ctx, rt, label, s.exampleReq(baseline), a)
	s.exampleCalls = append(s.exampleCalls, c)
	return c
}
