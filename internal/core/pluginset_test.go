package core

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/lifecycle"
	"github.com/vigilhq/vigil/internal/natstest"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/natsstore"
)

// fakeReloads is a node's plugin set as a test reloads it: Join's
// PluginSet.
type fakeReloads struct {
	mu      sync.Mutex
	infos   []kind.Info
	changed chan struct{}
}

func (r *fakeReloads) set() ([]kind.Info, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.infos, r.changed
}

// reload makes infos the set and tells the node.
func (r *fakeReloads) reload(infos []kind.Info) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.infos = infos
	close(r.changed)
	r.changed = make(chan struct{})
}

// A node whose reload moves its plugin set to the cluster's publishes it
// at once: it takes registrations and holds partitions; a reload that
// moves it off again refuses it.
func TestAReloadRepublishesThePluginSet(t *testing.T) {
	if testing.Short() {
		t.Skip("two vigil nodes on a JetStream server")
	}
	srv, open, seen, jobs := nodeFixture(t, false)
	cluster := []kind.Info{{Kind: "ci", Version: "1.0.0", SHA256: "aa"}}
	other := []kind.Info{{Kind: "ci", Version: "1.1.0", SHA256: "bb"}}
	// Two nodes of the cluster's set, so b's is never the cluster's by a
	// tie.
	a := startNode(t, srv, "a", kind.SetDigest(cluster), open, seen, jobs)
	startNode(t, srv, "c", kind.SetDigest(cluster), open, seen, jobs)

	reloads := &fakeReloads{infos: other, changed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	reg := kind.NewRegistry()
	for _, k := range []string{"now", "gate"} {
		if err := reg.Register("test", fakeGateKind{name: k, node: "b", open: open, seen: seen}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := New(ctx, Config{Kinds: reg, Cluster: &Cluster{
		Open: func(ctx context.Context) (ClusterStore, error) {
			return natsstore.Open(ctx, natsstore.Config{URLs: []string{srv.ClientURL()}, Partitions: testPartitions})
		},
		Node: "b", LeaseTTL: testTTL,
	}})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	b := &testNode{name: "b", core: c, cancel: cancel}
	t.Cleanup(b.stop)
	if err = c.Join(ctx, Join{Addr: "127.0.0.1:0", PluginSet: reloads.set}); err != nil {
		t.Fatal(err)
	}
	b.run = lifecycle.Go(ctx, c.Run)
	every := time.Second
	register := func() error {
		_, err := b.core.Scheduler.Register(context.Background(), scheduler.Registration{Kind: "now", Recipient: store.Recipient{ID: "r"}, Every: &every})
		return err
	}
	refused := func() bool {
		var ae *api.Error
		return errors.As(register(), &ae) && ae.Code == api.CodePluginSetMismatch
	}
	natstest.WaitFor(t, within, "b refused for its plugin set", refused)
	if st := a.core.Node().Status(); len(st.Nodes) != 3 || st.Nodes[1].Plugins != kind.SetDigest(other) || len(st.Nodes[1].Kinds) != 1 {
		t.Fatalf("a sees %+v; want b publishing its set and its kinds", st.Nodes)
	}

	reloads.reload(cluster)
	natstest.WaitFor(t, within, "b holding partitions with the cluster's set", func() bool { return len(b.held()) > 0 })
	if err := register(); err != nil {
		t.Fatalf("register through b with the cluster's set: %v", err)
	}

	reloads.reload(other)
	natstest.WaitFor(t, within, "b refused again", refused)
	natstest.WaitFor(t, within, "b giving up its partitions", func() bool { return len(b.held()) == 0 })
}
