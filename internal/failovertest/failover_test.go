package failovertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/api/client"
	"github.com/vigilhq/vigil/internal/natstest"
	"github.com/vigilhq/vigil/internal/servetest"
	"github.com/vigilhq/vigil/internal/wasmbuild"
	"github.com/vigilhq/vigil/store"
)

const (
	// timers is how many timers each run registers through a; with 64
	// partitions split between two nodes, some land in a's.
	timers = 32
	// lead is how far ahead of their registration the timers are due:
	// a is killed before then, so none of them has fired.
	lead = 3 * time.Second
	// within bounds each wait on the cluster beside the TTL: a loaded
	// machine's slack.
	within = 2 * time.Minute
)

// env reads a setting of the environment, or def.
func env(t *testing.T, name, def string) string {
	t.Helper()
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func TestFailover(t *testing.T) {
	if os.Getenv("VIGIL_FAILOVER_RUNS") == "" {
		t.Skip("set VIGIL_FAILOVER_RUNS (just bench-failover)")
	}
	if testing.Short() {
		t.Skip("kills vigil nodes and waits out their leases")
	}
	runs, err := strconv.Atoi(os.Getenv("VIGIL_FAILOVER_RUNS"))
	if err != nil || runs < 1 {
		t.Fatalf("VIGIL_FAILOVER_RUNS=%q: want a positive integer", os.Getenv("VIGIL_FAILOVER_RUNS"))
	}
	ttl, err := time.ParseDuration(env(t, "VIGIL_FAILOVER_TTL", "10s"))
	if err != nil {
		t.Fatalf("VIGIL_FAILOVER_TTL: %v", err)
	}
	replicas := env(t, "VIGIL_FAILOVER_SERVERS", "1")
	var urls []string
	switch replicas {
	case "1":
		urls = []string{natstest.Start(t).ClientURL()}
	case "3":
		for _, s := range natstest.Cluster(t, 3) {
			urls = append(urls, s.ClientURL())
		}
	default:
		t.Fatalf("VIGIL_FAILOVER_SERVERS=%q: want 1 or 3", replicas)
	}
	dir := t.TempDir()
	bin, err := servetest.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	spec := func(name string) *nodeSpec {
		n := &nodeSpec{t: t, bin: bin, name: name, data: filepath.Join(dir, name), logs: dir}
		if n.addr, err = servetest.FreeAddr(); err != nil {
			t.Fatal(err)
		}
		n.config = filepath.Join(dir, name+".yaml")
		cfg := fmt.Sprintf("store:\n  nats:\n    urls: [%s]\n    replicas: %s\n    node: %s\n    lease_ttl: %s\n", strings.Join(urls, ", "), replicas, name, ttl)
		if err := os.WriteFile(n.config, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		return n
	}
	a, b := spec("a"), spec("b")
	pa := a.start()
	b.start()
	ctx := context.Background()
	cb := client.New("http://" + b.addr)

	var took, afterDue []time.Duration
	for run := range runs {
		split(t, cb)
		ca := client.New("http://" + a.addr)
		recipient := "run-" + strconv.Itoa(run)
		due := time.Now().Add(lead)
		var ws []api.Watch
		for range timers {
			w, err := ca.CreateWatch(ctx, api.WatchRequest{Kind: "timer", Params: json.RawMessage(`{"at":"` + due.UTC().Format(time.RFC3339Nano) + `"}`),
				Recipient: api.RecipientRef{ID: recipient}})
			if err != nil {
				t.Fatal(err)
			}
			ws = append(ws, w)
		}
		owned := ownedBy(t, cb, "a", ws)
		if len(owned) == 0 {
			t.Fatalf("run %d: none of %d timers landed in a's partitions", run, timers)
		}
		killed := time.Now()
		pa.kill()
		if !killed.Before(due) {
			t.Fatalf("run %d: registering took past the timers' due time; raise lead", run)
		}
		first := firstFire(t, cb, recipient, owned, killed.Add(within+ttl))
		took = append(took, first.Sub(killed))
		afterDue = append(afterDue, first.Sub(due))
		t.Logf("run %d: %d of a's timers; a killed %s before they were due; b fired the first of them %s after the kill",
			run, len(owned), due.Sub(killed).Round(time.Millisecond), first.Sub(killed).Round(time.Millisecond))
		pa = a.start()
	}
	t.Logf("SIGKILL to the first taken-over fire, %d runs, lease TTL %s, %s JetStream server(s): min %s, median %s, max %s (after the timers' due time: median %s)",
		runs, ttl, replicas, slices.Min(took).Round(time.Millisecond), median(took).Round(time.Millisecond),
		slices.Max(took).Round(time.Millisecond), median(afterDue).Round(time.Millisecond))
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// split waits until both nodes hold partitions and none is vacant, as
// the node c talks to sees it.
func split(t *testing.T, c *client.Client) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		cl, err := c.Cluster(context.Background())
		if err == nil {
			owners := map[string]int{}
			vacant := 0
			for _, p := range cl.Partitions {
				owners[p.Owner]++
				if p.Owner == "" {
					vacant++
				}
			}
			if owners["a"] > 0 && owners["b"] > 0 && vacant == 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the partitions did not split between a and b within %s: %v", within, err)
		}
		time.Sleep(100 * time.Millisecond) // the cluster's view gives no event to wait on
	}
}

// ownedBy is the watches of ws in partitions node holds, as c sees it.
func ownedBy(t *testing.T, c *client.Client, node string, ws []api.Watch) map[string]bool {
	t.Helper()
	cl, err := c.Cluster(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for _, p := range cl.Partitions {
		if p.Owner == node {
			held[p.ID] = true
		}
	}
	out := map[string]bool{}
	for _, w := range ws {
		id, err := store.ParseID(w.ID)
		if err != nil {
			t.Fatal(err)
		}
		if held["p."+strconv.Itoa(id.Partition(len(cl.Partitions)))] {
			out[w.ID] = true
		}
	}
	return out
}

// firstFire long-polls recipient's mailbox through c until a message of
// one of the watches in owned arrives, and returns its time (the firing
// node's clock: this machine's).
func firstFire(t *testing.T, c *client.Client, recipient string, owned map[string]bool, deadline time.Time) time.Time {
	t.Helper()
	var after uint64
	for time.Now().Before(deadline) {
		mb, err := c.ReadMailbox(context.Background(), recipient, after, 5*time.Second, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mb.Messages {
			if owned[m.WatchID] {
				if m.Type != "fired" {
					t.Fatalf("a's watch %s: %s, want fired", m.WatchID, m.Type)
				}
				return m.At
			}
		}
		after = mb.Next
	}
	t.Fatalf("no watch of a's fired through b by %s", deadline.Format(time.RFC3339))
	return time.Time{}
}

// nodeSpec is how every start of one node is made.
type nodeSpec struct {
	t                             *testing.T
	bin, name, addr, data, config string
	logs                          string
	starts                        int
}

// proc is one vigil serve process.
type proc struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// kill sends SIGKILL and waits for the process to be gone; safe to call
// more than once.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// start runs the node and returns once GET /healthz answers.
func (n *nodeSpec) start() *proc {
	t := n.t
	t.Helper()
	n.starts++
	logPath := filepath.Join(n.logs, fmt.Sprintf("%s-%02d.log", n.name, n.starts))
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(n.bin, "serve", "--listen", n.addr, "--data", n.data, "--config", n.config,
		"--plugin-cache", wasmbuild.CacheDir())
	cmd.Stdout, cmd.Stderr = f, f
	p := &proc{cmd: cmd, exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", n.name, err)
	}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	t.Cleanup(p.kill)
	if _, err := servetest.WaitHealthy("http://"+n.addr, p.exited, servetest.ReadyBound); err != nil {
		log, _ := os.ReadFile(logPath)
		if errors.Is(err, servetest.ErrExited) {
			t.Fatalf("%s exited: %s", n.name, log)
		}
		t.Fatalf("%s: %v\n%s", n.name, err, log)
	}
	return p
}
