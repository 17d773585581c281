package natstest

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ready is how long a server may take to accept connections; a loaded
// machine starting three with JetStream needs seconds, not milliseconds.
const ready = 30 * time.Second

// Start runs one server with JetStream and stops it when the test ends.
func Start(t testing.TB) *server.Server {
	t.Helper()
	s := run(t, &server.Options{ServerName: "n1"})
	return s
}

// StartWith runs one server as Start does, with o's settings beside
// (such as o.JetStreamLimits), and stops it when the test ends.
func StartWith(t testing.TB, o server.Options) *server.Server {
	t.Helper()
	if o.ServerName == "" {
		o.ServerName = "n1"
	}
	return run(t, &o)
}

func run(t testing.TB, o *server.Options) *server.Server {
	t.Helper()
	o.Host = "127.0.0.1"
	if o.Port == 0 {
		o.Port = -1
	}
	o.JetStream = true
	if o.StoreDir == "" {
		o.StoreDir = storeDir(t)
	}
	o.NoLog = os.Getenv("NATSTEST_LOG") == ""
	o.NoSigs = true
	s, err := server.NewServer(o)
	if err != nil {
		t.Fatalf("natstest: %v", err)
	}
	if !o.NoLog {
		s.ConfigureLogger()
	}
	s.Start()
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	if !s.ReadyForConnections(ready) {
		t.Fatalf("natstest: server %s not ready in %s", o.ServerName, ready)
	}
	return s
}

// storeDir is a directory for a server's JetStream store, removed when
// the test ends. Not t.TempDir: a stopped server's store can still be
// settling its atomic batches' files for a moment after WaitForShutdown,
// and t.TempDir fails the test when its removal meets a directory that
// filled again; this removal retries for a while and then only logs.
func storeDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "natstest-")
	if err != nil {
		t.Fatalf("natstest: %v", err)
	}
	t.Cleanup(func() {
		var err error
		for range 50 {
			if err = os.RemoveAll(dir); err == nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("natstest: leaving %s: %v", dir, err)
	})
	return dir
}

// Cluster runs n servers routed to one another, with JetStream, and waits
// until their meta group has a leader.
func Cluster(t testing.TB, n int) []*server.Server {
	t.Helper()
	return Form(t, n).StartAll()
}

// StartAll runs every planned server and waits until their meta group has
// a leader with every server a peer.
func (f *Forming) StartAll() []*server.Server {
	f.t.Helper()
	out := make([]*server.Server, len(f.opts))
	for i := range f.opts {
		out[i] = f.Start(i)
	}
	WaitFor(f.t, ready, "a JetStream meta leader", func() bool {
		for _, s := range out {
			if s.JetStreamIsLeader() {
				return len(s.JetStreamClusterPeers()) == len(out)
			}
		}
		return false
	})
	return out
}

// Forming is a cluster of servers whose ports and routes are fixed
// before any of them runs, each started when the test says: a cluster
// still forming, or one whose servers came up one at a time. JetStream's
// clustering wants every route configured at start, so the ports are
// chosen first.
type Forming struct {
	t    testing.TB
	opts []*server.Options
}

// Form plans n servers routed to one another, with JetStream, each with
// its ports and its store directory fixed; none runs until Start.
func Form(t testing.TB, n int) *Forming {
	t.Helper()
	clients, cluster := make([]int, n), make([]int, n)
	var routes []*url.URL
	for i := range n {
		clients[i], cluster[i] = freePort(t), freePort(t)
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", cluster[i])})
	}
	f := &Forming{t: t}
	for i := range n {
		o := &server.Options{ServerName: fmt.Sprintf("n%d", i+1), Routes: routes, Port: clients[i], StoreDir: storeDir(t)}
		o.Cluster.Name = "vigil-test"
		o.Cluster.Host = "127.0.0.1"
		o.Cluster.Port = cluster[i]
		f.opts = append(f.opts, o)
	}
	return f
}

// Start runs server i (from 0) and waits until it accepts connections;
// it stops when the test ends. Server i started again after a shutdown
// is the same server restarted: its ports, its routes and its store.
func (f *Forming) Start(i int) *server.Server {
	f.t.Helper()
	o := *f.opts[i]
	return run(f.t, &o)
}

// URLs is every planned server's client URL, started or not,
// comma-separated as nats.Connect takes them.
func (f *Forming) URLs() string {
	var s string
	for i, o := range f.opts {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf("nats://127.0.0.1:%d", o.Port)
	}
	return s
}

// freePort is a loopback port nothing listens on a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("natstest: pick a port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// URLs is the servers' client URLs, comma-separated as nats.Connect takes
// them.
func URLs(servers ...*server.Server) string {
	var s string
	for i, srv := range servers {
		if i > 0 {
			s += ","
		}
		s += srv.ClientURL()
	}
	return s
}

// Connect opens a client connection and its JetStream context to the
// servers, closed when the test ends. It reconnects forever, so a test
// that stops one server of a cluster keeps its connection.
func Connect(t testing.TB, servers ...*server.Server) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(URLs(servers...), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatalf("natstest: connect: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("natstest: jetstream: %v", err)
	}
	return nc, js
}

// WaitFor polls cond until it holds or d has passed, for conditions on
// servers and networks that give no event to wait on; the test fails
// naming what it waited for.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("natstest: no %s within %s", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
