package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/hosttest"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// fakeOwnership is a node's lease set, as a test sets it.
type fakeOwnership struct {
	mu   sync.Mutex
	n    int
	held map[int]bool
}

func owning(n int, ps ...int) *fakeOwnership {
	o := &fakeOwnership{n: n, held: map[int]bool{}}
	for _, p := range ps {
		o.held[p] = true
	}
	return o
}

func (o *fakeOwnership) Partitions() int { return o.n }

func (o *fakeOwnership) Holds(p int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.held[p]
}

func (o *fakeOwnership) set(p int, held bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.held[p] = held
}

func clusteredHarness(t *testing.T, o Ownership) *harness {
	t.Helper()
	h := newHarness(t)
	h.ownership = o
	h.open()
	return h
}

// inPartition counts the watches of ws in partition p of n.
func inPartition(ws []store.Watch, p, n int) int {
	c := 0
	for _, w := range ws {
		if w.ID.Partition(n) == p {
			c++
		}
	}
	return c
}

// A scheduler arms only the watches of the partitions its node holds;
// every registration is written whichever node owns it.
func TestOnlyOwnedPartitionsAreArmed(t *testing.T) {
	own := owning(4, 0)
	h := clusteredHarness(t, own)
	var ws []store.Watch
	for range 40 {
		ws = append(ws, h.register("ci"))
	}
	mine := inPartition(ws, 0, 4)
	if mine == 0 || mine == len(ws) {
		t.Fatalf("%d of %d watches in partition 0: the ids do not spread", mine, len(ws))
	}
	if got := h.s.Pending(); got != mine {
		t.Fatalf("%d armed, want the %d of partition 0", got, mine)
	}
	for _, w := range ws {
		if h.row(w.ID).State != store.Pending {
			t.Fatalf("watch %s was not written", w.ID)
		}
	}
	h.tick(t0)
	if got := h.plugins.Probes(); got != mine {
		t.Fatalf("%d probes, want %d", got, mine)
	}
	// A restart primes the same ones.
	h.open()
	if n, err := h.s.Prime(context.Background()); err != nil || n != mine {
		t.Fatalf("Prime armed %d (%v), want %d", n, err, mine)
	}
}

// A node primes before it holds any partition: Prime reads no pending
// schedule then (each gained partition's are read by Gain), and reads it
// once it holds one.
func TestPrimeHoldingNoPartitionReadsNothing(t *testing.T) {
	own := owning(4)
	h := clusteredHarness(t, own)
	for range 8 {
		h.register("ci")
	}
	h.open()
	if n, err := h.s.Prime(context.Background()); err != nil || n != 0 {
		t.Fatalf("Prime armed %d (%v) holding no partition", n, err)
	}
	if h.counted.pendingReads != 0 {
		t.Fatalf("Prime read the pending schedule %d times holding no partition", h.counted.pendingReads)
	}
	if h.counted.prunes != 0 {
		t.Fatalf("Prime pruned %d times on a cluster, where the upkeep job keeps the retention", h.counted.prunes)
	}
	own.set(0, true)
	if _, err := h.s.Prime(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h.counted.pendingReads != 1 {
		t.Fatalf("Prime read the pending schedule %d times holding a partition, want 1", h.counted.pendingReads)
	}
}

func TestGainArmsAPartitionAndDropForgetsIt(t *testing.T) {
	own := owning(4)
	h := clusteredHarness(t, own)
	var ws []store.Watch
	for range 40 {
		ws = append(ws, h.register("ci"))
	}
	if h.s.Pending() != 0 {
		t.Fatalf("%d armed with no partition held", h.s.Pending())
	}
	ctx := context.Background()
	total := 0
	for p := range 4 {
		own.set(p, true)
		n, err := h.s.Gain(ctx, p)
		if err != nil || n != inPartition(ws, p, 4) {
			t.Fatalf("Gain(%d) armed %d (%v), want %d", p, n, err, inPartition(ws, p, 4))
		}
		total += n
	}
	if total != len(ws) || h.s.Pending() != len(ws) {
		t.Fatalf("armed %d, pending %d, want %d", total, h.s.Pending(), len(ws))
	}
	// Gaining again arms nothing twice.
	if n, _ := h.s.Gain(ctx, 0); n != 0 {
		t.Fatalf("a second Gain(0) armed %d", n)
	}
	own.set(1, false)
	if n := h.s.Drop(1); n != inPartition(ws, 1, 4) {
		t.Fatalf("Drop(1) dropped %d, want %d", n, inPartition(ws, 1, 4))
	}
	// Gained watches that were due are spread from now, as after a
	// restart: a second later all have been probed.
	h.tick(t0.Add(time.Second))
	if got, want := h.plugins.Probes(), len(ws)-inPartition(ws, 1, 4); got != want {
		t.Fatalf("%d probes after dropping partition 1, want %d", got, want)
	}
}

// A watch due when its partition has just moved to another node, before
// the loss reached the scheduler (Drop), is not probed here: the plugin
// is not asked, nothing is written, and the watch is dropped.
func TestADueWatchWhosePartitionMovedIsNotProbed(t *testing.T) {
	own := owning(1, 0)
	h := clusteredHarness(t, own)
	w := h.register("ci")
	own.set(0, false)
	h.tick(t0)
	if got := h.plugins.Probes(); got != 0 {
		t.Fatalf("%d probes of a watch whose partition moved", got)
	}
	if got := h.row(w.ID); got.State != store.Pending || got.Attempts != 0 {
		t.Fatalf("the watch whose partition moved was written: %+v", got)
	}
	if h.s.Pending() != 0 {
		t.Fatal("the scheduler kept a watch of a partition it lost")
	}
}

// A probe whose partition moves to another node while the plugin answers
// writes nothing: the new owner probes the watch itself.
func TestAProbeWhosePartitionMovesWritesNothing(t *testing.T) {
	own := owning(1, 0)
	h := clusteredHarness(t, own)
	h.plugins.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) {
		own.set(0, false)
		return hosttest.Settled("success")
	})
	w := h.register("ci")
	h.tick(t0)
	if got := h.row(w.ID); got.State != store.Pending || got.Attempts != 0 {
		t.Fatalf("the stale probe wrote: %+v", got)
	}
	if m := h.deliver.messages(); len(m) != 0 {
		t.Fatalf("the stale probe mailed %+v", m)
	}
	if h.s.Pending() != 0 {
		t.Fatal("the scheduler kept a watch of a partition it lost")
	}
}

// A registration made on another node is armed by the owner when the
// backend tells it (Adopt); a node that does not own it ignores it.
func TestAdoptArmsOnlyOwnedWatches(t *testing.T) {
	h := clusteredHarness(t, owning(2, 0))
	other := owning(2)
	h2 := &harness{t: t, dir: h.dir, plugins: h.plugins, deliver: h.deliver, clock: h.clock, store: h.store, counted: h.counted}
	s2, err := New(Config{Store: h.counted, Plugins: h.plugins, Deliver: h.deliver, Clock: h.clock, Ownership: other})
	if err != nil {
		t.Fatal(err)
	}
	h2.s = s2
	var ws []store.Watch
	for range 10 {
		ws = append(ws, h2.register("ci"))
	}
	if s2.Pending() != 0 {
		t.Fatal("a node with no partitions armed its own registrations")
	}
	adopted := 0
	for _, w := range ws {
		sc := store.Schedule{ID: w.ID, Every: time.Duration(w.Every)}
		if h.s.Adopt(sc) {
			adopted++
		}
		if h.s.Adopt(sc) {
			t.Fatalf("watch %s adopted twice", w.ID)
		}
	}
	if want := inPartition(ws, 0, 2); adopted != want || h.s.Pending() != want {
		t.Fatalf("adopted %d, pending %d, want %d", adopted, h.s.Pending(), want)
	}
}

// Every watch admit gives one partition key lands in one partition.
func TestAPartitionKeyPicksThePartition(t *testing.T) {
	h := clusteredHarness(t, owning(64, 0))
	h.plugins.OnAdmit(func(_ string, req kind.AdmitRequest) (kind.Admission, error) {
		var p struct{ Key string }
		_ = json.Unmarshal(req.Params, &p)
		return kind.Admission{PartitionKey: p.Key}, nil
	})
	parts := map[string]map[int]bool{}
	for i := range 30 {
		key := fmt.Sprintf("ticket-%d", i%3)
		w, err := h.s.Register(context.Background(), Registration{Kind: "ci", Params: json.RawMessage(fmt.Sprintf(`{"key":%q}`, key)), Recipient: store.Recipient{ID: "agent-1"}})
		if err != nil {
			t.Fatal(err)
		}
		if parts[key] == nil {
			parts[key] = map[int]bool{}
		}
		parts[key][w.ID.Partition(64)] = true
	}
	for key, ps := range parts {
		if len(ps) != 1 {
			t.Fatalf("watches on %s span partitions %v", key, ps)
		}
	}
}

// Property: whatever the keys and the cluster's partition count, two
// watches admit gives one key share a partition, and distinct keys spread
// over every partition (256 keys leave one of 8 partitions empty with odds
// under 1e-14); a watch with no key keeps its id's random slot.
func TestPartitionKeysLandTogetherAndSpread(t *testing.T) {
	h := clusteredHarness(t, owning(64, 0))
	h.plugins.OnAdmit(func(_ string, req kind.AdmitRequest) (kind.Admission, error) {
		var p struct{ Key string }
		_ = json.Unmarshal(req.Params, &p)
		return kind.Admission{PartitionKey: p.Key}, nil
	})
	register := func(t *rapid.T, key string) store.Watch {
		params, _ := json.Marshal(map[string]string{"key": key})
		w, err := h.s.Register(context.Background(), Registration{Kind: "ci", Params: params, Recipient: store.Recipient{ID: "agent-1"}})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	rapid.Check(t, func(t *rapid.T) {
		key := rapid.StringN(1, 64, -1).Draw(t, "key")
		n := rapid.IntRange(1, store.MaxPartitions).Draw(t, "partitions")
		a, b := register(t, key), register(t, key)
		if a.ID == b.ID || a.ID.Slot() != store.SlotOf(key) || a.ID.Partition(n) != b.ID.Partition(n) {
			t.Fatalf("key %q: %s in partition %d, %s in %d of %d", key, a.ID, a.ID.Partition(n), b.ID, b.ID.Partition(n), n)
		}
	})
	rapid.Check(t, func(t *rapid.T) {
		prefix := rapid.StringN(0, 16, -1).Draw(t, "prefix")
		seen := map[int]bool{}
		for i := range 256 {
			seen[register(t, fmt.Sprintf("%s/%d", prefix, i)).ID.Partition(8)] = true
		}
		if len(seen) != 8 {
			t.Fatalf("256 keys under %q reach partitions %v of 8", prefix, seen)
		}
	})
}

// gatedOwnership is a node's lease set that refuses registrations while
// refusal is set, as a node refused for its plugin set does.
type gatedOwnership struct {
	*fakeOwnership
	mu      sync.Mutex
	refusal error
}

func (g *gatedOwnership) Admits() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.refusal
}

var _ Gate = (*gatedOwnership)(nil)

// An Ownership that is a Gate refusing registrations refuses each with
// its error before admit runs or anything is written; once it admits,
// registrations go through.
func TestAGateRefusesRegistrations(t *testing.T) {
	g := &gatedOwnership{fakeOwnership: owning(8, 0, 1, 2, 3, 4, 5, 6, 7)}
	refusal := &api.Error{Code: "plugin_set_mismatch", Message: "another set"}
	g.refusal = refusal
	h := clusteredHarness(t, g)
	admitted := 0
	h.plugins.OnAdmit(func(string, kind.AdmitRequest) (kind.Admission, error) { admitted++; return kind.Admission{}, nil })
	_, err := h.s.Register(context.Background(), Registration{Kind: "ci", Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: "agent-1"}})
	if err != refusal || admitted != 0 || h.counted.count() != 0 || h.s.Pending() != 0 {
		t.Fatalf("register = %v, admitted %d, writes %d, pending %d; want the gate's refusal and nothing done", err, admitted, h.counted.count(), h.s.Pending())
	}
	g.mu.Lock()
	g.refusal = nil
	g.mu.Unlock()
	h.register("ci")
	if admitted != 1 || h.s.Pending() != 1 {
		t.Fatalf("admitted %d, pending %d once the gate admits", admitted, h.s.Pending())
	}
}
