package host

import (
	"cmp"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/internal/cluster"
	"github.com/vigilhq/vigil/internal/console"
	"github.com/vigilhq/vigil/internal/fetch"
	"github.com/vigilhq/vigil/internal/httpapi"
	"github.com/vigilhq/vigil/internal/overview"
)

// node is this host as GET /api/v1/cluster names it: its name, when it
// started and, once Run has a listener, its address.
type node struct {
	name    string
	started time.Time
	addr    atomic.Pointer[string]
	// lease is the core's cluster node once it has joined; nil on one
	// host.
	lease func() *cluster.Node
}

func newNode(now time.Time) *node {
	name, err := os.Hostname()
	if err != nil || name == "" {
		name = "localhost"
	}
	return &node{name: name, started: now.UTC()}
}

func (n *node) setAddress(a string) { n.addr.Store(&a) }

// Node implements httpapi.NodeInfo. The id is the name and the start
// instant: a restarted host is another node of the same name.
func (n *node) Node() api.ClusterNode {
	out := api.ClusterNode{ID: n.name + "@" + n.started.Format(time.RFC3339), Name: n.name, StartedAt: n.started}
	if a := n.addr.Load(); a != nil {
		out.Address = *a
	}
	return out
}

var (
	_ httpapi.NodeInfo    = (*node)(nil)
	_ httpapi.ClusterInfo = (*node)(nil)
)

// Cluster implements httpapi.ClusterInfo: the leases bucket as this
// node's view shows it, false on one host or before the node joined.
func (n *node) Cluster() (api.Cluster, bool) {
	if n.lease == nil {
		return api.Cluster{}, false
	}
	cn := n.lease()
	if cn == nil {
		return api.Cluster{}, false
	}
	return clusterView(cn.Name(), cn.Status()), true
}

// clusterView is a cluster's status as the API answers it: the live
// nodes by name, every partition and job with its owner (empty while
// vacant) and when the owner last renewed it.
func clusterView(self string, st cluster.Status) api.Cluster {
	out := api.Cluster{Mode: httpapi.ClusterModeCluster, Nodes: []api.ClusterNode{}, Partitions: []api.ClusterPartition{}, Jobs: []api.ClusterPartition{}}
	add := func(l cluster.Lease, owner string, renewed *time.Time) {
		p := api.ClusterPartition{ID: string(l), Owner: owner, RenewedAt: renewed}
		if _, ok := l.Partition(); ok {
			out.Partitions = append(out.Partitions, p)
		} else {
			out.Jobs = append(out.Jobs, p)
		}
	}
	for _, ns := range st.Nodes {
		seen := ns.Seen.UTC()
		out.Nodes = append(out.Nodes, api.ClusterNode{
			ID: ns.Node + "/" + ns.Incarnation, Name: ns.Node, StartedAt: ns.StartedAt.UTC(), Address: ns.Addr,
			PluginSetDigest: ns.Plugins, Self: ns.Node == self, Seen: &seen, Refused: ns.Refused,
		})
		for _, ls := range ns.Leases {
			renewed := ls.Renewed.UTC()
			add(ls.Lease, ns.Node, &renewed)
		}
	}
	for _, l := range st.Vacant {
		add(l, "", nil)
	}
	byLease := func(a, b api.ClusterPartition) int { return cmpLease(a.ID, b.ID) }
	slices.SortFunc(out.Partitions, byLease)
	slices.SortFunc(out.Jobs, byLease)
	return out
}

// cmpLease orders partitions by number (p.2 before p.10), then by name.
func cmpLease(a, b string) int {
	pa, oka := cluster.Lease(a).Partition()
	pb, okb := cluster.Lease(b).Partition()
	if oka && okb {
		return cmp.Compare(pa, pb)
	}
	return strings.Compare(a, b)
}

// views builds the overview and the console the API serves beside its
// routes.
func (h *Host) views() (httpapi.Overviewer, *console.Console, error) {
	cfg := overview.Config{
		States: h.Core.Store, Counters: h.Metrics, Armed: h.Core.Scheduler, Outbox: h.Core.Outbox,
		Seqs: h.Core.Store, DeadLetters: fetch.StreamDeadLetters, Clock: clock.Wall{},
		// The store's disk, where its adapter measures one (badger's data
		// directory); none on JetStream, whose servers keep their own.
		Disk: h.Core.Store,
	}
	ov, err := overview.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	c, err := console.New()
	if err != nil {
		return nil, nil, err
	}
	return ov, c, nil
}
