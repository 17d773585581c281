package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/api/client"
)

func newSignal(stdout io.Writer) *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "signal",
		Short: "Answer a signal through its URL",
		Args:  cobra.NoArgs,
	}
	addClientFlags(cmd, &cf)
	cmd.AddCommand(newSignalSend(&cf, stdout))
	return cmd
}

func newSignalSend(cf *clientFlags, stdout io.Writer) *cobra.Command {
	var outcome, data string
	cmd := &cobra.Command{
		Use:   "send URL --outcome OUTCOME [--data JSON]",
		Short: "Answer a signal: settle its watch with an outcome and data",
		Long: `Answer the signal at URL, the signal_url its registration answered
(vigil watch add signal --for RECIPIENT --param title="Deploy?" prints it).
The URL is the capability: no bearer token is sent, --token and VIGIL_TOKEN
are not used, and the URL may be on any host. OUTCOME must be one the signal
offers (approve or deny unless its registration named others); --data is
any JSON value its schema admits.

A signal answered already (or expired, or cancelled) is refused with
already_settled (exit 64), and the signal is printed as it settled, with
the first answer's outcome.`,
		Args: cobra.ExactArgs(1),
		RunE: cf.run(func(ctx context.Context, c *client.Client, args []string) error {
			if _, err := client.SignalURL(args[0]); err != nil {
				return usagef("%v", err)
			}
			if outcome == "" {
				return usagef("--outcome is required")
			}
			req := api.SignalRequest{Outcome: outcome}
			if data != "" {
				if !json.Valid([]byte(data)) {
					return usagef("--data is not JSON")
				}
				req.Data = json.RawMessage(data)
			}
			s, err := c.SendSignal(ctx, args[0], req)
			var ae *api.Error
			if errors.As(err, &ae) && ae.Code == api.CodeAlreadySettled {
				if perr := printSignal(stdout, s, cf.json); perr != nil {
					return perr
				}
				return err
			}
			if err != nil {
				return err
			}
			return printSignal(stdout, s, cf.json)
		}),
	}
	cmd.Flags().StringVar(&outcome, "outcome", "", "the answer: one of the outcomes the signal offers")
	cmd.Flags().StringVar(&data, "data", "", "JSON data sent with the answer, checked against the signal's schema")
	return cmd
}

func printSignal(w io.Writer, s api.Signal, asJSON bool) error {
	if asJSON {
		return printJSON(w, s)
	}
	return fields(w, "title", s.Title, "state", s.State, "outcome", s.Outcome, "data", compact(s.Data),
		"offers", strings.Join(s.Outcomes, ", "), "settled", timeText(s.SettledAt), "expires", timeText(s.ExpiresAt))
}
