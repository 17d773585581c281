package host

import (
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/cluster"
)

// The cluster's view lists every node, each partition and job with its
// owner (empty while vacant), partitions in number order, and marks the
// node that answers.
func TestClusterViewListsOwnersInOrder(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	st := cluster.Status{
		Nodes: []cluster.NodeStatus{
			{Info: cluster.Info{Node: "a", Incarnation: "i1", Plugins: "d"}, Seen: t0, Leases: []cluster.LeaseStatus{
				{Lease: cluster.PartitionLease(10), Renewed: t0}, {Lease: cluster.JobLease("router"), Renewed: t0},
			}},
			{Info: cluster.Info{Node: "b", Incarnation: "i2", Plugins: "e"}, Seen: t0, Refused: true, Leases: []cluster.LeaseStatus{}},
		},
		Vacant: []cluster.Lease{cluster.PartitionLease(2), cluster.JobLease("upkeep")},
	}
	got := clusterView("b", st)
	if got.Mode != "cluster" || len(got.Nodes) != 2 || got.Nodes[0].Self || !got.Nodes[1].Self || !got.Nodes[1].Refused || got.Nodes[0].ID != "a/i1" {
		t.Fatalf("nodes %+v", got.Nodes)
	}
	if len(got.Partitions) != 2 || got.Partitions[0].ID != "p.2" || got.Partitions[0].Owner != "" || got.Partitions[0].RenewedAt != nil ||
		got.Partitions[1].ID != "p.10" || got.Partitions[1].Owner != "a" || got.Partitions[1].RenewedAt == nil {
		t.Fatalf("partitions %+v", got.Partitions)
	}
	if len(got.Jobs) != 2 || got.Jobs[0].ID != "j.router" || got.Jobs[0].Owner != "a" || got.Jobs[1].ID != "j.upkeep" || got.Jobs[1].Owner != "" {
		t.Fatalf("jobs %+v", got.Jobs)
	}
}
