package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrPluginSetMismatch: this node's plugin set differs from the
// cluster's, so it takes no registrations (a *PluginSetError answers
// errors.Is with it).
var ErrPluginSetMismatch = errors.New("this node's plugin set differs from the cluster's")

// PluginSetError is a registration refused because the node's plugin set
// is not the cluster's: the node owns no partition, so a watch it admitted
// of a kind only it serves would be settled unwatchable by the owner.
type PluginSetError struct {
	Node    string
	Plugins string // this node's digest
	Cluster string // the cluster's (ClusterDigest)
	// Differ names each kind whose plugin differs from the cluster's, in
	// kind order ("ci: 1.1.0 9b1c… here, 1.0.0 3fa2… on the cluster",
	// "timer: only here", "http: not here"); empty when the cluster's
	// nodes did not publish their kinds.
	Differ []string
}

func (e *PluginSetError) Error() string {
	msg := fmt.Sprintf("node %s serves plugin set %s and the cluster %s", e.Node, short(e.Plugins), short(e.Cluster))
	if len(e.Differ) > 0 {
		msg += " (" + strings.Join(e.Differ, "; ") + ")"
	}
	return msg + ": it takes no watches until the sets match; give it the cluster's plugins and reload them, or register through another node"
}

func (e *PluginSetError) Is(target error) bool { return target == ErrPluginSetMismatch }

// short is a digest's first 12 hex digits, as the refusal names it (GET
// /api/v1/cluster shows whole ones); "none" for the empty digest.
func short(d string) string {
	switch {
	case d == "":
		return "none"
	case len(d) > 12:
		return d[:12]
	}
	return d
}

// Admits says whether this node may take a registration now: nil, or a
// *PluginSetError when its plugin set differs from the cluster's as its
// view of the bucket shows it. A node that has not yet published itself
// and read the bucket cannot tell, and admits: the window is its first
// pass after Join.
func (n *Node) Admits() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.ready || n.me == 0 {
		return nil
	}
	want := ClusterDigest(n.digestsLocked())
	if n.plugins == want {
		return nil
	}
	return &PluginSetError{Node: n.cfg.Info.Node, Plugins: n.plugins, Cluster: want, Differ: differ(n.kinds, n.clusterKindsLocked(want))}
}

// clusterKindsLocked is the kinds published by the first node, by name,
// whose digest is want and which published them; nil when none did. The
// caller holds mu.
func (n *Node) clusterKindsLocked(want string) []string {
	var names []string
	infos := map[string]Info{}
	for k, e := range n.view {
		if e.info == nil || k[2:] == n.cfg.Info.Node || e.info.Plugins != want || len(e.info.Kinds) == 0 {
			continue
		}
		names = append(names, k[2:])
		infos[k[2:]] = *e.info
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	return infos[names[0]].Kinds
}

// differ compares two nodes' kinds lines ("kind version sha256"): the
// kinds whose lines differ, in kind order; nil when either is unknown.
func differ(mine, theirs []string) []string {
	if len(mine) == 0 || len(theirs) == 0 {
		return nil
	}
	split := func(lines []string) map[string]string {
		out := map[string]string{}
		for _, l := range lines {
			k, rest, _ := strings.Cut(l, " ")
			out[k] = shortLine(rest)
		}
		return out
	}
	here, there := split(mine), split(theirs)
	var kinds []string
	for k := range here {
		kinds = append(kinds, k)
	}
	for k := range there {
		if _, ok := here[k]; !ok {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(kinds)
	var out []string
	for _, k := range kinds {
		h, inHere := here[k]
		t, inThere := there[k]
		switch {
		case !inThere:
			out = append(out, k+": only here")
		case !inHere:
			out = append(out, k+": not here")
		case h != t:
			out = append(out, fmt.Sprintf("%s: %s here, %s on the cluster", k, h, t))
		}
	}
	return out
}

// shortLine is "version sha256" with the sha cut to 12 digits.
func shortLine(rest string) string {
	v, sum, ok := strings.Cut(rest, " ")
	if !ok {
		return rest
	}
	if sum == "" {
		return v
	}
	return v + " " + short(sum)
}
