package natsstore

import (
	"context"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/vigilhq/vigil/internal/natstest"
	"github.com/vigilhq/vigil/store"
)

// runServer and runCluster are the embedded servers of internal/natstest:
// one with JetStream, or n routed into a JetStream cluster with a meta
// leader.
func runServer(tb testing.TB) *server.Server { return natstest.Start(tb) }

func runCluster(tb testing.TB, n int) []*server.Server { return natstest.Cluster(tb, n) }

// adapter names this package's Store where a test embeds it beside the
// store over it.
type adapter = Store

// testStore is the store over an adapter (the domain's calls), and the
// adapter (its own: fences, failpoints, the bucket), for the tests here.
type testStore struct {
	*store.Store
	*adapter
}

// Close closes the store, and so its adapter.
func (s testStore) Close() error { return s.Store.Close() }

// feeds is the store with the adapter's feeds.
func (s testStore) feeds() store.Feeds {
	f, _ := s.Store.Feeds()
	return f
}

// openStore opens the store over an adapter on the servers' client URLs,
// closed when the test ends.
func openStore(tb testing.TB, cfg Config, servers ...*server.Server) testStore {
	tb.Helper()
	for _, s := range servers {
		cfg.URLs = append(cfg.URLs, s.ClientURL())
	}
	a, err := Open(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	st, err := store.New(context.Background(), a)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	return testStore{st, a}
}

// openDomain is Open and the store over the adapter.
func openDomain(ctx context.Context, cfg Config) (testStore, error) {
	a, err := Open(ctx, cfg)
	if err != nil {
		return testStore{}, err
	}
	st, err := store.New(ctx, a)
	if err != nil {
		_ = a.Close()
		return testStore{}, err
	}
	return testStore{st, a}, nil
}
