package apitest

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/internal/core"
	"github.com/vigilhq/vigil/internal/delivery"
	"github.com/vigilhq/vigil/internal/hosttest"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/lifecycle"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/internal/recipients"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

// Config shapes a Stack. Plugins and Clock are required.
type Config struct {
	Plugins core.Kinds
	Clock   clock.Clock
	// IDs is the randomness of watch ids (default: a fixed seed).
	IDs io.Reader
	// Deliver wraps the delivery the scheduler settles through (default:
	// the delivery itself); it is given the stack's store.
	Deliver func(*delivery.Delivery, *store.Store) scheduler.Deliverer
	// OpenStore opens the stack's store (default: badger in a temporary
	// directory, fsync off); the core closes it.
	OpenStore func(context.Context) (*store.Store, error)
}

// Stack is the host behind the API: the core as serve builds it
// (internal/core), over fake kinds and a fake clock.
type Stack struct {
	Store      *store.Store
	Delivery   *delivery.Delivery
	Outbox     *delivery.Outbox
	Scheduler  *scheduler.Scheduler
	Recipients *recipients.Service
}

// NewStack builds the stack; it closes when the test ends.
func NewStack(tb testing.TB, cfg Config) *Stack {
	tb.Helper()
	ids := cfg.IDs
	if ids == nil {
		ids = hosttest.IDs(7)
	}
	// The stack's backend is badger unless the test opens another,
	// opened here through the core's OpenStore so the tests can reach it
	// as itself; the core closes it.
	var st *store.Store
	open := func(ctx context.Context) (*store.Store, error) {
		var err error
		if cfg.OpenStore != nil {
			st, err = cfg.OpenStore(ctx)
			return st, err
		}
		// fsync off, for speed: the store's tests cover the synced path.
		if st, err = badger.OpenStore(tb.TempDir(), badger.Options{SyncWrites: false}); err != nil {
			return nil, err
		}
		return st, nil
	}
	var deliver func(*delivery.Delivery, *store.Store) scheduler.Deliverer
	if cfg.Deliver != nil {
		deliver = func(d *delivery.Delivery, _ *store.Store) scheduler.Deliverer { return cfg.Deliver(d, st) }
	}
	c, err := core.New(context.Background(), core.Config{
		OpenStore: open, Kinds: cfg.Plugins, Clock: cfg.Clock, IDs: ids, Deliver: deliver,
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	// The outbox runs, as serve's does; the scheduler's loop does not:
	// the tests drive Tick. Stopped before the core closes.
	stop := lifecycle.Go(context.Background(), c.Outbox.Run)
	tb.Cleanup(func() {
		if err := stop(); err != nil {
			tb.Error(err)
		}
	})
	return &Stack{Store: st, Delivery: c.Delivery, Outbox: c.Outbox, Scheduler: c.Scheduler, Recipients: c.Recipients}
}

// Serve runs app on a 127.0.0.1 listener until the test ends and returns
// its base URL ("http://127.0.0.1:PORT").
func Serve(tb testing.TB, app *fiber.App) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	tb.Cleanup(func() { _ = app.Shutdown() })
	return "http://" + ln.Addr().String()
}

// FakePlugins is hosttest.FakeKinds as the plugin runtime the API reads
// (httpapi.Plugins) as well as the kinds the scheduler serves: its kinds
// loaded, no problems, and a reload that loads them again.
type FakePlugins struct{ *hosttest.FakeKinds }

// NewFakePlugins serves infos.
func NewFakePlugins(infos ...kind.Info) FakePlugins {
	return FakePlugins{hosttest.NewFakeKinds(infos...)}
}

// Plugins are the kinds loaded.
func (p FakePlugins) Plugins() []kind.Info { return p.Infos() }

// Problems: none.
func (FakePlugins) Problems() []*plugin.LoadError { return nil }

// Reload loads the same kinds again.
func (p FakePlugins) Reload(context.Context) (plugin.Report, error) {
	return plugin.Report{Loaded: p.Infos()}, nil
}
