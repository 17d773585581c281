package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/conformance"
	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/internal/host"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// The exit codes of vigil plugin try: 0 the plugin answered (pending
// included), and one each for what stopped it short. A usage error is
// ExitUsage, as for every command.
const (
	tryAnswered  = 0
	tryRefused   = 2 // admit refused the params or the kind is not observable
	tryFault     = 3 // the plugin faulted or raised an error in admit or observe
	tryLoadError = 4 // the settings, the file or the kind could not be loaded
)

// tryRecipient is the recipient a dry run observes for: vigil_exec runs in
// --workspace whoever it is.
const tryRecipient = "vigil-plugin-try"

// tryReport is what vigil plugin try prints, and its --json.
type tryReport struct {
	Kind    string          `json:"kind,omitempty"`
	File    string          `json:"file,omitempty"`
	Source  string          `json:"source,omitempty"`
	SHA256  string          `json:"sha256,omitempty"`
	Version string          `json:"version,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	// Load says why nothing was tried: the settings, the file or the kind.
	Load    *tryLoad    `json:"load_error,omitempty"`
	Admit   *tryAdmit   `json:"admit,omitempty"`
	Observe *tryObserve `json:"observe,omitempty"`
	// Wake is the event tried (--event) and the keys it woke.
	Wake *tryWake `json:"wake,omitempty"`
	// Fetches and Commands are what the plugin asked the host for, in
	// order, admit's and observe's alike.
	Fetches  []tryFetch   `json:"fetches"`
	Commands []tryCommand `json:"commands"`
	Warnings []string     `json:"warnings"`
	ExitCode int          `json:"exit_code"`
}

type tryLoad struct {
	Rule    string `json:"rule,omitempty"`
	File    string `json:"file,omitempty"`
	Setting string `json:"setting,omitempty"`
	Error   string `json:"error"`
}

type tryAdmit struct {
	OK bool `json:"ok"`
	// Code, Field, Setting and Message are a refusal's, as the API would
	// answer it (422), or a fault's (Code plugin_fault).
	Code    string `json:"code,omitempty"`
	Field   string `json:"field,omitempty"`
	Setting string `json:"setting,omitempty"`
	Message string `json:"message,omitempty"`
	// Deadline is the natural deadline admit gave (a timer's instant and
	// its grace), if any.
	Deadline     *time.Time        `json:"deadline,omitempty"`
	Destinations []abi.Destination `json:"destinations,omitempty"`
	// NextCheck is the first check admit gave (a timer's instant): serve
	// arms the watch there instead of probing it at once.
	NextCheck *time.Time `json:"next_check,omitempty"`
}

type tryObserve struct {
	Status    string          `json:"status"`
	Note      string          `json:"note,omitempty"`
	NextCheck *time.Time      `json:"next_check,omitempty"`
	Outcome   *abi.Outcome    `json:"outcome,omitempty"`
	Baseline  json.RawMessage `json:"baseline,omitempty"`
	// Fault is why the plugin gave no answer (a timeout, a trap, an
	// answer off the contract, an error it raised).
	Fault *tryFaultInfo `json:"fault,omitempty"`
	// Now is the instant observed; Every the cadence serve would probe
	// at; Deadline the deadline serve would give the watch (the natural
	// one, else the default for an open-ended kind; none when standing);
	// NextProbe when serve would probe it next, for a pending answer.
	Now       time.Time  `json:"now"`
	Every     string     `json:"every"`
	Deadline  *time.Time `json:"deadline,omitempty"`
	NextProbe *time.Time `json:"next_probe,omitempty"`
}

type tryFaultInfo struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

type tryFetch struct {
	Method      string            `json:"method"`
	URL         string            `json:"url"`
	Status      int               `json:"status,omitempty"`
	Bytes       int               `json:"bytes"`
	DurationMS  float64           `json:"duration_ms"`
	FromCache   bool              `json:"from_cache"`
	NotModified bool              `json:"not_modified,omitempty"`
	Failure     *abi.FetchFailure `json:"failure,omitempty"`
}

type tryCommand struct {
	Argv       []string          `json:"argv"`
	ExitCode   int               `json:"exit_code"`
	TimedOut   bool              `json:"timed_out,omitempty"`
	Stdout     int               `json:"stdout_bytes"`
	Stderr     int               `json:"stderr_bytes"`
	DurationMS float64           `json:"duration_ms"`
	Failure    *abi.FetchFailure `json:"failure,omitempty"`
}

// recorder keeps what the plugin asked the host for, in order.
type recorder struct {
	// clock is the dry run's time: the instant observed and how long
	// each fetch and command took.
	clock clock.Clock
	mu    sync.Mutex // guards fetches, commands
	// fetches and commands are appended as each call returns.
	fetches  []tryFetch
	commands []tryCommand
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// recordingFetcher hands each fetch to the issuer and records it.
type recordingFetcher struct {
	rec  *recorder
	next plugin.Fetcher
}

var (
	_ plugin.Fetcher            = recordingFetcher{}
	_ plugin.ExtractionReporter = recordingFetcher{}
	_ plugin.Execer             = recordingExecer{}
)

func (f recordingFetcher) Fetch(ctx context.Context, call plugin.FetchCall) abi.FetchResponse {
	start := f.rec.clock.Now()
	resp := f.next.Fetch(ctx, call)
	took := f.rec.clock.Now().Sub(start)
	f.rec.mu.Lock()
	defer f.rec.mu.Unlock()
	f.rec.fetches = append(f.rec.fetches, tryFetch{
		Method: call.Request.Method, URL: call.Request.URL, Status: resp.Status, Bytes: len(resp.Body), DurationMS: ms(took),
		FromCache: resp.FromCache, NotModified: resp.NotModified, Failure: resp.Failure,
	})
	return resp
}

// ExtractionFailed passes the report on, as the issuer would have it.
func (f recordingFetcher) ExtractionFailed(ctx context.Context, call plugin.ExtractionCall) abi.ExtractionFailedResponse {
	if r, ok := f.next.(plugin.ExtractionReporter); ok {
		return r.ExtractionFailed(ctx, call)
	}
	return abi.ExtractionFailedResponse{Failure: &abi.FetchFailure{Reason: abi.FetchUnavailable, Message: "this host's fetcher keeps no validators"}}
}

// recordingExecer hands each command to the runner and records it.
type recordingExecer struct {
	rec  *recorder
	next plugin.Execer
}

func (x recordingExecer) Exec(ctx context.Context, call plugin.ExecCall) abi.ExecResponse {
	start := x.rec.clock.Now()
	resp := x.next.Exec(ctx, call)
	took := x.rec.clock.Now().Sub(start)
	x.rec.mu.Lock()
	defer x.rec.mu.Unlock()
	x.rec.commands = append(x.rec.commands, tryCommand{
		Argv: call.Request.Argv, ExitCode: resp.ExitCode, TimedOut: resp.TimedOut, Stdout: len(resp.Stdout), Stderr: len(resp.Stderr),
		DurationMS: ms(took), Failure: resp.Failure,
	})
	return resp
}

func newPluginTry(stdout io.Writer) *cobra.Command {
	var params, baseline, workspace, every string
	var ev eventFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "try KIND_OR_FILE",
		Short: "Admit and observe one watch locally, through the real host path, and say what happened",
		Long: `A dry run of one watch: load the plugins as serve would (the same flags,
environment and config file: the plugin directory and its registry, the
grants, the secrets, the fetch settings), admit the params, and make one
real observation through the host's own path: the kind's grants, the fetch
issuer and its destination guard, the exec runner. Nothing is registered,
no store is opened and no server is needed; only the compilation cache is
written.

KIND_OR_FILE is a kind, or the path of a .wasm to load beside the others
(it serves its kind, under the grants the registry gives that kind, over
any other file that claims it). --params is the watch's params as JSON,
@FILE to read them from a file, or - to read them from standard input; by
default, the example the kind's describe gives. --baseline, in the same
forms, is the baseline a standing watch recorded (an earlier try's), to try
the check after the first.

It prints the admission (or the refusal with its code and the field or
setting at fault), the answer (state, note, next_check, the natural
deadline, and when serve would probe next), every fetch the plugin made
(method, URL, status, bytes, time, whether from the issuer's cache) and why
any was refused, the commands it ran, and a warning when a pending answer
would leave the watch to expire at its deadline.

With --event FILE (- for standard input), it admits and observes nothing:
it hands the recorded event in FILE (its JSON body, at most 1 MiB, as a
hook source would receive it) to the kind's wake, as event --event-name
from a source of scheme --source, and prints the partition keys it
answered: the watches the event would make due now.

Exit codes:
  0  the plugin answered (pending, settled or changed)
  2  admit refused: invalid_params, watch_unobservable, destination_refused
  3  the plugin faulted (timeout, trap, memory, an answer off the contract)
     or raised an error, in admit, observe or wake
  4  nothing to try: the settings, the plugin file or the kind did not load,
     or (--event) the kind does not wake
  64 a usage error (bad flags, params that are not JSON)`,
		Args: exactArgs("KIND_OR_FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var cadence time.Duration
			if every != "" {
				d, err := time.ParseDuration(every)
				if err != nil || d <= 0 {
					return usagef("--every %q: want a positive Go duration (30s, 5m)", every)
				}
				cadence = d
			}
			if params == "-" && baseline == "-" {
				return usagef("--params and --baseline cannot both read standard input")
			}
			event, err := ev.read(cmd, params, baseline, every)
			if err != nil {
				return err
			}
			raw, err := readParams(params, cmd.InOrStdin())
			if err != nil {
				return err
			}
			base, err := readJSONFlag("--baseline", baseline, cmd.InOrStdin())
			if err != nil {
				return err
			}
			if workspace == "" {
				if workspace, err = os.Getwd(); err != nil {
					return err
				}
			} else if workspace, err = filepath.Abs(workspace); err != nil {
				return err
			}
			rep := tryPlugin(cmd.Context(), cmd, tryInput{target: args[0], params: raw, baseline: base, workspace: workspace, every: cadence, clock: clock.Wall{}, event: event})
			if err := cmd.Context().Err(); err != nil {
				return err
			}
			if asJSON {
				if err := printJSON(stdout, rep); err != nil {
					return err
				}
			} else if err := rep.writeText(stdout); err != nil {
				return err
			}
			if rep.ExitCode != tryAnswered {
				return &exitError{Code: rep.ExitCode}
			}
			return nil
		},
	}
	// The server flags of vigil plugin do not apply: nothing here talks
	// to a server, so help does not offer them.
	cmd.SetHelpFunc(func(c *cobra.Command, args []string) {
		for _, name := range []string{"server", "token"} {
			if f := c.InheritedFlags().Lookup(name); f != nil {
				f.Hidden = true
			}
		}
		c.Root().HelpFunc()(c, args)
	})
	localFlags(cmd)
	cmd.Flags().StringVar(&params, "params", "", "the watch's params: JSON, @FILE, or - for standard input (default: the kind's example)")
	cmd.Flags().StringVar(&baseline, "baseline", "", "the baseline a standing watch recorded (an earlier try's baseline): JSON, @FILE, or -; the observation is then attempt 2")
	cmd.Flags().StringVar(&workspace, "workspace", "", "the directory commands run in (vigil_exec), as a recipient's workspace (default: the current directory)")
	cmd.Flags().StringVar(&every, "every", "", "the watch's cadence, as a registration's every (default: the kind's default_every)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	ev.register(cmd)
	return cmd
}

// readParams reads --params: JSON as given, @FILE, or - for stdin; ""
// is none (the kind's example).
func readParams(v string, stdin io.Reader) (json.RawMessage, error) {
	return readJSONFlag("--params", v, stdin)
}

// readJSONFlag reads a flag that takes JSON as given, @FILE, or - for
// stdin, at most 1 MiB of it; "" is none.
func readJSONFlag(flag, v string, stdin io.Reader) (json.RawMessage, error) {
	var b []byte
	switch {
	case v == "":
		return nil, nil
	case v == "-":
		var err error
		if b, err = io.ReadAll(io.LimitReader(stdin, 1<<20+1)); err != nil {
			return nil, &usageError{fmt.Errorf("%s -: %w", flag, err)}
		}
	case strings.HasPrefix(v, "@"):
		var err error
		if b, err = os.ReadFile(v[1:]); err != nil {
			return nil, &usageError{fmt.Errorf("%s: %w", flag, err)}
		}
	default:
		b = []byte(v)
	}
	if len(b) > 1<<20 {
		return nil, usagef("%s: more than 1 MiB", flag)
	}
	if !json.Valid(b) {
		return nil, usagef("%s: not JSON: %s", flag, clipText(string(b), 80))
	}
	return json.RawMessage(b), nil
}

// clipText is s on one line, its runs of white space one space each,
// clipped to n runes.
func clipText(s string, n int) string { return clip(strings.Join(strings.Fields(s), " "), n) }

// tryInput is one dry run.
type tryInput struct {
	target    string // a kind, or the path of a .wasm
	params    json.RawMessage
	baseline  json.RawMessage // nil: the first check
	workspace string
	every     time.Duration
	clock     clock.Clock
	// event, when set, is tried with the kind's wake instead of admit
	// and observe.
	event *tryEvent
}

// isPluginFile says whether a KIND_OR_FILE names a file: a kind has no
// path separator and no .wasm suffix (abi.ValidKind allows no separator,
// and no kind ends in .wasm that a file would not name better).
func isPluginFile(target string) bool {
	return strings.HasSuffix(target, ".wasm") || strings.ContainsRune(target, os.PathSeparator)
}

// tryPlugin makes the dry run and reports it; ExitCode says how it ended.
func tryPlugin(ctx context.Context, cmd *cobra.Command, in tryInput) (rep tryReport) {
	rec := &recorder{clock: in.clock}
	defer func() {
		rec.mu.Lock()
		rep.Fetches, rep.Commands = append([]tryFetch{}, rec.fetches...), append([]tryCommand{}, rec.commands...)
		rec.mu.Unlock()
		if rep.Warnings == nil {
			rep.Warnings = []string{}
		}
	}()
	loadFailed := func(l tryLoad) tryReport {
		rep.Load, rep.ExitCode = &l, tryLoadError
		return rep
	}
	extra := ""
	if isPluginFile(in.target) {
		if _, err := os.Stat(in.target); err != nil {
			return loadFailed(tryLoad{Rule: "read", File: in.target, Error: err.Error()})
		}
		extra = in.target
	}
	local, err := openLocal(ctx, cmd, localOptions{extra: extra, workspace: in.workspace, wrap: func(pc *host.PluginsConfig) {
		pc.WrapFetcher = func(f plugin.Fetcher) plugin.Fetcher { return recordingFetcher{rec, f} }
		pc.WrapExecer = func(x plugin.Execer) plugin.Execer { return recordingExecer{rec, x} }
	}})
	if err != nil {
		l := tryLoad{Error: err.Error()}
		var ce *configError
		if errors.As(err, &ce) {
			l.Setting = ce.Key
		}
		return loadFailed(l)
	}
	defer func() { _ = local.Close(context.WithoutCancel(ctx)) }()
	rt := local.Runtime

	info, ok := findTried(rt, in.target, extra)
	if !ok {
		l := tryLoad{File: extra, Error: fmt.Sprintf("no plugin serves kind %q", in.target)}
		if extra != "" {
			l.Error = "the file serves no kind"
		}
		for _, p := range rt.Problems() {
			if (extra != "" && p.File == extra) || (extra == "" && p.Kind == in.target) {
				l = tryLoad{Rule: p.Rule, File: p.File, Error: p.Error()}
			}
		}
		if extra == "" && l.Rule == "" {
			l.Setting = fmt.Sprintf("kinds.%s.wasm", in.target)
			l.Error += "; add its .wasm to the plugin directory (--plugins), or name the file to try"
		}
		return loadFailed(l)
	}
	rep.Kind, rep.File, rep.Source, rep.SHA256, rep.Version = info.Kind, info.File, info.Source, info.SHA256, info.Version
	if in.event != nil {
		return tryWakeEvent(ctx, rt, info, in.event, rep)
	}
	params := in.params
	if params == nil {
		params = info.Example
	}
	if len(params) == 0 {
		params = json.RawMessage("null")
	}
	rep.Params = params

	adm, err := rt.Admit(ctx, info.Kind, params)
	var ref *api.Error
	switch {
	case errors.As(err, &ref):
		rep.Admit = &tryAdmit{Code: ref.Code, Field: ref.Field, Setting: ref.Setting, Message: ref.Message}
		rep.ExitCode = tryRefused
		return rep
	case err != nil:
		rep.Admit = &tryAdmit{Code: api.CodePluginFault, Message: err.Error()}
		rep.ExitCode = tryFault
		return rep
	}
	rep.Admit = &tryAdmit{OK: true, Destinations: adm.Destinations}
	if !adm.Deadline.IsZero() {
		d := adm.Deadline.UTC()
		rep.Admit.Deadline = &d
	}
	if !adm.NextCheck.IsZero() {
		n := adm.NextCheck.UTC()
		rep.Admit.NextCheck = &n
	}

	every := in.every
	if every <= 0 {
		every = info.DefaultEvery
	}
	if every <= 0 {
		every = scheduler.DefaultEvery
	}
	now := in.clock.Now().UTC()
	id, err := store.NewID(now, rand.Reader)
	if err != nil {
		rep.Admit = nil
		return loadFailed(tryLoad{Error: err.Error()})
	}
	octx := kind.WithCadence(kind.WithRegistrant(kind.WithRecipient(ctx, tryRecipient), tryRecipient), every)
	req := abi.ObserveRequest{Kind: info.Kind, WatchID: id.String(), Params: params, Now: now, Attempt: 1}
	if in.baseline != nil {
		req.Baseline, req.Attempt = in.baseline, 2
	}
	obs, err := rt.Observe(octx, req)
	o := &tryObserve{Status: obs.Status, Note: obs.Note, Outcome: obs.Outcome, Baseline: obs.Baseline, Now: now, Every: every.String()}
	rep.Observe = o
	if !obs.NextCheck.IsZero() {
		t := obs.NextCheck.UTC()
		o.NextCheck = &t
	}
	var deadline time.Time
	if !info.Standing {
		deadline = now.Add(scheduler.DefaultDeadline)
		if !adm.Deadline.IsZero() {
			// A natural deadline already past is probed at once, as
			// serve's registration does.
			deadline = latest(adm.Deadline.UTC(), now)
		}
		o.Deadline = &deadline
	}
	switch {
	case err != nil:
		o.Status, o.Note = "", ""
		var ce *kind.CallError
		if errors.As(err, &ce) {
			o.Fault = &tryFaultInfo{Reason: ce.Reason, Message: ce.Err.Error()}
		} else {
			o.Fault = &tryFaultInfo{Reason: "error", Message: err.Error()}
		}
		rep.ExitCode = tryFault
		return rep
	case obs.Fault != nil:
		o.Fault = &tryFaultInfo{Reason: obs.Fault.Reason, Message: obs.Fault.Err.Error()}
		rep.ExitCode = tryFault
		return rep
	}
	if obs.Status == abi.StatusPending {
		next := now.Add(every)
		if !obs.NextCheck.IsZero() {
			next = latest(obs.NextCheck.UTC(), now.Add(time.Second)) // the scheduler's least interval
		}
		if !deadline.IsZero() && next.After(deadline) {
			next = deadline
		}
		o.NextProbe = &next
	}
	if msg, late := conformance.LateProbe(info.Standing, obs, now, every, adm.Deadline); late {
		rep.Warnings = append(rep.Warnings, msg+": answer next_check at the instant the answer can change (sdk.Pending(…).CheckAt)")
	}
	return rep
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// findTried is the kind a dry run tries: the one the extra file serves,
// or the kind named.
func findTried(rt *plugin.Runtime, target, extra string) (kind.Info, bool) {
	if extra == "" {
		return rt.Lookup(target)
	}
	for _, i := range rt.Plugins() {
		if i.File == extra {
			return i, true
		}
	}
	return kind.Info{}, false
}

// writeText prints the report for a person.
func (r tryReport) writeText(w io.Writer) error {
	tw := table(w)
	line := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, args...)) }
	if r.Kind != "" {
		line("kind", "%s %s (%s, sha256 %s, %s)", r.Kind, r.Version, r.Source, shortSum(r.SHA256), r.File)
		if len(r.Params) > 0 {
			line("params", "%s", clipText(string(r.Params), 200))
		}
	}
	if l := r.Load; l != nil {
		msg := l.Error
		if l.Rule != "" {
			msg = l.Rule + ": " + msg
		}
		if l.Setting != "" {
			msg += " (setting " + l.Setting + ")"
		}
		line("load", "failed: %s", msg)
	}
	if a := r.Admit; a != nil {
		switch {
		case a.OK:
			line("admit", "ok")
			if a.Deadline != nil {
				line("", "natural deadline %s", a.Deadline.Format(time.RFC3339))
			}
			if a.NextCheck != nil {
				line("", "first check %s", a.NextCheck.Format(time.RFC3339))
			}
			for _, d := range a.Destinations {
				if d.Field != "" {
					line("", "destination %s (params.%s)", d.Target, d.Field)
				} else {
					line("", "destination %s", d.Target)
				}
			}
		default:
			what := "refused"
			if a.Code == api.CodePluginFault {
				what = "faulted"
			}
			msg := fmt.Sprintf("%s: %s: %s", what, a.Code, a.Message)
			if a.Field != "" {
				msg += " (field " + a.Field + ")"
			}
			if a.Setting != "" {
				msg += " (setting " + a.Setting + ")"
			}
			line("admit", "%s", msg)
		}
	}
	if o := r.Observe; o != nil {
		if o.Fault != nil {
			line("observe", "fault: %s: %s", o.Fault.Reason, o.Fault.Message)
		} else {
			msg := o.Status
			if o.Outcome != nil {
				msg += " (" + o.Outcome.Result + ")"
				if o.Outcome.Summary != "" {
					msg += ": " + o.Outcome.Summary
				}
			}
			line("observe", "%s", msg)
			if o.Note != "" {
				line("", "note: %s", o.Note)
			}
			if o.NextCheck != nil {
				line("", "next_check %s", o.NextCheck.Format(time.RFC3339))
			} else if o.Status == abi.StatusPending {
				line("", "next_check none")
			}
			if len(o.Baseline) > 0 {
				line("", "baseline %s", clipText(string(o.Baseline), 120))
			}
		}
		line("", "observed at %s; cadence %s", o.Now.Format(time.RFC3339), o.Every)
		if o.Deadline != nil {
			line("", "deadline serve would give %s", o.Deadline.Format(time.RFC3339))
		}
		if o.NextProbe != nil {
			line("", "next probe %s", o.NextProbe.Format(time.RFC3339))
		}
	}
	if r.Wake != nil {
		r.Wake.writeText(line)
	}
	if len(r.Fetches) == 0 && r.Observe != nil {
		line("fetches", "none")
	}
	for i, f := range r.Fetches {
		k := ""
		if i == 0 {
			k = "fetches"
		}
		switch {
		case f.Failure != nil:
			line(k, "%s %s: %s: %s: %s (%.1f ms)", f.Method, f.URL, fetchVerdict(f.Failure.Reason), f.Failure.Reason, f.Failure.Message, f.DurationMS)
		default:
			from := ""
			if f.FromCache {
				from = ", from the issuer's cache"
			}
			if f.NotModified {
				from += ", not modified"
			}
			line(k, "%s %s: %d, %d bytes, %.1f ms%s", f.Method, f.URL, f.Status, f.Bytes, f.DurationMS, from)
		}
	}
	for i, c := range r.Commands {
		k := ""
		if i == 0 {
			k = "commands"
		}
		switch {
		case c.Failure != nil:
			line(k, "%s: not run: %s: %s", strings.Join(c.Argv, " "), c.Failure.Reason, c.Failure.Message)
		default:
			to := ""
			if c.TimedOut {
				to = ", timed out"
			}
			line(k, "%s: exit %d%s, %d bytes out, %d bytes err, %.1f ms", strings.Join(c.Argv, " "), c.ExitCode, to, c.Stdout, c.Stderr, c.DurationMS)
		}
	}
	for i, wmsg := range r.Warnings {
		k := ""
		if i == 0 {
			k = "warning"
		}
		line(k, "%s", wmsg)
	}
	return tw.Flush()
}

// fetchVerdict says whether a fetch failure is the issuer refusing the
// request (it was never sent: the grants, the destination guard, the
// request's own options) or the request failing.
func fetchVerdict(reason string) string {
	switch reason {
	case abi.FetchDestinationRefused, abi.FetchNotGranted, abi.FetchInvalidRequestOptions:
		return "refused"
	}
	return "failed"
}
