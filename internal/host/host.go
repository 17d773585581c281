package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/vigilhq/vigil/internal/authz"
	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/internal/core"
	"github.com/vigilhq/vigil/internal/fetch"
	"github.com/vigilhq/vigil/internal/heartbeat"
	"github.com/vigilhq/vigil/internal/hooks"
	"github.com/vigilhq/vigil/internal/httpapi"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/lifecycle"
	"github.com/vigilhq/vigil/internal/metrics"
	"github.com/vigilhq/vigil/internal/netguard"
	"github.com/vigilhq/vigil/internal/observe"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/internal/recipients"
	"github.com/vigilhq/vigil/internal/runner"
	"github.com/vigilhq/vigil/internal/signal"
	"github.com/vigilhq/vigil/internal/upkeep"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

// Config is what serve decided. Zero fields take the components' defaults.
type Config struct {
	// Data holds the store (Data/store).
	Data string
	// OpenStore, when set, opens the storage backend instead of the
	// badger store in Data (core.Config.OpenStore); Data and Fsync are
	// then unused.
	OpenStore func(ctx context.Context) (*store.Store, error)
	// PluginCache is the plugin compilation cache's directory; PluginDir
	// the operator's plugin directory ("" for the bundled plugins only);
	// Bundled the bundled plugins.
	PluginCache string
	PluginDir   string
	Bundled     fs.FS
	// Fsync acknowledges a store write only once it is fsynced (group
	// commit): badger.Options.SyncWrites. serve turns it on by default.
	Fsync   bool
	Workers int
	// WebhookAllow are the ranges webhooks may reach although the guard
	// refuses them by default.
	WebhookAllow []netip.Prefix
	// Tokens are the bearer tokens and their principals' grants; none:
	// unauthenticated, one local principal (authz.Local).
	Tokens []authz.Token
	// Secrets are the resolved secrets plugins' fetches may use, by name.
	Secrets map[string]string
	Fetch   FetchConfig
	// ObserveRate and ObserveBurst bound recording per principal.
	ObserveRate  float64
	ObserveBurst int
	Scopes       map[string]observe.Scope
	Limits       recipients.Limits
	Logger       *slog.Logger

	// ObserveRunPerMinute bounds recording per run of a principal.
	ObserveRunPerMinute int

	// Hooks are the inbound hook sources (POST /api/v1/hooks/{source}),
	// their secrets resolved; none: every hook is refused.
	Hooks hooks.Config

	// Cluster, when set, makes the host a node of a JetStream cluster
	// (internal/core's Cluster): the store is on the servers, not in Data,
	// and Run joins the cluster; nil is one host on badger in Data.
	Cluster *core.Cluster
}

// FetchConfig tunes the fetch issuer.
type FetchConfig struct {
	MaxTimeout time.Duration
	// MaxFetchTime bounds a whole fetch (fetch.Config.MaxFetchTime).
	MaxFetchTime time.Duration
	MinInterval  time.Duration
	MaxBodyBytes int64
	UserAgent    string
}

// Host is a built host: its components, ready to Run.
type Host struct {
	Core     *core.Core
	Metrics  *metrics.Metrics
	Runtime  *plugin.Runtime
	Observer *observe.Observer
	Issuer   *fetch.Issuer
	Upkeep   *upkeep.Upkeep
	// Hooks takes inbound hooks and pokes the watches their events name.
	Hooks *hooks.Receiver
	App   *fiber.App
	// Auth holds the tokens and grants in force.
	Auth *authz.Guard
	// Pending is how many watches Prime armed.
	Pending int

	log         *slog.Logger
	node        *node
	clusterM    *metrics.Cluster // on a cluster node only
	base        context.Context
	stopStreams context.CancelFunc
}

// New builds the host and primes its schedule; ctx bounds the build (the
// outbox's workers stop when it ends, or at Close). On an error everything
// built so far is closed.
func New(ctx context.Context, cfg Config) (_ *Host, err error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Data == "" && cfg.OpenStore == nil {
		return nil, errors.New("host: the data directory must not be empty")
	}
	h := &Host{log: log, node: newNode(clock.Wall{}.Now())}
	policy, err := policyOf(cfg.Tokens)
	if err != nil {
		return nil, fmt.Errorf("tokens: %w", err)
	}
	h.Auth = authz.NewGuard(policy)
	if err := cfg.Hooks.Validate(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = h.Close()
		}
	}()
	guard := netguard.New(cfg.WebhookAllow)
	if h.Core, err = core.New(ctx, core.Config{
		OpenStore: cfg.OpenStore, StoreDir: filepath.Join(cfg.Data, "store"), Store: badger.Options{SyncWrites: cfg.Fsync, Logger: log},
		Logger: log, Workers: cfg.Workers, Guard: guard, Limits: cfg.Limits,
		Metrics: func(st *store.Store) core.Metrics { h.Metrics = metrics.New(st); return h.Metrics },
		Cluster: cfg.Cluster,
	}); err != nil {
		return nil, err
	}
	if h.Core.Clustered() {
		h.clusterM = h.Metrics.Cluster()
		h.node.lease = h.Core.Node
	}
	st := h.Core.Store
	// Retention while running: the upkeep hears of each retained record
	// the store commits; Run starts its loop beside the scheduler's.
	// On a cluster it takes the store with its feeds, and hears of every
	// node's (upkeep.Follower).
	var ust upkeep.Store = st
	if f, ok := st.Feeds(); ok {
		ust = f
	}
	if h.Upkeep, err = upkeep.New(upkeep.Config{Store: ust, Logger: log}); err != nil {
		return nil, err
	}
	st.OnRetained(h.Upkeep.Notify)
	if h.Issuer, err = newIssuer(cfg, st, h.Metrics, log); err != nil {
		return nil, fmt.Errorf("fetch: %w", err)
	}
	execer := newExecer(log, runner.WorkspaceFunc(func(ctx context.Context, id string) (string, error) {
		rec, err := st.GetRecipient(ctx, id)
		return rec.Workspace, err
	}))
	// One registry of kinds: the plugins register theirs as they load and
	// reload, the observer its built-in observe.thread.
	if h.Runtime, err = OpenRuntime(ctx, RuntimeConfig{
		Cache: cfg.PluginCache, Dir: cfg.PluginDir, Bundled: cfg.Bundled, Metrics: h.Metrics,
		Fetcher: h.Issuer, Execer: execer, SecretNames: slices.Sorted(maps.Keys(cfg.Secrets)),
		Kinds: h.Core.Registry, Logger: log,
	}); err != nil {
		return nil, err
	}
	if h.Observer, err = observe.New(observe.Options{
		Store: st, Clock: clock.Wall{}, Logger: log, Rate: cfg.ObserveRate, Burst: cfg.ObserveBurst, RunPerMinute: cfg.ObserveRunPerMinute,
		Principal: store.ValidRecipientID, Metrics: h.Metrics,
	}, observe.Config{Scopes: cfg.Scopes}); err != nil {
		return nil, fmt.Errorf("scopes: %w", err)
	}
	if err = h.Observer.Register(h.Core.Registry); err != nil {
		return nil, fmt.Errorf("registering observe.thread: %w", err)
	}
	h.Observer.SetWaker(h.Core.Scheduler)
	if h.Pending, err = h.Core.Prime(ctx); err != nil {
		return nil, err
	}
	// What the start held and let go (the rows Prime and the
	// reconciliation decoded, the plugins' loading) and the table pages
	// the store's open read are handed back before the host serves: the
	// resident size a start leaves is what the host works on, not what
	// it read on the way.
	debug.FreeOSMemory()
	h.Core.TrimMapped(0)
	h.base, h.stopStreams = context.WithCancel(context.Background())
	ov, cons, err := h.views()
	if err != nil {
		return nil, err
	}
	h.Hooks = hooks.NewReceiver(hooks.ReceiverConfig{
		Sources: hooks.NewSources(cfg.Hooks), Wake: h.Core.Registry, Poke: h.Core,
		Counter: h.Metrics, Logger: log,
	})
	h.Core.Scheduler.SetFallbacks(h.Hooks.Sources().Fallbacks())
	h.App = httpapi.New(httpapi.Deps{
		Scheduler: h.Core.Scheduler, Watches: st, Mailboxes: h.Core.Delivery, Recipients: h.Core.Recipients,
		Plugins: h.Runtime, Logger: log, Base: h.base, DeadLetters: h.Issuer, Observe: h.Observer, Refusals: h.Metrics,
		Overview: ov, Node: h.node, Kinds: h.Core.Registry, Seen: h.Core, Idem: st,
		Signals:    signal.NewService(st, h.Core.Scheduler),
		Heartbeats: heartbeat.NewService(st, h.Core.Scheduler, clock.Wall{}),
		Hooks:      h.Hooks,
	}, httpapi.Options{Auth: h.Auth, Metrics: h.Metrics.Handler(), Console: cons})
	return h, nil
}

// Run serves the API on ln and runs the core (the scheduler's loop, the
// outbox and, on a cluster, the node), the observe router and the upkeep
// (on a cluster, as the node's jobs, while it holds their leases) until
// ctx ends; then it stops the streams and long polls, lets requests in
// flight finish (10 s at most), and only then stops the rest, waiting for
// the probes in flight and the upkeep's batch. The error is the API's, if
// it stopped on its own, or the first a component returned.
func (h *Host) Run(ctx context.Context, ln net.Listener) error {
	h.node.setAddress(ln.Addr().String())
	// The hook worker runs on every node: it pokes the watches of the
	// partitions this node holds, and tells the other nodes to poke
	// theirs (core.PokeKeys).
	runs := []func(context.Context) error{h.Core.Run, h.Hooks.Run}
	if h.Core.Clustered() {
		// The observe router and the upkeep run once per cluster: on
		// this node only while it holds their leases.
		if err := h.Core.Join(ctx, core.Join{
			Addr: ln.Addr().String(), Metrics: h.clusterM,
			// Republished on each reload (SIGHUP, the API's): a node whose
			// set is not the cluster's takes no watches.
			PluginSet: func() ([]kind.Info, <-chan struct{}) { ch := h.Runtime.Changed(); return h.Runtime.Plugins(), ch },
			Jobs:      map[string]func(context.Context) error{JobObserveRouter: h.Observer.Run, JobUpkeep: h.Upkeep.Run},
			Appends:   map[string]func(){observe.Stream: h.Observer.Wake},
		}); err != nil {
			return fmt.Errorf("joining the cluster: %w", err)
		}
	} else {
		runs = append(runs, h.Observer.Run, h.Upkeep.Run)
	}
	served := make(chan error, 1)
	go func() { served <- h.App.Listener(httpapi.Listener(ln)) }()
	// The components stop after the API has finished its requests, so a
	// request in flight is answered by a host that still runs.
	ran := make(chan struct{})
	stop := lifecycle.Go(context.WithoutCancel(ctx), func(ctx context.Context) error {
		defer close(ran)
		return lifecycle.Group(ctx, runs...)
	})
	var err error
	select {
	case <-ctx.Done():
	case err = <-served:
		err = fmt.Errorf("the API stopped: %w", err)
	case <-ran: // a component failed: stop the rest
	}
	h.log.Info("vigil stopping: finishing requests and probes in flight")
	h.stopStreams()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	if serr := h.App.ShutdownWithContext(shutdownCtx); serr != nil {
		h.log.Error("stopping the API", "err", serr)
	}
	cancel()
	if rerr := stop(); err == nil {
		err = rerr
	}
	return err
}

// The cluster-wide jobs' names (cluster.JobLease).
const (
	JobObserveRouter = "observe-router"
	JobUpkeep        = "upkeep"
)

// Reloaded is the part of the configuration a reload puts in force.
type Reloaded struct {
	Scopes map[string]observe.Scope
	Tokens []authz.Token
	// Hooks are the hook sources, their secrets resolved.
	Hooks hooks.Config
}

// Reload puts next's scopes, tokens, grants and hook sources in force
// (nil keeps the
// configuration; a part that is invalid keeps its old self, logged) and
// reloads the plugins: what SIGHUP does. A principal whose token is gone
// or whose grant changed is revoked at once: its open streams and long
// polls end.
func (h *Host) Reload(ctx context.Context, next *Reloaded) {
	if next != nil {
		if err := h.Observer.SetConfig(observe.Config{Scopes: next.Scopes}); err != nil {
			h.log.Error("config reload failed; keeping the scopes in force", "err", err)
		} else {
			h.log.Info("scopes reloaded", "scopes", len(next.Scopes))
		}
		h.reloadTokens(next.Tokens)
		if err := next.Hooks.Validate(); err != nil {
			h.log.Error("config reload failed; keeping the hook sources in force", "err", err)
		} else {
			h.Hooks.Sources().Set(next.Hooks)
			h.Core.Scheduler.SetFallbacks(h.Hooks.Sources().Fallbacks())
			h.log.Info("hook sources reloaded", "sources", len(next.Hooks))
		}
	}
	// The runtime logs what loaded and what did not, or why it kept the
	// plugins before, as it does for a reload through the API.
	_, _ = h.Runtime.Reload(ctx)
}

func (h *Host) reloadTokens(tokens []authz.Token) {
	policy, err := policyOf(tokens)
	if err != nil {
		h.log.Error("config reload failed; keeping the tokens in force", "err", err)
		return
	}
	revoked, err := h.Auth.Swap(policy)
	if err != nil {
		h.log.Error("config reload failed; keeping the tokens in force", "err", err)
		return
	}
	h.log.Info("tokens reloaded", "principals", policy.Principals(), "revoked", revoked)
}

// policyOf compiles tokens, or is the local policy when there are none.
func policyOf(tokens []authz.Token) (*authz.Policy, error) {
	if len(tokens) == 0 {
		return authz.Local(), nil
	}
	return authz.Compile(tokens)
}

// Close releases what New built, in the reverse order: the plugin runtime,
// the issuer's idle connections, then the core (the outbox, the store).
// Stop Run first.
func (h *Host) Close() error {
	if h.stopStreams != nil {
		h.stopStreams()
	}
	if h.Runtime != nil {
		_ = h.Runtime.Close(context.Background())
	}
	if h.Issuer != nil {
		h.Issuer.CloseIdleConnections()
	}
	if h.Core != nil {
		return h.Core.Close()
	}
	return nil
}

// RuntimeConfig is what OpenRuntime needs.
type RuntimeConfig struct {
	Cache, Dir  string
	Extra       string // plugin.Config.Extra
	Bundled     fs.FS
	Metrics     plugin.Metrics
	Fetcher     plugin.Fetcher
	Execer      plugin.Execer
	SecretNames []string
	Kinds       plugin.Registrar
	Logger      *slog.Logger
}

// OpenRuntime loads the bundled plugins and the plugin directory, with the
// compilation cache in rc.Cache (created if missing). `vigil plugins`
// loads them the same way.
func OpenRuntime(ctx context.Context, rc RuntimeConfig) (*plugin.Runtime, error) {
	if rc.Cache == "" {
		return nil, errors.New("the plugin compilation cache directory must not be empty")
	}
	if err := os.MkdirAll(rc.Cache, 0o700); err != nil {
		return nil, fmt.Errorf("the plugin compilation cache: %w", err)
	}
	cfg := plugin.Config{
		Bundled: rc.Bundled, Dir: rc.Dir, Extra: rc.Extra, CacheDir: rc.Cache, Fetcher: rc.Fetcher, Execer: rc.Execer,
		ResolvePrograms: runner.ResolvePrograms, SecretNames: rc.SecretNames, Logger: rc.Logger,
	}
	// Interfaces holding a typed nil are not nil: set only what is set.
	if rc.Metrics != nil {
		cfg.Metrics = rc.Metrics
	}
	if rc.Kinds != nil {
		cfg.Kinds = rc.Kinds
	}
	rt, err := plugin.New(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("loading plugins: %w", err)
	}
	return rt, nil
}
