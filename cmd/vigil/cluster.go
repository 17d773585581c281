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
// partitions each owns; now is the clock the leases' ages are read on.
func newCluster(stdout io.Writer, now func() time.Time) *cobra.Command {
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
lease (the cluster-wide jobs, then the partitions) with its owner,
when it was last renewed (by the JetStream servers' clock) and its age
then (by this machine's clock: a lease is renewed every third of its
TTL, so an age past that is a renewal running late). Needs the operator
role when tokens are configured.`,
		Args: cobra.NoArgs,
		RunE: cf.run(func(ctx context.Context, c *client.Client, _ []string) error {
			out, err := c.Cluster(ctx)
			if err != nil {
				return err
			}
			if cf.json {
				return printJSON(stdout, out)
			}
			return printCluster(stdout, out, now())
		}),
	}
	addClientFlags(cmd, &cf)
	return cmd
}

// printCluster prints GET /api/v1/cluster's answer as tables: the nodes,
// then (on a cluster) each lease with its owner, last renewal and age at
// now (never negative: the renewal is by the servers' clock, now by this
// machine's).
func printCluster(stdout io.Writer, out api.Cluster, now time.Time) error {
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
		_, err := fmt.Fprintln(stdout, "partitions: none (one node owns everything)")
		return err
	}
	tw = table(stdout)
	fmt.Fprintln(tw, "LEASE\tOWNER\tRENEWED\tAGE")
	for _, p := range append(append([]api.ClusterPartition{}, out.Jobs...), out.Partitions...) {
		renewed, age := "-", "-"
		if p.RenewedAt != nil {
			renewed = p.RenewedAt.Format(time.RFC3339Nano)
			age = max(now.Sub(*p.RenewedAt), 0).Round(100 * time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.ID, orDash(p.Owner), renewed, age)
	}
	return tw.Flush()
}
