package cluster

import (
	"encoding/json"
	"strings"
)

// HolderOf is the node this node's view of the bucket shows holding l,
// by name: this node's own name when it holds l; false when nobody live
// holds it (vacant, or an earlier process's lease, expiring, once the
// node's key shows its new process). Until this node's own key is
// written, an earlier process of its name may still show as the holder
// of a lease it does not hold: its caller asks nobody then. It writes
// nothing and asks no server, so during a move it may name the node that
// has just given l up: a caller asking that node for what l's holder
// knows must accept "nothing" for an answer.
func (n *Node) HolderOf(l Lease) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.held[l]; ok {
		return n.cfg.Info.Node, true
	}
	e, ok := n.view[string(l)]
	if !ok {
		return "", false
	}
	name, inc, _ := strings.Cut(string(e.value), "/")
	ne, ok := n.view[nodeKey(name)]
	if !ok {
		return "", false
	}
	var info Info
	if json.Unmarshal(ne.value, &info) != nil || info.Incarnation != inc {
		return "", false
	}
	return name, true
}
