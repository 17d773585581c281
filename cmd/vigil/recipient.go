package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/api/client"
)

func newRecipient(stdout, stderr io.Writer) *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "recipient",
		Short: "Set and show recipients on a server",
		Args:  cobra.NoArgs,
	}
	addClientFlags(cmd, &cf)
	cmd.AddCommand(newRecipientSet(&cf, stdout), newRecipientShow(&cf, stdout))
	return cmd
}

func newRecipientSet(cf *clientFlags, stdout io.Writer) *cobra.Command {
	var status, webhook, secret, workspace string
	var removeWebhook bool
	var cmd *cobra.Command
	cmd = &cobra.Command{
		Use:   "set RECIPIENT --status running|paused|stopped [--webhook URL --secret whsec_... | --remove-webhook]",
		Short: "Create a recipient or change its status and webhook",
		Long: `Create RECIPIENT or replace its status and webhook. A recipient that stops
running has its pending watches cancelled, and takes no new ones.

The server replaces a recipient as a whole and never returns a webhook's
secret, so a webhook cannot be kept without restating it: when RECIPIENT
has one, pass --webhook and --secret again, or --remove-webhook to drop
it. Refs (standing watches) and the workspace are kept as they are unless
--workspace is given. The secret is write-only; VIGIL_WEBHOOK_SECRET keeps
it out of process listings.

--workspace DIR declares the directory the recipient works in: a command
the exec capability runs for one of its watches runs there, and nowhere
else (--workspace "" removes it).`,
		Args: cobra.ExactArgs(1),
		RunE: cf.run(func(ctx context.Context, c *client.Client, args []string) error {
			id := args[0]
			if secret == "" {
				secret = os.Getenv("VIGIL_WEBHOOK_SECRET")
			}
			if webhook != "" && secret == "" {
				return errors.New("--webhook needs --secret (or VIGIL_WEBHOOK_SECRET): the server signs every delivery with it")
			}
			req := api.RecipientRequest{Status: status}
			cur, err := c.GetRecipient(ctx, id)
			var ae *api.Error
			switch {
			case err == nil:
				req.Refs, req.Workspace = cur.Refs, cur.Workspace
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
			r, err := c.PutRecipient(ctx, id, req)
			if err != nil {
				return err
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
	fl.StringVar(&secret, "secret", "", "the webhook's signing secret, whsec_... (default $VIGIL_WEBHOOK_SECRET)")
	fl.BoolVar(&removeWebhook, "remove-webhook", false, "drop the recipient's webhook")
	fl.StringVar(&workspace, "workspace", "", "the recipient's workspace directory (absolute), where its commands run")
	_ = cmd.MarkFlagRequired("status")
	cmd.MarkFlagsMutuallyExclusive("webhook", "remove-webhook")
	return cmd
}

func newRecipientShow(cf *clientFlags, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "show RECIPIENT",
		Short: "Show a recipient (never its webhook secret)",
		Args:  cobra.ExactArgs(1),
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
	kv = append(kv, "created", timeText(&r.CreatedAt), "updated", timeText(&r.UpdatedAt))
	return fields(w, kv...)
}
