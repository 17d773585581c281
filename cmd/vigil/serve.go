package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigilhq/vigil/host/delivery"
	"github.com/vigilhq/vigil/host/fetch"
	"github.com/vigilhq/vigil/host/httpapi"
	"github.com/vigilhq/vigil/host/kind"
	"github.com/vigilhq/vigil/host/metrics"
	"github.com/vigilhq/vigil/host/netguard"
	"github.com/vigilhq/vigil/host/observe"
	"github.com/vigilhq/vigil/host/plugin"
	"github.com/vigilhq/vigil/host/recipients"
	"github.com/vigilhq/vigil/host/runner"
	"github.com/vigilhq/vigil/host/scheduler"
	"github.com/vigilhq/vigil/host/upkeep"
	"github.com/vigilhq/vigil/plugins"
	"github.com/vigilhq/vigil/store"
)

func newServe(stderr io.Writer) *cobra.Command {
	d := defaultSettings()
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the host",
		Long: `Run the vigil host on the embedded store and the bundled plugins.

Each setting comes from, in order of precedence: a flag, the environment
(VIGIL_LISTEN, VIGIL_DATA, VIGIL_PLUGIN_CACHE, VIGIL_PLUGINS, VIGIL_WORKERS,
VIGIL_FSYNC, VIGIL_WEBHOOK_ALLOW as a comma-separated list,
VIGIL_RECIPIENT_MAX_REFS, VIGIL_RECIPIENT_MAX_PENDING, VIGIL_CONFIG), the
config file (YAML: listen, data, plugin_cache, plugins, workers, fsync,
webhook_allow, recipient_max_refs, recipient_max_pending, tokens; and, in
the file only, fetch, secrets, observe and scopes: see docs/fetch.md and
docs/observe.md), the default. An invalid value refuses to start,
naming the key and where it came from. Bearer tokens are set in the config
file only; with none, the API is unauthenticated and binds to loopback
only.

A recipient's webhook whose URL names an address the guard refuses
(loopback, private, link-local, the metadata address, in any spelling, or
localhost) is refused when it is set, unless --webhook-allow lets it
through. A recipient holds at most --recipient-max-refs refs and
--recipient-max-pending pending watches; past them, a PUT or a
registration is a 422 naming the setting.

Plugins load from the bundled set and, with --plugins, from a directory of
.wasm files and its registry.json. SIGHUP reloads the plugins and the
config file's observe scopes; SIGINT and SIGTERM stop the host after
in-flight requests and probes finish.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := loadSettings(cmd.Flags(), os.Getenv)
			if err != nil {
				return err
			}
			return serve(cmd.Context(), s, stderr, func() (settings, error) { return loadSettings(cmd.Flags(), os.Getenv) })
		},
	}
	cmd.Flags().String("config", "", "YAML config file (also VIGIL_CONFIG)")
	cmd.Flags().String("listen", d.Listen, "address the API listens on")
	cmd.Flags().String("data", d.Data, "data directory (store and plugin compilation cache)")
	cmd.Flags().String("plugin-cache", "", "plugin compilation cache directory, shareable between hosts (default DATA/plugin-cache)")
	cmd.Flags().String("plugins", "", "plugin directory: *.wasm and an optional registry.json")
	cmd.Flags().Bool("fsync", false, "fsync every store commit (survives power loss; slower registration)")
	cmd.Flags().Int("workers", d.Workers, "probe workers: a small fixed pool, never scaled with the watches; no kind or recipient holds more than workers-1 (at most 16)")
	cmd.Flags().StringArray("webhook-allow", nil, "a CIDR webhooks may reach although it is loopback or private (repeatable)")
	cmd.Flags().Int("recipient-max-refs", recipients.DefaultMaxRefs, "refs one recipient may hold")
	cmd.Flags().Int("recipient-max-pending", recipients.DefaultMaxPending, "pending watches one recipient may hold; a registration past it is refused")
	return cmd
}

// serve runs the host. reload, when not nil, re-reads the settings on
// SIGHUP; only the observe scopes take effect without a restart.
func serve(ctx context.Context, f settings, stderr io.Writer, reload func() (settings, error)) error {
	log := newLogger(stderr)
	allow := f.allowPrefixes()
	st, err := store.Open(filepath.Join(f.Data, "store"), store.Options{SyncWrites: f.Fsync, Logger: log})
	if err != nil {
		return fmt.Errorf("opening the store: %w", err)
	}
	defer func() {
		if err := st.Close(); err != nil {
			log.Error("closing the store", "err", err)
		}
	}()
	// Retention while running: the upkeep hears of each retained record
	// the store commits. Its loop starts beside the scheduler's.
	keep, err := upkeep.New(upkeep.Config{Store: st, Logger: log})
	if err != nil {
		return err
	}
	st.OnRetained(keep.Notify)
	m := metrics.New(st)
	secrets, err := f.resolveSecrets(os.Getenv)
	if err != nil {
		return err
	}
	issuer, err := fetch.New(fetch.Config{
		MaxTimeout: f.Fetch.MaxTimeout, MinInterval: f.Fetch.MinInterval, MaxBody: f.Fetch.MaxBodyBytes,
		UserAgent: f.Fetch.UserAgent, Secrets: secrets, Log: st, Logger: log,
	})
	if err != nil {
		return fmt.Errorf("fetch: %w", err)
	}
	defer issuer.CloseIdleConnections()
	execer := runner.PluginExecer{
		Runner: runner.New(runner.Config{Logger: log}),
		Workspaces: runner.WorkspaceFunc(func(ctx context.Context, id string) (string, error) {
			rec, err := st.GetRecipient(ctx, id)
			return rec.Workspace, err
		}),
	}
	// One registry of kinds: the plugins register theirs as they load and
	// reload, the observer its built-in observe.thread.
	kinds := kind.NewRegistry()
	rt, err := openRuntime(ctx, f.pluginCache(), f.Plugins, m, hostCalls{issuer, execer}, slices.Sorted(maps.Keys(secrets)), kinds, log)
	if err != nil {
		return err
	}
	defer func() { _ = rt.Close(context.Background()) }()
	ob, err := observe.New(observe.Options{
		Store: st, Clock: wallClock{}, Logger: log, Rate: f.Observe.Rate, Burst: f.Observe.Burst, Principal: scheduler.ValidRecipientID, Metrics: m,
	}, observe.Config{Scopes: f.Scopes})
	if err != nil {
		return fmt.Errorf("scopes: %w", err)
	}
	if err := ob.Register(kinds); err != nil {
		return fmt.Errorf("registering observe.thread: %w", err)
	}

	outbox, err := delivery.NewOutbox(delivery.OutboxConfig{Store: st, Guard: netguard.New(allow), Logger: log, Metrics: m})
	if err != nil {
		return err
	}
	if err := outbox.Start(ctx); err != nil {
		return err
	}
	defer outbox.Stop() // after the scheduler's loop has stopped, before the store closes
	deliver, err := delivery.New(delivery.Config{Store: st, Outbox: outbox, Logger: log, Metrics: m})
	if err != nil {
		return err
	}
	sched, err := scheduler.New(scheduler.Config{
		Store: st, Plugins: kinds, Deliver: deliver, Recipients: st, Logger: log, Workers: f.Workers, Metrics: m,
	})
	if err != nil {
		return err
	}
	pending, err := sched.Prime(ctx)
	if err != nil {
		return err
	}
	ob.SetWaker(sched)
	recips := recipients.New(st, sched, kinds, wallClock{}, log).
		WithLimits(recipients.Limits{MaxRefs: f.MaxRefs, MaxPending: f.MaxPending}).
		WithDestinations(netguard.New(allow)) // the rules delivery dials through: a guard is immutable, so equal allow lists are the same guard
	if err := recips.ReconcileAll(ctx); err != nil {
		return fmt.Errorf("reconciling recipients: %w", err)
	}

	ln, err := net.Listen("tcp", f.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", f.Listen, err)
	}
	base, stopStreams := context.WithCancel(context.Background())
	defer stopStreams()
	app := httpapi.New(httpapi.Deps{
		Scheduler: sched, Watches: st, Mailboxes: deliver, Recipients: recips, Plugins: rt, Logger: log, Base: base,
		DeadLetters: issuer, Observe: ob,
	}, httpapi.Options{Tokens: f.tokenMap(), Metrics: m.Handler()})
	served := make(chan error, 1)
	go func() { served <- app.Listener(httpapi.Listener(ln)) }()

	log.Info("vigil serving", "listen", ln.Addr().String(), "data", f.Data, "plugins", pluginDirLabel(f.Plugins), "kinds", len(rt.Plugins()), "pending", pending, "fsync", f.Fsync, "auth", authLabel(f.Tokens))
	// The runtime logged each plugin it loaded, and each it did not.
	loop := sched.Start(ctx)
	keepCtx, stopKeep := context.WithCancel(ctx)
	kept := keep.Start(keepCtx)
	defer func() { stopKeep(); <-kept }() // before the store closes
	router := ob.Start(ctx)

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			log.Info("vigil stopping: finishing requests and probes in flight")
			stopStreams()
			shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := app.ShutdownWithContext(shutdownCtx); err != nil {
				log.Error("stopping the API", "err", err)
			}
			cancel()
			<-loop
			<-router
			return nil
		case err := <-served:
			return fmt.Errorf("the API stopped: %w", err)
		case <-hup:
			if reload != nil {
				if next, err := reload(); err != nil {
					log.Error("config reload failed; keeping the scopes in force", "err", err)
				} else if err := ob.SetConfig(observe.Config{Scopes: next.Scopes}); err != nil {
					log.Error("config reload failed; keeping the scopes in force", "err", err)
				} else {
					log.Info("scopes reloaded", "scopes", len(next.Scopes))
				}
			}
			rep, err := rt.Reload(ctx)
			if err != nil {
				log.Error("plugin reload failed; keeping the plugins loaded before", "err", err)
				continue
			}
			log.Info("plugins reloaded", "kinds", len(rep.Loaded), "problems", len(rep.Problems))
		}
	}
}

// loopbackOnly refuses a listen address that is not loopback: without
// bearer tokens the API has no authentication, so it must not be reachable
// from another machine.
func loopbackOnly(listen string) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("%q: %w", listen, err)
	}
	if host == "localhost" {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return fmt.Errorf("%s: no bearer tokens are configured (config file: tokens), so the API binds to loopback only (127.0.0.1 or ::1)", listen)
	}
	return nil
}

func authLabel(tokens []token) string {
	if len(tokens) == 0 {
		return "none (loopback only)"
	}
	return fmt.Sprintf("bearer tokens for %d principal(s)", len(tokens))
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

// hostCalls are the host functions' sides: vigil_fetch and vigil_exec.
type hostCalls struct {
	fetch plugin.Fetcher
	exec  plugin.Execer
}

// openRuntime loads the bundled plugins and dir, with the compilation cache
// in cache (created if missing).
func openRuntime(ctx context.Context, cache, dir string, m plugin.Metrics, hc hostCalls, secretNames []string, kinds plugin.Registrar, log *slog.Logger) (*plugin.Runtime, error) {
	if cache == "" {
		return nil, errors.New("the plugin compilation cache directory must not be empty")
	}
	if err := os.MkdirAll(cache, 0o700); err != nil {
		return nil, fmt.Errorf("the plugin compilation cache: %w", err)
	}
	rt, err := plugin.New(ctx, plugin.Config{
		Bundled:         plugins.Bundled(),
		Dir:             dir,
		CacheDir:        cache,
		Metrics:         m,
		Fetcher:         hc.fetch,
		Execer:          hc.exec,
		ResolvePrograms: runner.ResolvePrograms,
		SecretNames:     secretNames,
		Kinds:           kinds,
		Logger:          log,
	})
	if err != nil {
		return nil, fmt.Errorf("loading plugins: %w", err)
	}
	return rt, nil
}

func pluginDirLabel(dir string) string {
	if dir == "" {
		return "bundled only"
	}
	return dir
}
