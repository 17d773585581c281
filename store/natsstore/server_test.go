package natsstore

import (
	"context"
	"fmt"
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
// 127.0.0.1, with JetStream clustered, and waits until they have a
// JetStream meta leader.
func runCluster(tb testing.TB, n int) []*server.Server {
	tb.Helper()
	var servers []*server.Server
	var seed *url.URL
	for i := range n {
		opts := &server.Options{
			ServerName: fmt.Sprintf("n%d", i),
			Host:       "127.0.0.1",
			Port:       server.RANDOM_PORT,
			JetStream:  true,
			StoreDir:   tb.TempDir(),
			NoLog:      true,
			NoSigs:     true,
			Cluster: server.ClusterOpts{
				Name: "vigil-test",
				Host: "127.0.0.1",
				Port: server.RANDOM_PORT,
			},
		}
		if seed != nil {
			opts.Routes = []*url.URL{seed}
		}
		s, err := server.NewServer(opts)
		if err != nil {
			tb.Fatal(err)
		}
		s.Start()
		if !s.ReadyForConnections(10 * time.Second) {
			tb.Fatalf("server %d did not start", i)
		}
		tb.Cleanup(func() {
			s.Shutdown()
			s.WaitForShutdown()
		})
		if seed == nil {
			seed = &url.URL{Scheme: "nats", Host: s.ClusterAddr().String()}
		}
		servers = append(servers, s)
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
