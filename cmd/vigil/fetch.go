package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigilhq/vigil/api/client"
)

// newFetch is `vigil fetch`: what the server's fetch issuer refused.
func newFetch(stdout io.Writer) *cobra.Command {
	var cf clientFlags
	var after uint64
	var limit int
	cmd := &cobra.Command{
		Use:   "fetch",
		Short: "Inspect the server's fetch issuer",
		Args:  cobra.NoArgs,
	}
	addClientFlags(cmd, &cf)
	dl := &cobra.Command{
		Use:   "dead-letters",
		Short: "List the fetch commands refused before any request went out",
		Long: `List the fetch commands a plugin asked for that the server refused before
anything was sent: a header the issuer contract forbids, a timeout out of
bounds, a host or secret the plugin is not granted, or a destination in a
refused address range. Header names are shown, never their values.`,
		Args: exactArgs(),
		RunE: cf.run(func(ctx context.Context, c *client.Client, _ []string) error {
			out, err := c.DeadLetters(ctx, after, limit)
			if err != nil {
				return err
			}
			if cf.json {
				return printJSON(stdout, out)
			}
			tw := table(stdout)
			fmt.Fprintln(tw, "SEQ\tAT\tKIND\tREASON\tMETHOD\tURL\tHEADERS\tMESSAGE")
			for _, d := range out.DeadLetters {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.Seq, d.OccurredAt.Format(time.RFC3339), d.Kind, d.Reason, d.Method, d.URL, orDash(strings.Join(d.HeaderNames, ",")), d.Message)
			}
			return tw.Flush()
		}),
	}
	dl.Flags().Uint64Var(&after, "after", 0, "list entries after this sequence number")
	dl.Flags().IntVar(&limit, "limit", 0, "at most this many entries (1-1000; default 100)")
	cmd.AddCommand(dl)
	return cmd
}
