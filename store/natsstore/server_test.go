package natsstore

import (
	"context"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/vigilhq/vigil/internal/natstest"
)

// runServer and runCluster are the embedded servers of internal/natstest:
// one with JetStream, or n routed into a JetStream cluster with a meta
// leader.
func runServer(tb testing.TB) *server.Server { return natstest.Start(tb) }

func runCluster(tb testing.TB, n int) []*server.Server { return natstest.Cluster(tb, n) }

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
