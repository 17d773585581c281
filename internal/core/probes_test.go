package core

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/nats-io/nats-server/v2/server"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/cluster"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/httpapi"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/natstest"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/internal/signal"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/natsstore"
)

// tickedNode is a vigil node whose scheduler the test drives (Tick) on a
// fake clock that stands still, joined to the cluster, with the API in
// front of it. The clock standing still keeps every lease trusted; the
// leases' TTL is long enough that none expires in the servers meanwhile.
type tickedNode struct {
	name   string
	core   *Core
	app    *fiber.App
	cancel context.CancelFunc
	run    func() error // stops what runJoined runs and waits
}

const tickedTTL = time.Hour

func startTickedNode(t *testing.T, srv *server.Server, name string, clock *fakeclock.Clock, seen *observedBy) *tickedNode {
	t.Helper()
	reg := kind.NewRegistry()
	if err := reg.Register("test", fakeGateKind{name: "gate", node: name, open: &atomic.Bool{}, seen: seen}); err != nil {
		t.Fatal(err)
	}
	if err := (signal.Kind{}).Register(reg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c, err := New(ctx, Config{Kinds: reg, Clock: clock, Cluster: &Cluster{
		Open: func(ctx context.Context) (ClusterStore, error) {
			return natsstore.Open(ctx, natsstore.Config{URLs: []string{srv.ClientURL()}, Partitions: testPartitions})
		},
		Node: name, LeaseTTL: tickedTTL, AskTimeout: 100 * time.Millisecond,
	}})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	n := &tickedNode{name: name, core: c, cancel: cancel}
	t.Cleanup(func() {
		n.cancel()
		if n.run != nil {
			_ = n.run()
		}
		_ = n.core.Close()
	})
	if _, err := c.Prime(ctx); err != nil {
		t.Fatal(err)
	}
	if err = c.Join(ctx, Join{Addr: "127.0.0.1:0", Plugins: "digest"}); err != nil {
		t.Fatal(err)
	}
	n.run = runJoined(ctx, c)
	n.app = httpapi.New(httpapi.Deps{Scheduler: c.Scheduler, Watches: c.Store, Seen: c, Base: ctx}, httpapi.Options{})
	return n
}

func (n *tickedNode) holds(id store.ID) bool {
	return n.core.Node().Holds(cluster.PartitionLease(id.Partition(testPartitions)))
}

// show GETs the watch through the node's API.
func (n *tickedNode) show(t *testing.T, id store.ID, query string) api.Watch {
	t.Helper()
	resp, err := n.app.Test(httptest.NewRequest("GET", "/api/v1/watches/"+id.String()+query, nil), 60_000)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s through %s: %d %s", id, n.name, resp.StatusCode, body)
	}
	var w api.Watch
	if err := json.Unmarshal(body, &w); err != nil {
		t.Fatal(err)
	}
	return w
}

// twoTickedNodes starts a and b on one server and a pending watch,
// registered through a, in a partition b holds, armed on b.
func twoTickedNodes(t *testing.T) (a, b *tickedNode, w store.Watch, clock *fakeclock.Clock) {
	t.Helper()
	srv := natstest.Start(t)
	clock = fakeclock.At(time.Date(2026, 12, 2, 2, 0, 0, 0, time.UTC))
	seen := &observedBy{by: map[string]map[string]int{}}
	a = startTickedNode(t, srv, "a", clock, seen)
	b = startTickedNode(t, srv, "b", clock, seen)
	natstest.WaitFor(t, within, "the partitions split between a and b", func() bool {
		var ha, hb int
		for p := range testPartitions {
			l := cluster.PartitionLease(p)
			if a.core.Node().Holds(l) {
				ha++
			}
			if b.core.Node().Holds(l) {
				hb++
			}
		}
		return ha+hb == testPartitions && ha > 0 && hb > 0
	})
	w = registerForB(t, a, b, "b arming the watch a registered")
	return a, b, w, clock
}

// registerForB registers gate watches through a, every second, until one
// lands in a partition b holds, and waits (what) until b has armed it.
func registerForB(t *testing.T, a, b *tickedNode, what string) store.Watch {
	t.Helper()
	every := time.Second
	var w store.Watch
	for i := 0; ; i++ {
		if i == 64 {
			t.Fatal("no watch of 64 landed in b's partitions")
		}
		var err error
		w, err = a.core.Scheduler.Register(context.Background(), scheduler.Registration{Kind: "gate", Recipient: store.Recipient{ID: "r"}, Every: &every})
		if err != nil {
			t.Fatal(err)
		}
		if b.holds(w.ID) {
			break
		}
	}
	natstest.WaitFor(t, within, what, func() bool {
		_, ok := b.core.Scheduler.Seen(w.ID)
		return ok
	})
	return w
}

// probe has b probe the watch once more, a second after its last probe.
func probeOn(t *testing.T, b *tickedNode, clock *fakeclock.Clock, round int) time.Time {
	t.Helper()
	at := clock.Now().Add(time.Duration(round) * time.Second)
	if n := b.core.Scheduler.Tick(context.Background(), at); n != 1 {
		t.Fatalf("b's tick at round %d probed %d watches, want 1", round, n)
	}
	return at
}

// Show on the node that does not own a watch answers what show on its
// owner does, after probes that wrote nothing: the probes so far and when
// the last began, fetched from the owner, and says so.
func TestShowOnANonOwnerIsTheOwners(t *testing.T) {
	if testing.Short() {
		t.Skip("two vigil nodes on a JetStream server")
	}
	a, b, w, clock := twoTickedNodes(t)
	var last time.Time
	for round := range 3 {
		last = probeOn(t, b, clock, round)
	}
	row, err := a.core.Store.Get(context.Background(), w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if row.Attempts >= 3 {
		t.Fatalf("the row holds %d attempts: the probes wrote, and the test shows nothing", row.Attempts)
	}
	onA, onB := a.show(t, w.ID, ""), b.show(t, w.ID, "")
	if onA.Attempts != 3 || onA.LastProbeAt == nil || !onA.LastProbeAt.Equal(last) || onA.ProbesFrom != api.ProbesFromOwner {
		t.Fatalf("a shows %d attempts, last probe %v, from %q; want 3, %s, owner", onA.Attempts, onA.LastProbeAt, onA.ProbesFrom, last)
	}
	ja, _ := json.Marshal(onA)
	jb, _ := json.Marshal(onB)
	if string(ja) != string(jb) {
		t.Fatalf("show differs between the nodes:\na %s\nb %s", ja, jb)
	}
	// A watch of the same partition that the owner does not hold: the
	// owner answers, without it, and the store's count stands.
	other := w.ID
	other[15] ^= 1
	if seen, from, ok := a.core.Seen(context.Background(), other); ok || from != api.ProbesFromStore || seen != (scheduler.Seen{}) {
		t.Fatalf("a's Seen of a watch b does not hold: %+v from %q, ok %v", seen, from, ok)
	}
}

// An owner that does not answer (its responder stopped) leaves the other
// node the stored count, marked as such, without waiting past the bound.
func TestShowWithoutTheOwnersAnswerIsTheStoredCount(t *testing.T) {
	if testing.Short() {
		t.Skip("two vigil nodes on a JetStream server")
	}
	a, b, w, clock := twoTickedNodes(t)
	for round := range 3 {
		probeOn(t, b, clock, round)
	}
	row, err := a.core.Store.Get(context.Background(), w.ID)
	if err != nil {
		t.Fatal(err)
	}
	b.core.cluster.share.Load().Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, from, ok := a.core.Seen(ctx, w.ID); ok || from != api.ProbesFromStore {
		t.Fatalf("a's Seen without b answering: ok %v, from %q; want the store's", ok, from)
	}
	if ctx.Err() != nil {
		t.Fatal("a waited for b past its bound")
	}
	got := a.show(t, w.ID, "")
	if got.Attempts != row.Attempts || got.LastProbeAt != nil || got.ProbesFrom != api.ProbesFromStore {
		t.Fatalf("a shows %d attempts, last probe %v, from %q; want the row's %d, none, store", got.Attempts, got.LastProbeAt, got.ProbesFrom, row.Attempts)
	}
	// The owner itself still answers from memory.
	if got := b.show(t, w.ID, ""); got.Attempts != 3 || got.ProbesFrom != api.ProbesFromOwner {
		t.Fatalf("b shows %d attempts from %q", got.Attempts, got.ProbesFrom)
	}
}

// A wait on the node that does not own a watch wakes on the owner's probe
// that wrote nothing, not at its bound.
func TestAWaitOnANonOwnerWakesOnTheOwnersProbe(t *testing.T) {
	if testing.Short() {
		t.Skip("two vigil nodes on a JetStream server")
	}
	a, b, w, clock := twoTickedNodes(t)
	probeOn(t, b, clock, 0) // the first probe, written
	probeOn(t, b, clock, 1) // a second, which writes nothing
	before := a.show(t, w.ID, "")
	if before.Attempts != 2 {
		t.Fatalf("a shows %d attempts, want 2", before.Attempts)
	}
	answer := make(chan api.Watch, 1)
	go func() {
		resp, err := a.app.Test(httptest.NewRequest("GET", fmt.Sprintf("/api/v1/watches/%s?wait=50s&since=%s", w.ID, before.Version), nil), 60_000)
		if err != nil {
			t.Error(err)
			close(answer)
			return
		}
		defer func() { _ = resp.Body.Close() }()
		var got api.Watch
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			t.Error(err)
		}
		answer <- got
	}()
	natstest.WaitFor(t, within, "the wait on a taking its channel", func() bool { return a.core.Scheduler.Waiters() == 1 })
	probeOn(t, b, clock, 2)
	select {
	case got := <-answer:
		if got.Attempts != 3 || got.Version == before.Version {
			t.Fatalf("the wait answered %d attempts, version %s (before %s)", got.Attempts, got.Version, before.Version)
		}
	case <-time.After(25 * time.Second):
		t.Fatal("the wait on a did not wake on b's probe")
	}

	// A wait that runs to its bound answers the owner's view unchanged,
	// asked after the bound: the same version, from the owner.
	now := a.show(t, w.ID, "")
	got := a.show(t, w.ID, "?wait=200ms&since="+now.Version)
	if got.Version != now.Version || got.ProbesFrom != api.ProbesFromOwner || got.Attempts != 3 {
		t.Fatalf("a wait run to its bound answered %d attempts from %q, version %s (before %s)", got.Attempts, got.ProbesFrom, got.Version, now.Version)
	}
}

// A cancel through the node that does not own a watch keeps the owner's
// count in the cancelled row, and the row's own when the owner does not
// answer: never none.
func TestACancelOnANonOwnerKeepsTheOwnersCount(t *testing.T) {
	if testing.Short() {
		t.Skip("two vigil nodes on a JetStream server")
	}
	a, b, w, clock := twoTickedNodes(t)
	for round := range 3 {
		probeOn(t, b, clock, round)
	}
	ctx := context.Background()
	got, err := a.core.Scheduler.Cancel(ctx, w.ID, "test")
	if err != nil {
		t.Fatal(err)
	}
	if got.Attempts != 3 {
		t.Fatalf("cancelled through a with %d attempts, want b's 3", got.Attempts)
	}

	// Another watch, whose owner stops answering: the row's count stays.
	w2 := registerForB(t, a, b, "b arming the second watch")
	for round := 3; round < 6; round++ {
		b.core.Scheduler.Tick(ctx, clock.Now().Add(time.Duration(round)*time.Second))
	}
	row, err := a.core.Store.Get(ctx, w2.ID)
	if err != nil {
		t.Fatal(err)
	}
	if row.Attempts == 0 {
		t.Fatal("the second watch's row holds no attempts")
	}
	b.core.cluster.share.Load().Close()
	if got, err = a.core.Scheduler.Cancel(ctx, w2.ID, "test"); err != nil {
		t.Fatal(err)
	}
	if got.Attempts != row.Attempts {
		t.Fatalf("cancelled through a with %d attempts, want the row's %d", got.Attempts, row.Attempts)
	}
}

// A signal answered on a node that does not own its watch settles it
// there, fired and mailed, as on its owner: the answer arrives wherever
// its URL's request does, and the store's conditional settlement, not
// the owner's fence, decides it against the owner's own (a second answer
// after it is already_settled).
func TestASignalIsAnsweredOnANonOwner(t *testing.T) {
	if testing.Short() {
		t.Skip("two vigil nodes on a JetStream server")
	}
	a, b, _, _ := twoTickedNodes(t)
	ctx := context.Background()
	var w store.Watch
	for i := 0; ; i++ {
		if i == 64 {
			t.Fatal("no signal of 64 landed in b's partitions")
		}
		var err error
		w, err = a.core.Scheduler.Register(ctx, scheduler.Registration{Kind: signal.Name, Params: json.RawMessage(`{"title":"Go?"}`),
			Recipient: store.Recipient{ID: "r"}, Token: fmt.Sprintf("AAAAAAAAAAAAAAAAAAAA%02d", i)})
		if err != nil {
			t.Fatal(err)
		}
		if b.holds(w.ID) {
			break
		}
	}
	out := store.Outcome{Result: "approve", Summary: "approve: Go?"}
	got, err := a.core.Scheduler.Complete(ctx, w.ID, out, "answered")
	if err != nil || got.State != store.Fired {
		t.Fatalf("answered on the non-owner: %s %v", got.State, err)
	}
	msgs, err := a.core.Store.ReadMailbox(ctx, "r", 0, 10)
	if err != nil || len(msgs) != 1 || msgs[0].WatchID != w.ID || msgs[0].Outcome.Result != "approve" {
		t.Fatalf("mailbox %+v %v", msgs, err)
	}
	if _, err := b.core.Scheduler.Complete(ctx, w.ID, store.Outcome{Result: "deny"}, "answered"); err == nil {
		t.Fatal("a second answer, on the owner, was taken")
	}
}
