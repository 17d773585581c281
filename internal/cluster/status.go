package cluster

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// NodeStatus is one live node as the bucket shows it.
type NodeStatus struct {
	Info
	// Seen is when the node last renewed its key, by the servers' clock.
	Seen time.Time `json:"seen"`
	// Leases are the leases the node holds.
	Leases []LeaseStatus `json:"leases"`
	// Refused: the node's plugin set digest differs from the cluster's
	// (Status.Plugins), so it is assigned no lease.
	Refused bool `json:"refused,omitempty"`
}

// LeaseStatus is one held lease.
type LeaseStatus struct {
	Lease Lease `json:"lease"`
	// Renewed is when its holder last renewed it, by the servers' clock.
	Renewed time.Time `json:"renewed"`
}

// Status is the cluster as this node's view of the bucket shows it: the
// live nodes, by name, each with what it holds, and the leases nobody
// holds.
type Status struct {
	Nodes  []NodeStatus `json:"nodes"`
	Vacant []Lease      `json:"vacant"`
	// Plugins is the cluster's plugin set digest (ClusterDigest).
	Plugins string `json:"plugins"`
}

// Status reads the node's view; it writes nothing and asks no server.
func (n *Node) Status() Status {
	n.mu.Lock()
	defer n.mu.Unlock()
	byName := map[string]*NodeStatus{}
	var st Status
	for k, e := range n.view {
		if !strings.HasPrefix(k, "n.") {
			continue
		}
		var info Info
		if json.Unmarshal(e.value, &info) != nil {
			info = Info{Node: k[2:]}
		}
		byName[info.Node] = &NodeStatus{Info: info, Seen: e.created, Leases: []LeaseStatus{}}
	}
	for _, l := range n.cfg.Leases {
		e, ok := n.view[string(l)]
		if !ok {
			st.Vacant = append(st.Vacant, l)
			continue
		}
		name, inc, _ := strings.Cut(string(e.value), "/")
		ns, ok := byName[name]
		if !ok || ns.Incarnation != inc {
			// An earlier process's lease, expiring: nobody acts on it.
			st.Vacant = append(st.Vacant, l)
			continue
		}
		ns.Leases = append(ns.Leases, LeaseStatus{Lease: l, Renewed: e.created})
	}
	st.Plugins = ClusterDigest(n.digestsLocked())
	for _, ns := range byName {
		ns.Refused = ns.Plugins != st.Plugins
		st.Nodes = append(st.Nodes, *ns)
	}
	slices.SortFunc(st.Nodes, func(a, b NodeStatus) int { return strings.Compare(a.Node, b.Node) })
	return st
}
