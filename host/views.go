package host

import (
	"os"
	"sync/atomic"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/host/console"
	"github.com/vigilhq/vigil/host/fetch"
	"github.com/vigilhq/vigil/host/httpapi"
	"github.com/vigilhq/vigil/host/overview"
)

// node is this host as GET /api/v1/cluster names it: its name, when it
// started and, once Run has a listener, its address.
type node struct {
	name    string
	started time.Time
	addr    atomic.Pointer[string]
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

var _ httpapi.NodeInfo = (*node)(nil)

// views builds the overview and the console the API serves beside its
// routes.
func (h *Host) views() (httpapi.Overviewer, *console.Console, error) {
	ov, err := overview.New(overview.Config{
		States: h.Core.Store, Counters: h.Metrics, Armed: h.Core.Scheduler, Outbox: h.Core.Outbox,
		Seqs: h.Core.Store, DeadLetters: fetch.StreamDeadLetters, Clock: wallClock{},
	})
	if err != nil {
		return nil, nil, err
	}
	c, err := console.New()
	if err != nil {
		return nil, nil, err
	}
	return ov, c, nil
}
