package natsstore

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// runServer starts one embedded nats-server with JetStream on a random
// 127.0.0.1 port, its store in a temporary directory, and shuts it down
// when the test ends.
func runServer(tb testing.TB) *server.Server {
	tb.Helper()
	opts := &server.Options{
		Host:      "127.0.0.1",
		Port:      server.RANDOM_PORT,
		JetStream: true,
		StoreDir:  tb.TempDir(),
		NoLog:     true,
		NoSigs:    true,
	}
	s, err := server.NewServer(opts)
	if err != nil {
		tb.Fatal(err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		tb.Fatal("nats-server did not start")
	}
	tb.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// runCluster starts n embedded servers routed to each other on
// 127.0.0.1, with JetStream clustered. A JetStream cluster needs its
// routes configured before it starts, so the route ports are picked
// first (a free port each, released just before the servers bind them).
func runCluster(tb testing.TB, n int) []*server.Server {
	tb.Helper()
	var routes []*url.URL
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		ports = append(ports, port)
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", port)})
	}
	var servers []*server.Server
	for i := range n {
		opts := &server.Options{
			ServerName: fmt.Sprintf("n%d", i),
			Host:       "127.0.0.1",
			Port:       server.RANDOM_PORT,
			JetStream:  true,
			StoreDir:   tb.TempDir(),
			NoLog:      true,
			NoSigs:     true,
			Cluster:    server.ClusterOpts{Name: "vigil-test", Host: "127.0.0.1", Port: ports[i]},
			Routes:     routes,
		}
		s, err := server.NewServer(opts)
		if err != nil {
			tb.Fatal(err)
		}
		s.Start()
		tb.Cleanup(func() {
			s.Shutdown()
			s.WaitForShutdown()
		})
		servers = append(servers, s)
	}
	for i, s := range servers {
		if !s.ReadyForConnections(10 * time.Second) {
			tb.Fatalf("server %d did not start", i)
		}
	}
	return servers
}

// openStore opens a Store on the servers' client URLs, closed when the
// test ends.
func openStore(tb testing.TB, cfg Config, servers ...*server.Server) *Store {
	tb.Helper()
	for _, s := range servers {
		cfg.URLs = append(cfg.URLs, s.ClientURL())
	}
	st, err := Open(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	return st
}
