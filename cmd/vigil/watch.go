package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/api/client"
)

func newWatch(stdout, stderr io.Writer) *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Register, wait on, list, show and cancel watches on a server",
		Args:  cobra.NoArgs,
	}
	addClientFlags(cmd, &cf)
	cmd.AddCommand(newWatchAdd(&cf, stdout, stderr), newWatchWait(&cf, stdout, stderr), newWatchLs(&cf, stdout, stderr), newWatchShow(&cf, stdout), newWatchCancel(&cf, stdout))
	return cmd
}

type watchAddFlags struct {
	params     []string
	paramsJSON string
	recipient  string
	every      time.Duration
	in         time.Duration
	at         string
	wait       bool
}

func newWatchAdd(cf *clientFlags, stdout, stderr io.Writer) *cobra.Command {
	var f watchAddFlags
	cmd := &cobra.Command{
		Use:   "add KIND --for RECIPIENT [--param k=v]... [--params-json '{...}'] [--every D] [--in D | --at TIME] [--wait]",
		Short: "Register a watch, and with --wait block until its outcome",
		Long: `Register a watch of KIND for RECIPIENT.

Params: --params-json gives a JSON object, and each --param k=v sets one
key on top of it. A value that parses as JSON is taken as JSON (5, true,
{"a":1}, "quoted"), anything else as a string (--param sha=1a2b3c); quote
it to force a string (--param 'n="5"').

The deadline: --in D (from now) or --at TIME (RFC 3339). With neither the
server applies the predicate's default (15 minutes for open-ended kinds, a
timer's instant plus one minute).

--wait follows the watch until it settles: the server answers each wait
as soon as the watch changes, so a cancel, a pause or an expiry is seen at
once. On a terminal one progress line (state, probes, last note, time to
the deadline) is redrawn in place on stderr; piped, nothing but the
registration line is written there. The watch is printed as it ended,
with its final receipt and, when the mailbox can be read, its message.
Interrupting --wait leaves the watch registered: vigil watch wait ID
re-attaches.

` + exitCodesHelp,
		Args: exactArgs("KIND"),
		RunE: cf.run(func(ctx context.Context, c *client.Client, args []string) error {
			req, err := f.request(args[0], time.Now())
			if err != nil {
				return err
			}
			if !f.wait {
				w, err := c.CreateWatch(ctx, req)
				if err != nil {
					return err
				}
				if cf.json {
					return printJSON(stdout, w)
				}
				return printWatch(stdout, w)
			}
			return addAndWait(ctx, c, req, cf.json, stdout, stderr)
		}),
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.params, "param", nil, "a param as key=value (repeatable; JSON values are taken as JSON)")
	fl.StringVar(&f.paramsJSON, "params-json", "", "the params as a JSON object (--param keys go on top)")
	fl.StringVar(&f.recipient, "for", "", "the recipient whose mailbox the outcome goes to (required)")
	fl.DurationVar(&f.every, "every", 0, "how often to check (default: the predicate's)")
	fl.DurationVar(&f.in, "in", 0, "deadline: this long from now")
	fl.StringVar(&f.at, "at", "", "deadline: this instant (RFC 3339, e.g. 2026-12-01T14:00:00Z)")
	fl.BoolVar(&f.wait, "wait", false, "follow the watch until it settles; the exit code says how (see above)")
	_ = cmd.MarkFlagRequired("for")
	cmd.MarkFlagsMutuallyExclusive("in", "at")
	return cmd
}

// request builds the registration. now is only for --in.
func (f *watchAddFlags) request(kind string, now time.Time) (api.WatchRequest, error) {
	params, err := buildParams(f.paramsJSON, f.params)
	if err != nil {
		return api.WatchRequest{}, err
	}
	req := api.WatchRequest{Kind: kind, Params: params, Recipient: api.RecipientRef{ID: f.recipient}}
	if f.every < 0 {
		return req, usagef("--every: want a positive duration")
	}
	if f.every > 0 {
		req.Every = f.every.String()
	}
	switch {
	case f.in < 0:
		return req, usagef("--in: want a positive duration")
	case f.in > 0:
		t := now.Add(f.in).UTC()
		req.ExpiresAt = &t
	case f.at != "":
		t, err := time.Parse(time.RFC3339, f.at)
		if err != nil {
			return req, usagef("--at %q: want an RFC 3339 time such as 2026-12-01T14:00:00Z", f.at)
		}
		req.ExpiresAt = &t
	}
	// Neither: no expires_at at all. The default deadline is the host's to
	// resolve, per predicate; a client that computed one would disagree
	// with it.
	return req, nil
}

// buildParams merges the --params-json object and the --param pairs.
func buildParams(paramsJSON string, pairs []string) (json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if strings.TrimSpace(paramsJSON) != "" {
		if err := json.Unmarshal([]byte(paramsJSON), &m); err != nil || m == nil {
			return nil, usagef("--params-json %s: want a JSON object", paramsJSON)
		}
	}
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("--param %q: want key=value", kv)
		}
		if json.Valid([]byte(v)) {
			m[k] = json.RawMessage(v)
		} else {
			m[k], _ = json.Marshal(v)
		}
	}
	return json.Marshal(m)
}

// waitResult is what --wait and watch wait print: the watch as it ended
// (or stands, when the wait was cut short) and, when the command could
// read it, the mailbox message that settled it.
type waitResult struct {
	Watch   *api.Watch   `json:"watch,omitempty"`
	Message *api.Message `json:"message,omitempty"`
}

// exitCode is the one place a wait's end becomes an exit code.
func (r waitResult) exitCode() int {
	var result string
	if r.Watch.Outcome != nil {
		result = r.Watch.Outcome.Result
	}
	return waitExitCode(r.Watch.State, result)
}

// failureResults are the outcome results that make a fired watch a
// failure.
var failureResults = map[string]bool{"failure": true, "failed": true, "error": true}

// waitExitCode maps a watch's state (or a message's type) and its
// outcome's result to the wait's exit code.
func waitExitCode(typeOrState, result string) int {
	switch typeOrState {
	case "fired", "changed":
		if failureResults[strings.ToLower(result)] {
			return ExitFailed
		}
		return ExitFired
	case "expired":
		return ExitExpired
	case "undeliverable", "unwatchable", "cancelled":
		return ExitNoOutcome
	case "pending":
		return ExitStillPending
	}
	return ExitFailed // something this build does not know: not a success
}

// longPoll is the longest wait on a watch the server allows.
const longPoll = 60 * time.Second

// receiptWait bounds how long a settled watch's receipt is waited on to
// leave none or unknown before it is printed as it stands.
const receiptWait = 5 * time.Second

func addAndWait(ctx context.Context, c *client.Client, req api.WatchRequest, asJSON bool, stdout, stderr io.Writer) error {
	rid := req.Recipient.ID
	after, err := mailboxEnd(ctx, c, rid)
	if err != nil {
		return err
	}
	w, err := c.CreateWatch(ctx, req)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "watch %s registered (%s for %s, deadline %s); waiting for its outcome (vigil watch wait %s re-attaches)\n",
		w.ID, w.Kind, rid, orDash(timeText(w.ExpiresAt)), w.ID)
	return waitAndReport(ctx, c, w, &after, 0, asJSON, stdout, stderr)
}

// waitAndReport follows w until it settles (or timeout, when set, runs
// out), prints how it ended and returns the exit code as an *exitError.
// after, when set, is rid's mailbox cursor from before w was registered,
// where its message is looked for once it settled.
func waitAndReport(ctx context.Context, c *client.Client, w api.Watch, after *uint64, timeout time.Duration, asJSON bool, stdout, stderr io.Writer) error {
	wctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	p := newProgress(stderr)
	defer p.stop()
	w, err := followWatch(wctx, c, w, p)
	p.stop()
	switch {
	case ctx.Err() != nil:
		fmt.Fprintf(stderr, "stopped waiting; watch %s stays registered (vigil watch wait %s)\n", w.ID, w.ID)
		return &exitError{Code: ExitInterrupted}
	case wctx.Err() != nil:
		fmt.Fprintf(stderr, "--timeout %s passed; watch %s is still pending and stays registered (vigil watch wait %s)\n", timeout, w.ID, w.ID)
		err = nil
	case err != nil:
		return err
	}
	res := waitResult{Watch: &w}
	if after != nil && w.State != "pending" {
		res.Message = findMessage(ctx, c, w, *after)
	}
	if asJSON {
		err = printJSON(stdout, res)
	} else {
		err = printOutcome(stdout, res)
	}
	if err != nil {
		return err
	}
	if code := res.exitCode(); code != ExitFired {
		return &exitError{Code: code}
	}
	return nil
}

// followWatch waits on w with the server's long poll until it leaves
// pending, showing each change on p; the server answers as soon as the
// watch changes, so a cancel, a pause or an expiry is seen at once. A
// settled watch whose receipt is still none or unknown is waited on a
// little longer (receiptWait) for its final receipt. It returns the watch
// as it last stood, and ctx's error if ctx ended first.
func followWatch(ctx context.Context, c *client.Client, w api.Watch, p *progress) (api.Watch, error) {
	p.show(w)
	for w.State == "pending" {
		next, err := c.WaitWatch(ctx, w.ID, w.Version, longPoll)
		if err != nil {
			if ctx.Err() != nil {
				return w, ctx.Err()
			}
			return w, err
		}
		w = next
		p.show(w)
	}
	if receiptPending(w) {
		next, err := c.WaitWatch(ctx, w.ID, w.Version, receiptWait)
		if err == nil {
			w = next
		}
	}
	return w, nil
}

// receiptPending: a watch that settled with a message whose receipt has
// not been concluded yet.
func receiptPending(w api.Watch) bool {
	switch w.State {
	case "fired", "expired", "unwatchable":
		return w.Receipt == "none" || w.Receipt == "unknown"
	}
	return false
}

// findMessage looks for w's message in its recipient's mailbox from
// after, without waiting; nil when there is none or the mailbox cannot be
// read (the token may register for a recipient it may not read).
func findMessage(ctx context.Context, c *client.Client, w api.Watch, after uint64) *api.Message {
	for range 10 {
		mb, err := c.ReadMailbox(ctx, w.Recipient.ID, after, 0, 1000)
		if err != nil || len(mb.Messages) == 0 {
			return nil
		}
		for _, m := range mb.Messages {
			if m.WatchID == w.ID {
				return &m
			}
		}
		after = mb.Next
	}
	return nil
}

// mailboxEnd is the cursor after the last message in rid's mailbox: 0 for
// a recipient that does not exist yet (registering creates it) or one the
// token may not read.
func mailboxEnd(ctx context.Context, c *client.Client, rid string) (uint64, error) {
	var after uint64
	for {
		mb, err := c.ReadMailbox(ctx, rid, after, 0, 1000)
		var ae *api.Error
		if errors.As(err, &ae) && (ae.Code == api.CodeNotFound || ae.Code == api.CodeForbidden) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		if len(mb.Messages) == 0 {
			return after, nil
		}
		after = mb.Next
	}
}

func printOutcome(w io.Writer, r waitResult) error {
	if r.Message == nil {
		return printWatch(w, *r.Watch)
	}
	m := r.Message
	kv := []string{"watch", m.WatchID, "kind", m.Kind, "type", m.Type, "result", m.Outcome.Result, "summary", m.Outcome.Summary,
		"detail", compact(m.Outcome.Detail), "at", timeText(&m.At), "message", fmt.Sprintf("%s (seq %d)", m.ID, m.Seq),
		"state", r.Watch.State + " (receipt " + r.Watch.Receipt + ")"}
	return fields(w, kv...)
}

func printWatch(w io.Writer, x api.Watch) error {
	kv := []string{"id", x.ID, "kind", x.Kind, "recipient", x.Recipient.ID, "registered by", x.RegisteredBy, "state", x.State, "receipt", x.Receipt,
		"params", compact(x.Params), "every", x.Every, "created", timeText(&x.CreatedAt), "expires", timeText(x.ExpiresAt),
		"settled", timeText(x.SettledAt), "attempts", fmt.Sprint(x.Attempts), "last probe", timeText(x.LastProbeAt), "probes from", x.ProbesFrom, "note", x.LastNote,
		"signal url", x.SignalURL}
	if f := x.LastFault; f != nil {
		kv = append(kv, "fault", strings.TrimSuffix(f.Reason+": "+f.Message, ": "))
	}
	if x.Outcome != nil {
		kv = append(kv, "result", x.Outcome.Result, "summary", x.Outcome.Summary, "detail", compact(x.Outcome.Detail))
	}
	return fields(w, kv...)
}

func newWatchWait(cf *clientFlags, stdout, stderr io.Writer) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait ID [--timeout D]",
		Short: "Re-attach to a watch and follow it until it settles",
		Long: `Follow the watch ID, registered earlier by anyone whose watches your token may
see, until it settles, and print it as it ended, with its final receipt;
the exit code says how it ended. The server answers each wait as soon as
the watch changes, so a cancel, a pause or an expiry is seen at once. On a
terminal one progress line (state, probes, last note, time to the
deadline) is redrawn in place on stderr; piped, nothing extra is written.

--timeout D stops following after D with the watch still pending (exit 4);
the watch stays registered. Without it the wait lasts until the watch's
own deadline (every wait has one; a standing watch, which has none, is
followed until it is cancelled).

` + exitCodesHelp,
		Args: exactArgs("ID"),
		RunE: cf.run(func(ctx context.Context, c *client.Client, args []string) error {
			if timeout < 0 {
				return usagef("--timeout: want a positive duration")
			}
			w, err := c.GetWatch(ctx, args[0])
			if err != nil {
				return err
			}
			return waitAndReport(ctx, c, w, nil, timeout, cf.json, stdout, stderr)
		}),
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "stop following after this long, the watch still pending (exit 4)")
	return cmd
}

func newWatchLs(cf *clientFlags, stdout, stderr io.Writer) *cobra.Command {
	var q client.WatchQuery
	var limit int
	cmd := &cobra.Command{
		Use:   "ls [--for RECIPIENT] [--registered-by PRINCIPAL] [--state STATE] [--kind KIND] [--limit N [--after CURSOR]]",
		Short: "List watches",
		Long: `List watches, oldest first.

Without --limit, every matching watch is listed (the command follows the
server's pages). With --limit N, at most N are listed and, when there are
more, the command prints the cursor to continue from: pass it as --after
with the same filters.

Without --for or --registered-by, the list holds the watches your token may
see: those of the recipients it acts for and those it registered (all of
them for an operator). --for a recipient it may not read, or
--registered-by another principal without the operator role, is refused
(403 forbidden), never an empty list.`,
		Args: exactArgs(),
		RunE: cf.run(func(ctx context.Context, c *client.Client, _ []string) error {
			if limit < 0 {
				return usagef("--limit: want a positive number (0 lists every watch)")
			}
			list, err := listWatches(ctx, c, q, limit)
			if err != nil {
				return err
			}
			if cf.json {
				return printJSON(stdout, list)
			}
			tw := table(stdout)
			fmt.Fprintln(tw, "ID\tKIND\tRECIPIENT\tSTATE\tRECEIPT\tEXPIRES\tRESULT")
			for _, w := range list.Watches {
				result := ""
				if w.Outcome != nil {
					result = w.Outcome.Result
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", w.ID, w.Kind, w.Recipient.ID, w.State, w.Receipt, orDash(timeText(w.ExpiresAt)), orDash(result))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if list.HeldAside > 0 {
				fmt.Fprintf(stderr, "%d row(s) held aside: this server's build cannot read them\n", list.HeldAside)
			}
			if list.Next != "" {
				fmt.Fprintf(stderr, "more watches: continue with --after %s\n", list.Next)
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&q.Recipient, "for", "", "only this recipient's watches")
	cmd.Flags().StringVar(&q.RegisteredBy, "registered-by", "", "only the watches this principal registered (an orchestrator's own)")
	cmd.Flags().StringVar(&q.State, "state", "", "only watches in this state: pending, fired, expired, cancelled, undeliverable or unwatchable")
	cmd.Flags().StringVar(&q.Kind, "kind", "", "only watches of this kind")
	cmd.Flags().IntVar(&limit, "limit", 0, "list at most this many, and print the cursor to continue from (0: every watch)")
	cmd.Flags().StringVar(&q.After, "after", "", "continue from this cursor, as a listing with --limit printed it")
	return cmd
}

// listWatches lists every watch matching q from q.After (limit 0), or at
// most limit of them with the cursor to continue from, following the
// server's pages either way (a page may be short and still have more).
func listWatches(ctx context.Context, c *client.Client, q client.WatchQuery, limit int) (api.WatchList, error) {
	q.Limit = client.MaxWatchPage
	return c.Watches(ctx, q, limit)
}

func newWatchShow(cf *clientFlags, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show one watch",
		Args:  exactArgs("ID"),
		RunE: cf.run(func(ctx context.Context, c *client.Client, args []string) error {
			w, err := c.GetWatch(ctx, args[0])
			if err != nil {
				return err
			}
			if cf.json {
				return printJSON(stdout, w)
			}
			return printWatch(stdout, w)
		}),
	}
}

func newWatchCancel(cf *clientFlags, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a pending watch (nothing is mailed)",
		Args:  exactArgs("ID"),
		RunE: cf.run(func(ctx context.Context, c *client.Client, args []string) error {
			w, err := c.CancelWatch(ctx, args[0])
			if err != nil {
				return err
			}
			if cf.json {
				return printJSON(stdout, w)
			}
			return printWatch(stdout, w)
		}),
	}
}
