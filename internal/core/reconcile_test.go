package core

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/natstest"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/natsstore"
)

// barrierKind is a standing test kind whose admission waits until two
// admissions have arrived (or a bound has passed): two reconcilers
// registering the same missing standing watch at once both get past
// their look at the pending watches before either writes.
type barrierKind struct{ b *barrier }

type barrier struct {
	mu      sync.Mutex
	arrived int
	all     chan struct{}
}

func (k barrierKind) Info() kind.Info { return kind.Info{Kind: "std", Standing: true} }
func (k barrierKind) Admit(ctx context.Context, _ kind.AdmitRequest) (kind.Admission, error) {
	k.b.mu.Lock()
	k.b.arrived++
	if k.b.arrived == 2 {
		close(k.b.all)
	}
	k.b.mu.Unlock()
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case <-k.b.all:
	case <-t.C:
	case <-ctx.Done():
	}
	return kind.Admission{}, nil
}
func (k barrierKind) Observe(context.Context, abi.ObserveRequest) (kind.Observation, error) {
	return kind.Observation{Status: abi.StatusPending}, nil
}

// Two nodes starting together make one pass over the recipients between
// them, under the reconcile job's lease: a running recipient whose record
// asks for a standing watch it lacks gets one, not one per node.
func TestNodesStartingTogetherRegisterOneStandingWatch(t *testing.T) {
	if testing.Short() {
		t.Skip("two vigil nodes on a JetStream server")
	}
	srv := natstest.Start(t)
	ctx := context.Background()
	st, err := natsstore.OpenStore(ctx, natsstore.Config{URLs: []string{srv.ClientURL()}, Partitions: testPartitions})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	now := time.Now().UTC()
	if _, _, err := st.PutRecipient(ctx, store.RecipientRecord{ID: "r", Status: store.StatusRunning, CreatedAt: now, UpdatedAt: now,
		Refs: []store.Ref{{Kind: "std", Params: json.RawMessage(`{}`)}}}); err != nil {
		t.Fatal(err)
	}
	open := &atomic.Bool{}
	seen := &observedBy{by: map[string]map[string]int{}}
	jobs := &fakeJobs{running: map[string]bool{}}
	b := &barrier{all: make(chan struct{})}
	nodes := make([]*testNode, 2)
	var wg sync.WaitGroup
	for i, name := range []string{"a", "b"} {
		wg.Go(func() {
			nodes[i] = startHookedNode(t, srv, name, "digest", open, seen, jobs, nodeHooks{kinds: []kind.Kind{barrierKind{b}}})
		})
	}
	wg.Wait()
	standing := func() int {
		ws, _, err := st.List(ctx, store.Filter{Recipient: "r", State: store.Pending})
		if err != nil {
			t.Fatal(err)
		}
		return len(ws)
	}
	natstest.WaitFor(t, within, "the recipient's standing watch", func() bool { return standing() > 0 })
	// Stopping a node waits for a reconcile it runs.
	for _, n := range nodes {
		n.stop()
	}
	if n := standing(); n != 1 {
		t.Fatalf("%d standing watches for one ref, want 1", n)
	}
}

// The core's own job name is refused for a host's job.
func TestJoinRefusesTheCoresOwnJobName(t *testing.T) {
	c := &Core{clock: clock.Wall{}, log: slogDiscard(), cluster: &clustered{}}
	err := c.Join(context.Background(), Join{Jobs: map[string]func(context.Context) error{JobReconcile: nil}})
	if err == nil {
		t.Fatal("a host's job named reconcile was taken")
	}
}
