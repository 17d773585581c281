package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/api/client"
	"github.com/vigilhq/vigil/internal/cluster"
	"github.com/vigilhq/vigil/internal/core"
	"github.com/vigilhq/vigil/internal/crashtest"
	"github.com/vigilhq/vigil/internal/host"
	"github.com/vigilhq/vigil/internal/natstest"
	"github.com/vigilhq/vigil/internal/observe"
	"github.com/vigilhq/vigil/internal/syncbuf"
	"github.com/vigilhq/vigil/internal/wasmbuild"
	"github.com/vigilhq/vigil/plugins"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/natsstore"
)

const (
	// failoverTTL is the nodes' lease TTL: short, so a dead node's
	// partitions move within seconds.
	failoverTTL        = 2 * time.Second
	failoverPartitions = 16
	// takeover is the bound: a dead node's due watches fire
	// within the lease TTL plus a second.
	takeover = failoverTTL + time.Second
	// settleWithin bounds every other wait on the cluster: elections and
	// lease moves on a loaded machine.
	settleWithin = 30 * time.Second
	// quorumLoss is how long two of the three servers stay down: no meta
	// leader and no stream quorum, so every write fails or goes
	// unanswered until they are back. Within the client's retry budget
	// (client.DefaultRetry: 30 s), so a keyed registration sent into it
	// lands once they are.
	quorumLoss = 6 * time.Second
	// writeWithin bounds one registration, its retries included.
	writeWithin = 45 * time.Second
)

// vigilNode is one vigil node in process, built through the composition
// root (host.New, host.Run) as serve builds it, on the cluster's servers.
type vigilNode struct {
	name   string
	logs   *syncbuf.Buffer // its log lines at info and above
	h      *host.Host
	st     *natsstore.Store // its connection to the servers
	cl     *client.Client
	base   string // its API's URL
	cancel context.CancelFunc
	ran    chan error
}

func startVigilNode(t *testing.T, name string, servers []*server.Server) *vigilNode {
	t.Helper()
	return startVigilNodeWith(t, name, servers, 3, nil)
}

// startVigilNodeWith starts a node on a store of replicas replicas, with
// the observe scopes scopes.
func startVigilNodeWith(t *testing.T, name string, servers []*server.Server, replicas int, scopes map[string]observe.Scope) *vigilNode {
	t.Helper()
	n := &vigilNode{name: name, ran: make(chan error, 1), logs: &syncbuf.Buffer{}}
	var urls []string
	for _, s := range servers {
		urls = append(urls, s.ClientURL())
	}
	ctx, cancel := context.WithCancel(context.Background())
	h, err := host.New(ctx, host.Config{
		Data: t.TempDir(), PluginCache: wasmbuild.CacheDir(), Bundled: plugins.Bundled(), Scopes: scopes,
		Logger: slog.New(slog.NewTextHandler(n.logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Cluster: &core.Cluster{
			Open: func(ctx context.Context) (core.ClusterStore, error) {
				st, err := natsstore.Open(ctx, natsstore.Config{URLs: urls, Replicas: replicas, Partitions: failoverPartitions, Timeout: 2 * time.Second})
				n.st = st
				return st, err
			},
			Node: name, LeaseTTL: failoverTTL,
		},
	})
	if err != nil {
		cancel()
		t.Fatalf("node %s: %v", name, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		_ = h.Close()
		t.Fatal(err)
	}
	n.h, n.cancel = h, cancel
	n.base = "http://" + ln.Addr().String()
	n.cl = client.New(n.base)
	go func() { n.ran <- h.Run(ctx, ln) }()
	t.Cleanup(n.stop)
	return n
}

// kill is the node dying: its connection to the servers goes first, so
// nothing it does afterwards reaches them (no renewal, no settlement, and
// no release of its leases, which expire on the servers by their TTL),
// then the process's parts stop. Not the clean stop, which would hand its
// leases back at once.
func (n *vigilNode) kill() {
	_ = n.st.Close()
	n.stop()
}

func (n *vigilNode) stop() {
	if n.cancel == nil {
		return
	}
	n.cancel()
	<-n.ran
	_ = n.h.Close()
	n.cancel = nil
}

// holds is the partitions n trusts it holds now.
func (n *vigilNode) holds() []int {
	var out []int
	node := n.h.Core.Node()
	if node == nil {
		return nil
	}
	for p := range failoverPartitions {
		if node.Holds(cluster.PartitionLease(p)) {
			out = append(out, p)
		}
	}
	return out
}

// ledgerEntry is an acknowledged registration (answered 201).
type ledgerEntry struct {
	id        string
	recipient string
	at        time.Time // the timer's instant
	via       string    // the node that answered
	partition int
}

// ledger is every registration the cluster acknowledged, and what the
// load could not get acknowledged.
type ledger struct {
	mu      sync.Mutex
	entries []ledgerEntry
	byID    map[string]int
	// refused counts the registrations not acknowledged (the client's
	// retries spent), by node, and errs keeps the first few answers;
	// internal counts the answers of 500 internal among them, and
	// internalErrs keeps the first few.
	refused      map[string]int
	errs         []string
	internal     int
	internalErrs []string
	// unacked are the instants of the timers whose registration was
	// never acknowledged: one may still have been written (its last
	// attempt unanswered), and is then no duplicate.
	unacked map[int64]bool // by the timer's instant, in Unix nanoseconds
}

func newLedger() *ledger {
	return &ledger{byID: map[string]int{}, refused: map[string]int{}, unacked: map[int64]bool{}}
}

func (l *ledger) add(e ledgerEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byID[e.id] = len(l.entries)
	l.entries = append(l.entries, e)
}

func (l *ledger) all() []ledgerEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.entries)
}

var failoverRecipients = []string{"agent-1", "agent-2", "agent-3"}

// load registers timers through n, due one to four seconds on, until ctx
// ends, a registration every 40 ms; each answered 201 goes in the ledger
// and is told to acked. Each goes through the client's creating call: a
// fresh Idempotency-Key, sent again under it after a 503 or a lost answer
// (client.DefaultRetry), so a registration through an election or a
// quorum loss is written once.
func load(ctx context.Context, n *vigilNode, l *ledger, acked func(time.Time)) {
	rng := rand.New(rand.NewPCG(uint64(len(n.name)), uint64(n.name[len(n.name)-1])))
	pace := time.NewTicker(40 * time.Millisecond)
	defer pace.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-pace.C:
		}
		at := time.Now().Add(time.Second + time.Duration(rng.Int64N(int64(3*time.Second)))).UTC()
		recipient := failoverRecipients[i%len(failoverRecipients)]
		rctx, cancel := context.WithTimeout(ctx, writeWithin)
		w, err := n.cl.CreateWatch(rctx, api.WatchRequest{
			Kind: "timer", Params: json.RawMessage(`{"at":"` + at.Format(time.RFC3339Nano) + `"}`),
			Recipient: api.RecipientRef{ID: recipient},
		})
		cancel()
		if err != nil {
			var ae *api.Error
			l.mu.Lock()
			if ctx.Err() == nil { // not the load stopped mid-registration
				l.refused[n.name]++
			}
			l.unacked[at.UnixNano()] = true
			if errors.As(err, &ae) && ae.Code == api.CodeInternal {
				l.internal++
				if len(l.internalErrs) < 5 {
					l.internalErrs = append(l.internalErrs, n.name+": "+err.Error())
				}
			}
			if len(l.errs) < 5 && ctx.Err() == nil {
				l.errs = append(l.errs, n.name+": "+err.Error())
			}
			l.mu.Unlock()
			continue
		}
		id, perr := store.ParseID(w.ID)
		if perr != nil {
			panic(fmt.Sprintf("the API answered watch id %q: %v", w.ID, perr))
		}
		l.add(ledgerEntry{id: w.ID, recipient: recipient, at: at, via: n.name, partition: id.Partition(failoverPartitions)})
		acked(time.Now())
	}
}

// TestThreeNodeFailover runs three JetStream servers with replicas 3 and
// three vigil nodes on them, registers timers through every node, kills
// one vigil node mid-load (its leases left to expire) and then the
// servers' leader of the store's stream, and checks the ledger: the dead
// node's partitions are taken over and its due watches fire within the
// lease TTL plus a second; registrations are acknowledged again after the
// leader is gone; every acknowledged registration exists and fired; every
// fired watch has exactly one message in its recipient's mailbox, which
// runs from seq 1 without gaps; and no message names a watch that did not
// fire.
func TestThreeNodeFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("three JetStream servers and three vigil nodes")
	}
	began := time.Now()
	form := natstest.Form(t, 3)
	servers := form.StartAll()
	// The first node creates the store and its buckets; the others open
	// them.
	nodes := []*vigilNode{startVigilNode(t, "v1", servers)}
	nodes = append(nodes, startVigilNode(t, "v2", servers), startVigilNode(t, "v3", servers))
	natstest.WaitFor(t, settleWithin, "the partitions spread over the three nodes", func() bool {
		total := 0
		for _, n := range nodes {
			h := len(n.holds())
			if h == 0 {
				return false
			}
			total += h
		}
		return total == failoverPartitions
	})
	t.Logf("cluster up in %s", time.Since(began).Round(time.Millisecond))

	l := newLedger()
	var lastAck sync.Map // node name -> time.Time of its last acknowledgement
	loads := map[string]context.CancelFunc{}
	var wg sync.WaitGroup
	for _, n := range nodes {
		ctx, cancel := context.WithCancel(context.Background())
		loads[n.name] = cancel
		wg.Go(func() { load(ctx, n, l, func(at time.Time) { lastAck.Store(n.name, at) }) })
	}
	stopLoad := func() {
		for _, cancel := range loads {
			cancel()
		}
		wg.Wait()
	}
	defer stopLoad()
	ackedSince := func(node string, since time.Time) bool {
		v, ok := lastAck.Load(node)
		return ok && v.(time.Time).After(since)
	}
	natstest.WaitFor(t, settleWithin, "registrations acknowledged through every node", func() bool {
		for _, n := range nodes {
			if !ackedSince(n.name, began) {
				return false
			}
		}
		return len(l.all()) >= 60
	})

	// Kill v3 mid-load.
	dead := nodes[2]
	deadHeld := map[int]bool{}
	for _, p := range dead.holds() {
		deadHeld[p] = true
	}
	killAt := time.Now()
	dead.kill()
	loads[dead.name]()
	live := nodes[:2]
	natstest.WaitFor(t, settleWithin, "v1 and v2 holding every partition", func() bool {
		return len(live[0].holds())+len(live[1].holds()) == failoverPartitions
	})
	t.Logf("v3 killed holding %d partitions; v1 and v2 hold all %d %s after", len(deadHeld), failoverPartitions, time.Since(killAt).Round(time.Millisecond))

	// Then the servers' leader of the store's stream, once the dead
	// node's takeover is past its bound (so the election does not count
	// against it).
	time.Sleep(time.Until(killAt.Add(takeover + 500*time.Millisecond)))
	leaderIdx := -1
	for i, s := range servers {
		if s.JetStreamIsStreamLeader("$G", "KV_"+natsstore.DefaultBucket) {
			leaderIdx = i
		}
	}
	if leaderIdx < 0 {
		t.Fatal("no server leads the store's stream")
	}
	leader := servers[leaderIdx]
	leaderAt := time.Now()
	leader.Shutdown()
	leader.WaitForShutdown()
	natstest.WaitFor(t, settleWithin, "registrations acknowledged through v1 and v2 after the leader went", func() bool {
		return ackedSince("v1", leaderAt) && ackedSince("v2", leaderAt)
	})
	t.Logf("stream leader %s shut down; registrations acknowledged again %s after", leader.Name(), time.Since(leaderAt).Round(time.Millisecond))
	// A little more load on the two servers left, then none.
	resumed := time.Now()
	natstest.WaitFor(t, settleWithin, "registrations through both nodes on the servers left", func() bool {
		n := 0
		for _, e := range l.all() {
			if e.at.After(resumed.Add(time.Second)) {
				n++
			}
		}
		return n >= 20
	})

	// Then a quorum loss: a second server down, so one of the three runs
	// (no meta leader, no quorum for the stream) for quorumLoss; then the
	// two back, on their ports and stores. The writers keep writing
	// through it: a registration meets 503 store_unavailable or a commit
	// never answered, and its client sends it again under its key until
	// it lands.
	second := (leaderIdx + 1) % len(servers)
	lossAt := time.Now()
	servers[second].Shutdown()
	servers[second].WaitForShutdown()
	time.Sleep(quorumLoss)
	servers[leaderIdx] = form.Start(leaderIdx)
	servers[second] = form.Start(second)
	backAt := time.Now()
	natstest.WaitFor(t, writeWithin, "registrations acknowledged through v1 and v2 after the quorum came back", func() bool {
		return ackedSince("v1", backAt) && ackedSince("v2", backAt)
	})
	t.Logf("two of three servers down for %s; registrations acknowledged again %s after they were back", backAt.Sub(lossAt).Round(time.Millisecond), time.Since(backAt).Round(time.Millisecond))
	stopLoad()

	entries := l.all()
	var last time.Time
	for _, e := range entries {
		last = maxTime(last, e.at)
	}
	// Every acknowledged timer fires: wait, bounded, until none is pending
	// (read through the nodes alive, in turn).
	got := map[string]api.Watch{}
	var unsettled []ledgerEntry
	for deadline := time.Now().Add(time.Until(last) + settleWithin); ; {
		for i, r := range failoverRecipients {
			ws, err := live[i%2].cl.AllWatches(context.Background(), client.WatchQuery{Recipient: r, Limit: client.MaxWatchPage})
			if err != nil {
				continue
			}
			for _, w := range ws.Watches {
				got[w.ID] = w
			}
		}
		unsettled = unsettled[:0]
		for _, e := range entries {
			if w, ok := got[e.id]; !ok || w.State == "pending" {
				unsettled = append(unsettled, e)
			}
		}
		if len(unsettled) == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, e := range unsettled[:min(10, len(unsettled))] {
				w := got[e.id]
				id, _ := store.ParseID(e.id)
				row, rerr := live[0].h.Core.Store.Get(context.Background(), id)
				t.Logf("row of %s: next check %v, attempts %d, expires %v, every %v (%v)", e.id, row.NextCheck, row.Attempts, row.ExpiresAt, row.Every, rerr)
				_, armed1 := live[0].h.Core.Scheduler.Seen(id)
				_, armed2 := live[1].h.Core.Scheduler.Seen(id)
				t.Errorf("LATE: watch %s (acknowledged by %s, due %s, partition %d held by v1 %v, v2 %v; armed on v1 %v, v2 %v) is %q, %d probes, note %q, fault %+v",
					e.id, e.via, e.at.Format(time.StampMilli), e.partition, slices.Contains(live[0].holds(), e.partition),
					slices.Contains(live[1].holds(), e.partition), armed1, armed2, w.State, w.Attempts, w.LastNote, w.LastFault)
			}
			for _, n := range live {
				wake, ok := n.h.Core.Scheduler.NextWake()
				t.Errorf("%s: %d pending armed, next wake %v %v", n.name, n.h.Core.Scheduler.Pending(), wake.Format(time.StampMilli), ok)
			}
			for _, n := range nodes {
				t.Logf("%s's log:\n%s", n.name, n.logs.String())
			}
			t.Fatalf("%d of %d acknowledged timers not settled %s after the last was due", len(unsettled), len(entries), settleWithin)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mail := map[string][]api.Message{}
	for i, r := range failoverRecipients {
		mail[r] = readAllMail(t, live[(i+1)%2].cl, r)
	}
	problems, judged, worst := checkLedger(entries, got, mail, deadHeld, killAt)
	for _, p := range problems {
		t.Error(p)
	}
	l.mu.Lock()
	refused := fmt.Sprint(l.refused, l.errs)
	if l.internal > 0 {
		t.Errorf("%d registrations answered 500 internal, a bug (a store that cannot answer is 503): %v", l.internal, l.internalErrs)
		for _, n := range nodes {
			for _, line := range strings.Split(n.logs.String(), "\n") {
				if strings.Contains(line, "request failed") {
					t.Logf("%s: %s", n.name, line)
				}
			}
		}
	}
	for _, p := range checkDuplicates(got, entries, l.unacked) {
		t.Error(p)
	}
	l.mu.Unlock()
	t.Logf("%d registrations acknowledged (%d more listed), not acknowledged by node %s; of %d watches of the dead node's partitions held to the takeover bound (%s), the latest fired %s after the kill plus the TTL; %s in all",
		len(entries), len(got)-len(entries), refused, judged, takeover, worst.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

// checkDuplicates finds the timers written more than once: each
// registration's instant is its own, so two listed watches with one
// instant are one registration written twice (DUPLICATED). A listed
// watch no acknowledgement names must be of a registration whose client
// gave up (unacked: its last attempt may have been written unanswered).
func checkDuplicates(listed map[string]api.Watch, entries []ledgerEntry, unacked map[int64]bool) (problems []string) {
	acked := map[int64]bool{}
	for _, e := range entries {
		acked[e.at.UnixNano()] = true
	}
	byAt := map[int64][]string{}
	for id, w := range listed {
		var p struct{ At time.Time }
		if err := json.Unmarshal(w.Params, &p); err != nil {
			problems = append(problems, fmt.Sprintf("STATE: watch %s has params %s", id, w.Params))
			continue
		}
		byAt[p.At.UnixNano()] = append(byAt[p.At.UnixNano()], id)
		if !acked[p.At.UnixNano()] && !unacked[p.At.UnixNano()] {
			problems = append(problems, fmt.Sprintf("STATE: watch %s (params %s) is of no registration the load sent", id, w.Params))
		}
	}
	for at, ids := range byAt {
		if len(ids) > 1 {
			slices.Sort(ids)
			problems = append(problems, fmt.Sprintf("DUPLICATED: the registration of the timer at %s was written %d times: %v", time.Unix(0, at).UTC().Format(time.RFC3339Nano), len(ids), ids))
		}
	}
	return problems
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// readAllMail reads recipient r's whole mailbox.
func readAllMail(t *testing.T, cl *client.Client, r string) []api.Message {
	t.Helper()
	var out []api.Message
	for after := uint64(0); ; {
		mb, err := cl.ReadMailbox(context.Background(), r, after, 0, 1000)
		if err != nil {
			t.Fatalf("reading %s's mailbox: %v", r, err)
		}
		if len(mb.Messages) == 0 {
			return out
		}
		out = append(out, mb.Messages...)
		after = mb.Messages[len(mb.Messages)-1].Seq
	}
}

// checkLedger is the crash harness's checks (internal/crashtest) on the
// cluster's answers: its mailbox checks (crashtest.CheckMail) and, for
// each acknowledged registration, that it is listed, fired and delivered
// not before its instant, and, for the dead node's partitions, the
// takeover bound; each problem named LOST, DUPLICATED, STATE, ORDER or
// LATE. judged is how many watches the takeover bound was held to, worst
// the latest of them past the kill plus the TTL (negative: before it).
func checkLedger(entries []ledgerEntry, got map[string]api.Watch, mail map[string][]api.Message,
	deadHeld map[int]bool, killAt time.Time,
) (problems []string, judged int, worst time.Duration) {
	worst = -takeover
	bad := func(what, format string, a ...any) { problems = append(problems, what+": "+fmt.Sprintf(format, a...)) }
	for _, p := range crashtest.CheckMail(mail, got) {
		problems = append(problems, p.String())
	}
	for _, e := range entries {
		w, ok := got[e.id]
		if !ok {
			bad("LOST", "watch %s (acknowledged by %s) is not listed", e.id, e.via)
			continue
		}
		if w.State != "fired" || w.Receipt != "delivered" || w.SettledAt == nil {
			bad("STATE", "watch %s is %s with receipt %s, want fired and delivered", e.id, w.State, w.Receipt)
			continue
		}
		if w.SettledAt.Before(e.at) {
			bad("STATE", "watch %s fired at %s, before its instant %s", e.id, w.SettledAt, e.at)
		}
		if !deadHeld[e.partition] {
			continue
		}
		// A watch of the dead node's partitions due before the others
		// could take its leases (by the kill plus the TTL) fires within
		// the TTL plus a second of the kill. One due later is the new
		// owner's like any other (a probe just before its instant is
		// floored at the least interval, so it may fire a second late).
		if e.at.After(killAt.Add(failoverTTL)) {
			continue
		}
		from := killAt.Add(failoverTTL)
		if late := w.SettledAt.Sub(from); late > time.Second {
			bad("LATE", "watch %s of the dead node's partition %d, due %s, fired %s after the kill (bound %s)",
				e.id, e.partition, e.at.Format(time.StampMilli), w.SettledAt.Sub(killAt).Round(time.Millisecond), takeover)
		} else {
			worst = max(worst, late)
		}
		judged++
	}
	if len(problems) > 20 {
		problems = append(problems[:20], fmt.Sprintf("… and %d more", len(problems)-20))
	}
	return problems, judged, worst
}
