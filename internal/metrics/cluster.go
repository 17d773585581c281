package metrics

import "github.com/prometheus/client_golang/prometheus"

// Cluster is a cluster node's lease instruments (internal/cluster's Metrics),
// registered by Metrics.Cluster on a node only: one host exposes none of
// them.
type Cluster struct {
	held     *prometheus.GaugeVec
	moves    *prometheus.CounterVec
	renewals *prometheus.CounterVec
}

// Cluster registers the cluster instruments in m's registry and returns
// them. Call it once, on a node of a cluster.
func (m *Metrics) Cluster() *Cluster {
	c := &Cluster{
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vigil_cluster_leases_held",
			Help: "Leases this node holds now, by kind: partition (of the watches, and of the recipients' pushes) or job (cluster-wide).",
		}, []string{"kind"}),
		moves: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_cluster_lease_moves_total",
			Help: "Leases that moved to this node (direction gained) or away from it (lost).",
		}, []string{"direction"}),
		renewals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_cluster_lease_renewals_total",
			Help: "Lease renewals, by result (ok, or refused: another node holds the lease).",
		}, []string{"result"}),
	}
	m.reg.MustRegister(c.held, c.moves, c.renewals)
	return c
}

// Held sets the leases held, partitions and jobs apart.
func (c *Cluster) Held(partitions, jobs int) {
	c.held.WithLabelValues("partition").Set(float64(partitions))
	c.held.WithLabelValues("job").Set(float64(jobs))
}

// Moved counts a lease gained or lost.
func (c *Cluster) Moved(gained bool) {
	if gained {
		c.moves.WithLabelValues("gained").Inc()
		return
	}
	c.moves.WithLabelValues("lost").Inc()
}

// Renewed counts a renewal, ok or refused.
func (c *Cluster) Renewed(ok bool) {
	if ok {
		c.renewals.WithLabelValues("ok").Inc()
		return
	}
	c.renewals.WithLabelValues("refused").Inc()
}
