package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigilhq/vigil/api/client"
)

// newCluster is `vigil cluster`: the nodes serving the API and the
// partitions each owns.
func newCluster(stdout io.Writer) *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Show the server's nodes and the partitions each owns",
		Long: `Show the nodes serving the API (GET /api/v1/cluster): each one's id, name,
start, listen address and plugin set digest (the SHA-256 of its kinds as
sorted "kind version sha256" lines: two nodes with the same digest serve
the same plugins), and the partitions each owns. Today a host runs alone:
the mode is "single", and it owns everything. Needs the operator role when
tokens are configured.`,
		Args: cobra.NoArgs,
		RunE: cf.run(func(ctx context.Context, c *client.Client, _ []string) error {
			out, err := c.Cluster(ctx)
			if err != nil {
				return err
			}
			if cf.json {
				return printJSON(stdout, out)
			}
			fmt.Fprintf(stdout, "mode: %s\n", out.Mode)
			if out.Note != "" {
				fmt.Fprintf(stdout, "%s\n", out.Note)
			}
			tw := table(stdout)
			fmt.Fprintln(tw, "NODE\tNAME\tADDRESS\tSTARTED\tPLUGIN SET\tSELF")
			for _, n := range out.Nodes {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%v\n", n.ID, n.Name, orDash(n.Address), n.StartedAt.Format(time.RFC3339), n.PluginSetDigest, n.Self)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(out.Partitions) == 0 {
				_, err = fmt.Fprintln(stdout, "partitions: none (one node owns everything)")
				return err
			}
			tw = table(stdout)
			fmt.Fprintln(tw, "PARTITION\tOWNER")
			for _, p := range out.Partitions {
				fmt.Fprintf(tw, "%s\t%s\n", p.ID, p.Owner)
			}
			return tw.Flush()
		}),
	}
	addClientFlags(cmd, &cf)
	return cmd
}
