package delivery

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/store"
)

const testPartitions = 4

// twoRecipients names two recipients whose pushes are in different push
// partitions among testPartitions, and those partitions.
func twoRecipients(t *testing.T) (a, b string, pa, pb int) {
	t.Helper()
	a = "agent-0"
	pa = store.PushPartition(a, testPartitions)
	for i := 1; i < 64; i++ {
		b = fmt.Sprintf("agent-%d", i)
		if pb = store.PushPartition(b, testPartitions); pb != pa {
			return a, b, pa, pb
		}
	}
	t.Fatal("no two recipients in different partitions")
	return
}

// openPartitioned builds the rig's outbox as a cluster node's, over st
// (the rig's store unless the test wraps it), not started.
func (r *rig) openPartitioned(st OutboxStore, workers int, schedule ...time.Duration) {
	r.t.Helper()
	var err error
	r.outbox, err = NewOutbox(OutboxConfig{Store: st, Guard: loopbackGuard(), Clock: r.clock, Metrics: r.metrics,
		Workers: workers, Schedule: schedule, Timeout: 5 * time.Second, Partitions: testPartitions})
	if err != nil {
		r.t.Fatal(err)
	}
	r.d, err = New(Config{Store: r.st, Outbox: r.outbox, Clock: r.clock, Metrics: r.metrics})
	if err != nil {
		r.t.Fatal(err)
	}
}

// gain claims and loads push partition p, as a node gaining its lease.
func gain(o *Outbox, ctx context.Context, p int) (int, error) {
	o.Claim(p)
	return o.Gain(ctx, p)
}

// queued is what the outbox holds of rid: its queued and waiting pushes.
func (o *Outbox) queuedOf(rid string) []uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []uint64
	for k := range o.known {
		if k.rid == rid {
			out = append(out, k.seq)
		}
	}
	slices.Sort(out)
	return out
}

// A cluster node's outbox sends nothing until it gains a push partition,
// then only the pushes of recipients in the partitions it holds: one
// another node holds is not queued here when mailed, nor sent, and stays
// pending in the store for its holder.
func TestPartitionedOutboxSendsOnlyHeldPartitions(t *testing.T) {
	a, b, pa, pb := twoRecipients(t)
	r := newRig(t, 2)
	r.openPartitioned(r.st, 2)
	rc := newReceiver(t, status(http.StatusNoContent))
	recipient(t, r.st, a, store.StatusRunning, rc.srv.URL+"/a")
	recipient(t, r.st, b, store.StatusRunning, rc.srv.URL+"/b")
	r.start()
	mail(t, r.d, r.st, a) // before the gain: left in the store
	if q := r.outbox.queuedOf(a); len(q) != 0 {
		t.Fatalf("queued %v of %s before holding its partition", q, a)
	}
	n, err := gain(r.outbox, context.Background(), pa)
	if err != nil || n != 1 {
		t.Fatalf("gain: %d %v, want the push mailed before it", n, err)
	}
	mail(t, r.d, r.st, a)
	mail(t, r.d, r.st, b)
	r.metrics.await(t, store.PushDelivered, 2)
	if q := r.outbox.queuedOf(b); len(q) != 0 {
		t.Fatalf("queued %v of %s, whose partition %d another node holds", q, b, pb)
	}
	if p := r.push(b, 1); p.State != store.PushPending || p.Attempts != 0 {
		t.Fatalf("%s's push %+v, want pending for its holder", b, p)
	}
	if got := rc.got(); !slices.Equal(got, []uint64{1, 2}) {
		t.Fatalf("received %v, want %s's 1 and 2", got, a)
	}
	// Gaining b's partition loads b's push and sends it.
	if n, err := gain(r.outbox, context.Background(), pb); err != nil || n != 1 {
		t.Fatalf("gain %d: %d %v", pb, n, err)
	}
	r.metrics.await(t, store.PushDelivered, 3)
	if p := r.push(b, 1); p.State != store.PushDelivered {
		t.Fatalf("%s's push %+v after the gain", b, p)
	}
}

// Gaining a partition recovers as unknown only that partition's pushes
// left sending; another partition's push sending (another live node's
// attempt in flight) is left as it is.
func TestPartitionedOutboxRecoversOnlyWhatItGains(t *testing.T) {
	a, b, pa, _ := twoRecipients(t)
	r := newRig(t, 1)
	r.openPartitioned(r.st, 1)
	recipient(t, r.st, a, store.StatusRunning, "http://127.0.0.1:1/a")
	recipient(t, r.st, b, store.StatusRunning, "http://127.0.0.1:1/b")
	plain := newDelivery(t, r.st, nil)
	ctx := context.Background()
	for _, rid := range []string{a, b} {
		mail(t, plain, r.st, rid)
		if _, _, _, err := r.st.BeginPush(ctx, rid, 1, t0); err != nil {
			t.Fatal(err)
		}
	}
	r.start()
	if _, err := gain(r.outbox, ctx, pa); err != nil {
		t.Fatal(err)
	}
	if p := r.push(a, 1); p.State != store.PushUnknown {
		t.Fatalf("%s's push left sending: %+v, want unknown", a, p)
	}
	if p := r.push(b, 1); p.State != store.PushSending {
		t.Fatalf("%s's push in another partition: %+v, want still sending", b, p)
	}
}

// gatedStore holds LivePushesOf until the test opens the gate, so a test
// can tell a push while a partition is being loaded.
type gatedStore struct {
	OutboxStore
	entered chan struct{}
	gate    chan struct{}
}

func (g gatedStore) LivePushesOf(ctx context.Context, keep func(string) bool, fn func(store.Push) error) error {
	select {
	case <-g.entered: // a later call: the gate is open
	default:
		close(g.entered)
	}
	<-g.gate
	return g.OutboxStore.LivePushesOf(ctx, keep, fn)
}

// A push told while its partition is loading is queued and not sent, so
// the recipient's first attempts start from its lowest seq not delivered:
// the lower seqs the load finds go first.
func TestPartitionedOutboxSendsInOrderAcrossAGain(t *testing.T) {
	a, _, pa, _ := twoRecipients(t)
	r := newRig(t, 1)
	g := gatedStore{OutboxStore: r.st, entered: make(chan struct{}), gate: make(chan struct{})}
	r.openPartitioned(g, 1)
	rc := newReceiver(t, status(http.StatusOK))
	recipient(t, r.st, a, store.StatusRunning, rc.srv.URL+"/a")
	plain := newDelivery(t, r.st, nil)
	mail(t, plain, r.st, a)
	mail(t, plain, r.st, a)
	r.start()
	var wg sync.WaitGroup
	var gainErr error
	wg.Go(func() { _, gainErr = gain(r.outbox, context.Background(), pa) })
	<-g.entered
	mail(t, r.d, r.st, a) // seq 3, told while 1 and 2 are being loaded
	r.outbox.mu.Lock()
	runnable, busy := len(r.outbox.runq), r.outbox.lanes[a] != nil && r.outbox.lanes[a].busy
	r.outbox.mu.Unlock()
	if runnable != 0 || busy {
		t.Fatalf("a push of a partition still loading is runnable (%d) or in flight (%v)", runnable, busy)
	}
	close(g.gate)
	wg.Wait()
	if gainErr != nil {
		t.Fatal(gainErr)
	}
	r.metrics.await(t, store.PushDelivered, 3)
	if got := rc.got(); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Fatalf("received %v, want 1, 2, 3", got)
	}
}

// Dropping a partition forgets its queued pushes and its retries (no
// timer is left for them), a push told after the drop is not queued, and
// gaining it again loads the retry from the store.
func TestPartitionedOutboxDropForgetsAndRegainLoads(t *testing.T) {
	a, _, pa, _ := twoRecipients(t)
	r := newRig(t, 1, 0, time.Minute, time.Hour)
	r.openPartitioned(r.st, 1, 0, time.Minute, time.Hour)
	rc := newReceiver(t, status(http.StatusServiceUnavailable))
	recipient(t, r.st, a, store.StatusRunning, rc.srv.URL+"/a")
	r.start()
	ctx := context.Background()
	if _, err := gain(r.outbox, ctx, pa); err != nil {
		t.Fatal(err)
	}
	mail(t, r.d, r.st, a)
	r.metrics.await(t, store.PushRetrying, 1)
	if _, ok := r.outbox.NextRetry(); !ok {
		t.Fatal("no retry waits after a 503")
	}
	if n := r.outbox.Drop(pa); n != 1 {
		t.Fatalf("dropped %d, want the retry", n)
	}
	if at, ok := r.outbox.NextRetry(); ok {
		t.Fatalf("a retry still waits for %s after its partition was dropped", at)
	}
	mail(t, r.d, r.st, a)
	if q := r.outbox.queuedOf(a); len(q) != 0 {
		t.Fatalf("queued %v after the drop", q)
	}
	if p := r.push(a, 2); p.State != store.PushPending {
		t.Fatalf("push 2 %+v, want pending for the partition's holder", p)
	}
	if n, err := gain(r.outbox, ctx, pa); err != nil || n != 2 {
		t.Fatalf("regain: %d %v, want the retry and the pending push", n, err)
	}
	if q := r.outbox.queuedOf(a); !slices.Equal(q, []uint64{1, 2}) {
		t.Fatalf("queued %v after the regain", q)
	}
}

// An attempt in flight when its partition is dropped finishes and records
// its result, and its retry is not kept here, nor the push queued behind
// it: the partition's next holder loads both from the store (here, this
// outbox again).
func TestPartitionedOutboxAttemptInFlightAtDropIsNotRetriedHere(t *testing.T) {
	a, _, pa, _ := twoRecipients(t)
	r := newRig(t, 1, 0, time.Minute, time.Hour)
	r.openPartitioned(r.st, 1, 0, time.Minute, time.Hour)
	arrived, gate := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(gate) })
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ store.Message, n int) {
		if n == 1 {
			close(arrived)
			<-gate
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	recipient(t, r.st, a, store.StatusRunning, rc.srv.URL+"/a")
	r.start()
	t.Cleanup(release) // before the outbox stops, should the test fail first
	ctx := context.Background()
	if _, err := gain(r.outbox, ctx, pa); err != nil {
		t.Fatal(err)
	}
	mail(t, r.d, r.st, a)
	<-arrived
	mail(t, r.d, r.st, a) // queued behind the one in flight
	if n := r.outbox.Drop(pa); n != 1 {
		t.Fatalf("dropped %d, want the push queued", n)
	}
	release()
	r.metrics.await(t, store.PushRetrying, 1)
	idle := func() bool {
		r.outbox.mu.Lock()
		defer r.outbox.mu.Unlock()
		return r.outbox.lanes[a] == nil || !r.outbox.lanes[a].busy
	}
	for !idle() { // the worker records the result, then releases the lane
		runtime.Gosched()
	}
	if p := r.push(a, 1); p.State != store.PushRetrying || p.Attempts != 1 {
		t.Fatalf("push %+v, want retrying after its one attempt", p)
	}
	if at, ok := r.outbox.NextRetry(); ok {
		t.Fatalf("a retry waits here for %s, for a partition this outbox dropped", at)
	}
	if q := r.outbox.queuedOf(a); len(q) != 0 {
		t.Fatalf("queued %v after the drop", q)
	}
	if n, err := gain(r.outbox, ctx, pa); err != nil || n != 2 {
		t.Fatalf("regain: %d %v, want both pushes", n, err)
	}
	if q := r.outbox.queuedOf(a); !slices.Equal(q, []uint64{1, 2}) {
		t.Fatalf("queued %v after the regain, want 1 and 2", q)
	}
}

// A Gain that comes after its partition was dropped (the lease went
// before the queue got to the load) recovers and loads nothing: the
// partition's push left sending is its new holder's.
func TestPartitionedOutboxGainAfterTheDropTouchesNothing(t *testing.T) {
	a, _, pa, _ := twoRecipients(t)
	r := newRig(t, 1)
	r.openPartitioned(r.st, 1)
	recipient(t, r.st, a, store.StatusRunning, "http://127.0.0.1:1/a")
	mail(t, newDelivery(t, r.st, nil), r.st, a)
	ctx := context.Background()
	r.start()
	r.outbox.Claim(pa)
	r.outbox.Drop(pa)
	if _, _, _, err := r.st.BeginPush(ctx, a, 1, t0); err != nil { // the new holder's attempt
		t.Fatal(err)
	}
	if n, err := r.outbox.Gain(ctx, pa); err != nil || n != 0 || r.outbox.PushPartitions() != 0 {
		t.Fatalf("a gain after the drop: %d %v, holding %d", n, err, r.outbox.PushPartitions())
	}
	if p := r.push(a, 1); p.State != store.PushSending {
		t.Fatalf("the new holder's push is %s, want still sending", p.State)
	}
}

// What the outbox holds follows the claims and drops, whenever the loads
// run: a load overtaken by a drop and a new claim does not count for the new claim,
// which the next Gain loads (with the pushes told meanwhile).
func TestPartitionedOutboxGainFollowsTheClaims(t *testing.T) {
	a, _, pa, _ := twoRecipients(t)
	r := newRig(t, 1)
	g := gatedStore{OutboxStore: r.st, entered: make(chan struct{}), gate: make(chan struct{})}
	r.openPartitioned(g, 1)
	recipient(t, r.st, a, store.StatusRunning, "http://127.0.0.1:1/a")
	r.start()
	ctx := context.Background()
	r.outbox.Claim(pa)
	done := make(chan struct{})
	go func() { defer close(done); _, _ = r.outbox.Gain(ctx, pa) }()
	<-g.entered
	r.outbox.Drop(pa)
	r.outbox.Claim(pa)
	close(g.gate)
	<-done
	if n := r.outbox.PushPartitions(); n != 0 {
		t.Fatalf("a load overtaken by a drop and a claim counted: holding %d", n)
	}
	mail(t, r.d, r.st, a)
	if q := r.outbox.queuedOf(a); !slices.Equal(q, []uint64{1}) {
		t.Fatalf("queued %v while claimed, want the push told", q)
	}
	r.outbox.mu.Lock()
	runnable := len(r.outbox.runq)
	r.outbox.mu.Unlock()
	if runnable != 0 {
		t.Fatal("a push of a partition claimed, not loaded, is runnable")
	}
}
