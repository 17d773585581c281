package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigilhq/vigil/api"
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
the same plugins), and the partitions each owns. A host that runs alone
answers mode "single" and owns everything. A node of a cluster (serve
--store nats://…) answers mode "cluster": every live node with the
partitions it holds and whether its plugin set was refused, then each
lease (the cluster-wide jobs, then the partitions) with its owner and
when it was last renewed. Needs the operator role when tokens are
configured.`,
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
			held := map[string]int{}
			for _, p := range out.Partitions {
				held[p.Owner]++
			}
			tw := table(stdout)
			fmt.Fprintln(tw, "NODE\tNAME\tADDRESS\tSTARTED\tPLUGIN SET\tSELF\tPARTITIONS\tREFUSED")
			for _, n := range out.Nodes {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%v\t%d\t%v\n", n.ID, n.Name, orDash(n.Address), n.StartedAt.Format(time.RFC3339), n.PluginSetDigest, n.Self, held[n.Name], n.Refused)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(out.Partitions) == 0 {
				_, err = fmt.Fprintln(stdout, "partitions: none (one node owns everything)")
				return err
			}
			tw = table(stdout)
			fmt.Fprintln(tw, "LEASE\tOWNER\tRENEWED")
			for _, p := range append(append([]api.ClusterPartition{}, out.Jobs...), out.Partitions...) {
				renewed := "-"
				if p.RenewedAt != nil {
					renewed = p.RenewedAt.Format(time.RFC3339Nano)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", p.ID, orDash(p.Owner), renewed)
			}
			return tw.Flush()
		}),
	}
	addClientFlags(cmd, &cf)
	return cmd
}
