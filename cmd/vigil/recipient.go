package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/api/client"
	"github.com/vigilhq/vigil/api/webhooks"
)

func newRecipient(stdout, stderr io.Writer) *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "recipient",
		Short: "Set and show recipients on a server",
		Args:  cobra.NoArgs,
	}
	addClientFlags(cmd, &cf)
	cmd.AddCommand(newRecipientSet(&cf, stdout, stderr), newRecipientShow(&cf, stdout),
		newRecipientPhase(&cf, stdout), newRecipientActivity(&cf, stdout), newRecipientReminder(&cf, stdout))
	return cmd
}

func newRecipientSet(cf *clientFlags, stdout, stderr io.Writer) *cobra.Command {
	var status, webhook, secret, workspace string
	var removeWebhook, yes bool
	var cmd *cobra.Command
	cmd = &cobra.Command{
		Use:   "set RECIPIENT --status running|paused|stopped [--webhook URL [--secret whsec_...] | --remove-webhook] [--yes]",
		Short: "Create a recipient or change its status and webhook",
		Long: `Create RECIPIENT or replace its status and webhook. A recipient that stops
running has its pending watches cancelled, and takes no new ones.

The server replaces a recipient as a whole and never returns a webhook's
secret, so a webhook cannot be kept without restating it: when RECIPIENT
has one, pass --webhook and --secret again, or --remove-webhook to drop
it. Refs (standing watches), heartbeats and the workspace are kept as they are unless
--workspace is given. The secret is write-only; VIGIL_WEBHOOK_SECRET keeps
it out of process listings. --webhook without a secret makes one (whsec_
and the base64 of 24 random bytes) and prints it once, on stderr: keep it,
the receiver verifies every delivery with it and the server never shows it
again.

A status other than running cancels every pending watch of RECIPIENT for
good (nothing is mailed for them). Before it does, the command says how
many it cancels and, on a terminal, asks; without a terminal it refuses
unless --yes is given. Not confirming (answering no, or no terminal and no
--yes) changes nothing and exits 6.

--workspace DIR declares the directory the recipient works in: a command
the exec capability runs for one of its watches runs there, and nowhere
else (--workspace "" removes it).`,
		Args: exactArgs("RECIPIENT"),
		RunE: cf.run(func(ctx context.Context, c *client.Client, args []string) error {
			id := args[0]
			if secret == "" {
				secret = os.Getenv("VIGIL_WEBHOOK_SECRET")
			}
			made := false
			if webhook != "" && secret == "" {
				var err error
				if secret, err = webhooks.NewSecret(rand.Reader); err != nil {
					return fmt.Errorf("making a webhook secret: %w", err)
				}
				made = true
			}
			req := api.RecipientRequest{Status: status}
			cur, err := c.GetRecipient(ctx, id)
			var ae *api.Error
			switch {
			case err == nil:
				req.Refs, req.Workspace = cur.Refs, cur.Workspace
				for _, h := range cur.Heartbeats {
					req.Heartbeats = append(req.Heartbeats, api.HeartbeatRequest{Name: h.Name, Period: h.Period, Grace: h.Grace})
				}
				if cur.Webhook != nil && webhook == "" && !removeWebhook {
					return fmt.Errorf("recipient %s has a webhook (%s) that this would remove: pass --webhook and --secret to keep it, or --remove-webhook", id, cur.Webhook.URL)
				}
			case errors.As(err, &ae) && ae.Code == api.CodeNotFound:
			default:
				return err
			}
			if webhook != "" {
				req.Webhook = &api.WebhookRequest{URL: webhook, Secret: secret}
			}
			if cmd.Flags().Changed("workspace") {
				req.Workspace = workspace
			}
			if status != "running" && status != "" {
				if err := confirmCancels(ctx, c, cmd, id, status, yes, stderr); err != nil {
					return err
				}
			}
			r, err := c.PutRecipient(ctx, id, req)
			if err != nil {
				return err
			}
			if made {
				fmt.Fprintf(stderr, "webhook secret (shown once; the receiver verifies each delivery with it): %s\n", secret)
			}
			if cf.json {
				return printJSON(stdout, r)
			}
			return printRecipient(stdout, r)
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&status, "status", "", "running, paused or stopped (required)")
	fl.StringVar(&webhook, "webhook", "", "a URL to POST each message to, signed (Standard Webhooks)")
	fl.StringVar(&secret, "secret", "", "the webhook's signing secret, whsec_... (default $VIGIL_WEBHOOK_SECRET; none: one is made and printed once)")
	fl.BoolVar(&removeWebhook, "remove-webhook", false, "drop the recipient's webhook")
	fl.BoolVar(&yes, "yes", false, "cancel the recipient's pending watches without asking (a status other than running)")
	fl.StringVar(&workspace, "workspace", "", "the recipient's workspace directory (absolute), where its commands run")
	_ = cmd.MarkFlagRequired("status")
	cmd.MarkFlagsMutuallyExclusive("webhook", "remove-webhook")
	return cmd
}

// confirmCancels says how many pending watches of id a change to status
// cancels, and goes on only when there are none, when yes was given, or
// when the user agrees on a terminal; without a terminal it refuses.
func confirmCancels(ctx context.Context, c *client.Client, cmd *cobra.Command, id, status string, yes bool, stderr io.Writer) error {
	list, err := c.Watches(ctx, client.WatchQuery{Recipient: id, State: "pending", Limit: client.MaxWatchPage}, 0)
	var ae *api.Error
	if errors.As(err, &ae) && ae.Code == api.CodeNotFound {
		return nil // a new recipient holds no watches
	}
	if err != nil {
		return err
	}
	n := len(list.Watches)
	if n == 0 {
		return nil
	}
	what := fmt.Sprintf("setting %s to %s cancels its %d pending watch%s for good (nothing is mailed for them)", id, status, n, map[bool]string{true: "", false: "es"}[n == 1])
	if yes {
		fmt.Fprintln(stderr, what)
		return nil
	}
	in := cmd.InOrStdin()
	if !isTerminal(in) || !isTerminal(stderr) {
		return notConfirmedf("refusing: %s; pass --yes to do it (there is no terminal to ask on)", what)
	}
	fmt.Fprintf(stderr, "%s. Continue? [y/N] ", what)
	answer, _ := bufio.NewReader(in).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return notConfirmedf("not changed: %s stays as it was", id)
}

func newRecipientShow(cf *clientFlags, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "show RECIPIENT",
		Short: "Show a recipient (never its webhook secret)",
		Args:  exactArgs("RECIPIENT"),
		RunE: cf.run(func(ctx context.Context, c *client.Client, args []string) error {
			r, err := c.GetRecipient(ctx, args[0])
			if err != nil {
				return err
			}
			if cf.json {
				return printJSON(stdout, r)
			}
			return printRecipient(stdout, r)
		}),
	}
}

func printRecipient(w io.Writer, r api.Recipient) error {
	kv := []string{"id", r.ID, "status", r.Status}
	if r.Webhook != nil {
		kv = append(kv, "webhook", r.Webhook.URL)
		if r.Webhook.DisabledAt != nil {
			kv = append(kv, "webhook_disabled", r.Webhook.DisabledAt.Format(time.RFC3339)+" "+r.Webhook.DisabledReason)
		}
	}
	for _, ref := range r.Refs {
		kv = append(kv, "ref", ref.Kind+" "+compact(ref.Params))
	}
	if r.Workspace != "" {
		kv = append(kv, "workspace", r.Workspace)
	}
	for _, h := range r.Heartbeats {
		v := "every " + h.Period + " + " + h.Grace
		if h.LastPing != nil {
			v += ", last ping " + h.LastPing.Format(time.RFC3339)
		}
		if h.Failed {
			v += ", failed"
			if h.Note != "" {
				v += ": " + h.Note
			}
		}
		if h.PingURL != "" {
			v += ", ping " + h.PingURL
		}
		kv = append(kv, "heartbeat "+h.Name, v)
	}
	if p := r.Phase; p != nil {
		kv = append(kv, "phase", phaseText(*p))
	}
	if a := r.Activity; a != nil {
		kv = append(kv, "activity", activityText(*a))
	}
	kv = append(kv, "reminder_every", r.ReminderEvery)
	kv = append(kv, "created", timeText(&r.CreatedAt), "updated", timeText(&r.UpdatedAt))
	return fields(w, kv...)
}

func phaseText(p api.Phase) string {
	by := "by " + p.ReportedBy
	if p.Seeded {
		by += ", seeded"
	}
	s := fmt.Sprintf("%s (%s, %s)", p.Name, by, timeText(&p.ReportedAt))
	if p.Text != "" {
		s += ": " + strings.ReplaceAll(p.Text, "\n", " ")
	}
	return s
}

func activityText(a api.Activity) string {
	s := fmt.Sprintf("%d replies, %d tool calls", a.Replies, a.ToolCalls)
	if a.At != nil {
		s += " (last " + timeText(a.At) + ")"
	}
	return s
}

func newRecipientPhase(cf *clientFlags, stdout io.Writer) *cobra.Command {
	var text string
	cmd := &cobra.Command{
		Use:   "phase RECIPIENT NAME [--text TEXT]",
		Short: "Report what a recipient is working on",
		Long: `Report RECIPIENT's phase: NAME is short (build, review, handoff, blocked,
...: 1-32 of a-z 0-9 . _ -, starting with a letter), --text says more (at
most 500 bytes).

The server records who reported it. A phase reported with the recipient's
own token is its own; one reported with another principal's token (an
operator's, on its behalf) is seeded, and the phase reminder never acts on
a seeded phase. A recipient that opted in (vigil recipient reminder) is
reminded once of a report that is an interval old while it keeps working;
handoff and blocked are never reminded of.`,
		Args: exactArgs("RECIPIENT", "NAME"),
		RunE: cf.run(func(ctx context.Context, c *client.Client, args []string) error {
			p, err := c.ReportPhase(ctx, args[0], api.PhaseRequest{Name: args[1], Text: text})
			if err != nil {
				return err
			}
			if cf.json {
				return printJSON(stdout, p)
			}
			return fields(stdout, "phase", phaseText(p))
		}),
	}
	cmd.Flags().StringVar(&text, "text", "", "what the phase is about, in a few words")
	return cmd
}

func newRecipientActivity(cf *clientFlags, stdout io.Writer) *cobra.Command {
	var replies, toolCalls int64
	cmd := &cobra.Command{
		Use:   "activity RECIPIENT [--replies N] [--tool-calls N]",
		Short: "Add to a recipient's activity counts",
		Long: `Add N replies and N tool calls (each 0 to 1,000,000) to RECIPIENT's
activity counts, for example from a hook after each turn. The phase
reminder reminds only a recipient whose counts moved since its previous
check: a stall or one long tool call freezes them.`,
		Args: exactArgs("RECIPIENT"),
		RunE: cf.run(func(ctx context.Context, c *client.Client, args []string) error {
			a, err := c.ReportActivity(ctx, args[0], api.ActivityRequest{Replies: replies, ToolCalls: toolCalls})
			if err != nil {
				return err
			}
			if cf.json {
				return printJSON(stdout, a)
			}
			return fields(stdout, "activity", activityText(a))
		}),
	}
	cmd.Flags().Int64Var(&replies, "replies", 0, "replies to add")
	cmd.Flags().Int64Var(&toolCalls, "tool-calls", 0, "tool calls to add")
	return cmd
}

func newRecipientReminder(cf *clientFlags, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "reminder RECIPIENT EVERY|off",
		Short: "Opt a recipient in to (or out of) the phase reminder",
		Long: `Opt RECIPIENT in to the phase reminder every EVERY (a Go duration from 1m
to 24h), or out with "off". While it runs, the host checks it every
interval and mails it a message of type reminder when, and only when, its
own phase report is at least an interval old, is not handoff or blocked,
has not been reminded of yet, and its activity moved since the previous
check: one reminder per report. A stopped recipient is never reminded.`,
		Args: exactArgs("RECIPIENT", "EVERY|off"),
		RunE: cf.run(func(ctx context.Context, c *client.Client, args []string) error {
			if args[1] == "off" {
				if err := c.ClearReminder(ctx, args[0]); err != nil {
					return err
				}
				if cf.json {
					return printJSON(stdout, struct{}{})
				}
				return fields(stdout, "reminder", "off")
			}
			every, err := time.ParseDuration(args[1])
			if err != nil {
				return fmt.Errorf("EVERY %q: want a Go duration such as 10m, or off", args[1])
			}
			r, err := c.SetReminder(ctx, args[0], every)
			if err != nil {
				return err
			}
			if cf.json {
				return printJSON(stdout, r)
			}
			return fields(stdout, "reminder_every", r.Every)
		}),
	}
}
