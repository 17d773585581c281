package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/vigilhq/vigil/internal/hooks"
	"github.com/vigilhq/vigil/internal/host"
	"github.com/vigilhq/vigil/internal/recipients"
	"github.com/vigilhq/vigil/plugins"
)

func newServe(stderr io.Writer) *cobra.Command {
	d := defaultSettings()
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the host",
		Long: `Run the vigil host on the embedded store (or, with --store, as a node of a
NATS JetStream cluster) and the bundled plugins.

Each setting comes from, in order of precedence: a flag, the environment
(VIGIL_LISTEN, VIGIL_DATA, VIGIL_PLUGIN_CACHE, VIGIL_PLUGINS, VIGIL_WORKERS,
VIGIL_FSYNC, VIGIL_WEBHOOK_ALLOW as a comma-separated list,
VIGIL_RECIPIENT_MAX_REFS, VIGIL_RECIPIENT_MAX_PENDING, VIGIL_STORE,
VIGIL_DEBUG_LISTEN, VIGIL_CONFIG), the config file (YAML: listen, data,
plugin_cache, plugins, workers, fsync, webhook_allow, recipient_max_refs,
recipient_max_pending, debug_listen, tokens, store; and, in the file only, fetch, secrets, observe and scopes:
see docs/fetch.md and docs/observe.md), the default. An invalid value refuses to start,
naming the key and where it came from. Bearer tokens are set in the config
file only; with none, the API is unauthenticated and binds to loopback
only.

A recipient's webhook whose URL names an address the guard refuses
(loopback, private, link-local, the metadata address, in any spelling, or
localhost) is refused when it is set, unless --webhook-allow lets it
through. A recipient holds at most --recipient-max-refs refs and
--recipient-max-pending pending watches; past them, a PUT or a
registration is a 422 naming the setting.

Durability (--fsync, on by default): a registration, a settlement and its
mail, a mailbox append, an observed record or a recipient change is
acknowledged only once it is fsynced, so it survives a power loss or a
kernel crash as well as a kill -9; concurrent writes share one fsync.
With --fsync=false (fsync: false, VIGIL_FSYNC=false) it is acknowledged
once it is in the store's log in the page cache: it survives kill -9 and
any crash of vigil itself, but a power loss or kernel crash can lose the
last seconds of acknowledged writes.

The store is badger in DATA/store unless --store (VIGIL_STORE, or the
config file's store.nats.urls) names NATS JetStream servers,
nats://host:port[,nats://host:port...]: the host is then a node of a
cluster, its store on the servers, its watches' partitions shared with
the other nodes through leases. The config file's store.nats also sets
credentials (a .creds file), tls (ca, cert, key), replicas and partitions
(fixed when the cluster's store is created: 1 and 64 by default), bucket
(vigil; the leases go in BUCKET_leases), node (this node's name, unique in the cluster; default the host
name, sanitized), lease_ttl (10s) and start_timeout (60s: how long
serve waits at start for JetStream to answer, while no server is up or
too few are for a meta leader, logging each attempt, before it fails).
Every node must load the same plugins: a node whose plugin set differs
from most nodes' holds no partition (see RATIONALE.md).

Plugins load from the bundled set and, with --plugins, from a directory of
.wasm files and its registry.json. SIGHUP reloads the plugins and the
config file's observe scopes, tokens, grants and hook sources (a revoked token stops
working at once, and its open streams and long polls end); SIGINT and SIGTERM stop the host after
in-flight requests and probes finish.`,
		Args: exactArgs(),
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
	cmd.Flags().String("debug-listen", "", "loopback address serving Go's profiles (/debug/pprof/) and POST /debug/free (collect, return free memory to the system); off by default")
	cmd.Flags().String("data", d.Data, "data directory (the badger store; unused with --store)")
	cmd.Flags().String("store", "", "NATS JetStream servers, nats://host:port[,...]: run as a node of a cluster (default: badger in DATA/store)")
	cmd.Flags().String("plugin-cache", "", "plugin compilation cache directory, shared with vigil plugins and between hosts (default vigil/wazero in the user cache directory)")
	cmd.Flags().String("plugins", "", "plugin directory: *.wasm and an optional registry.json")
	cmd.Flags().Bool("fsync", d.Fsync, "acknowledge a write only once it is fsynced, concurrent writes sharing one fsync: survives power loss; --fsync=false survives kill -9 only")
	cmd.Flags().Int("workers", d.Workers, "probe workers: a small fixed pool, never scaled with the watches; no kind or recipient holds more than workers-1 (at most 16)")
	cmd.Flags().StringArray("webhook-allow", nil, "a CIDR webhooks may reach although it is loopback or private (repeatable)")
	cmd.Flags().Int("recipient-max-refs", recipients.DefaultMaxRefs, "refs one recipient may hold")
	cmd.Flags().Int("recipient-max-pending", recipients.DefaultMaxPending, "pending watches one recipient may hold; a registration past it is refused")
	return cmd
}

// serve runs the host. reload, when not nil, re-reads the settings on
// SIGHUP; only the observe scopes, the tokens, the grants and the hook
// sources take effect without a restart, and the plugins are reloaded.
func serve(ctx context.Context, f settings, stderr io.Writer, reload func() (settings, error)) error {
	log := newLogger(stderr)
	secrets, err := f.resolveSecrets(os.Getenv)
	if err != nil {
		return err
	}
	hookSources, err := f.hooks(os.Getenv)
	if err != nil {
		return err
	}
	cache, err := f.pluginCache()
	if err != nil {
		return err
	}
	clusterCfg, err := f.Store.cluster(log)
	if err != nil {
		return err
	}
	h, err := host.New(ctx, host.Config{
		Data: f.Data, PluginCache: cache, PluginDir: f.Plugins, Bundled: plugins.Bundled(),
		Fsync: f.Fsync, Workers: f.Workers, WebhookAllow: f.allowPrefixes(), Tokens: f.authTokens(), Secrets: secrets,
		Fetch:       f.fetchConfig(),
		ObserveRate: f.Observe.Rate, ObserveBurst: f.Observe.Burst, ObserveRunPerMinute: f.Observe.RunPerMinute, Scopes: f.Scopes,
		Limits: recipients.Limits{MaxRefs: f.MaxRefs, MaxPending: f.MaxPending}, Logger: log,
		Cluster: clusterCfg, Hooks: hookSources,
	})
	if err != nil {
		return err
	}
	defer func() {
		if err := h.Close(); err != nil {
			log.Error("closing the host", "err", err)
		}
	}()
	ln, err := net.Listen("tcp", f.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", f.Listen, err)
	}
	if f.DebugListen != "" {
		stopDebug, err := serveDebug(ctx, f.DebugListen, log)
		if err != nil {
			_ = ln.Close()
			return err
		}
		defer stopDebug()
	}
	log.Info("vigil serving", "listen", ln.Addr().String(), "data", f.Data, "store", f.Store.label(), "plugins", pluginDirLabel(f.Plugins), "plugin_cache", cache, "kinds", len(h.Runtime.Plugins()), "pending", h.Pending, "fsync", f.Fsync, "auth", authLabel(f.Tokens))
	// The runtime logged each plugin it loaded, and each it did not.

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		for {
			select {
			case <-runCtx.Done():
				return
			case <-hup:
				var next *host.Reloaded
				if reload != nil {
					f, err := reload()
					var hs hooks.Config
					if err == nil {
						hs, err = f.hooks(os.Getenv)
					}
					if err != nil {
						log.Error("config reload failed; keeping the scopes, tokens, grants and hook sources in force", "err", err)
					} else {
						next = &host.Reloaded{Scopes: f.Scopes, Tokens: f.authTokens(), Hooks: hs}
					}
				}
				h.Reload(runCtx, next)
			}
		}
	}()
	return h.Run(runCtx, ln)
}

// loopbackOnly refuses a listen address that is not loopback: without
// bearer tokens the API has no authentication, so it must not be reachable
// from another machine.
func loopbackOnly(listen string) error {
	return bindsLoopback(listen, "no bearer tokens are configured (config file: tokens), so the API binds to loopback only (127.0.0.1 or ::1)")
}

// bindsLoopback refuses a listen address that is not loopback, saying
// why (the error's text after the address).
func bindsLoopback(listen, why string) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("%q: %w", listen, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err != nil || !ip.IsLoopback() {
		return fmt.Errorf("%s: %s", listen, why)
	}
	return nil
}

func authLabel(tokens []token) string {
	if len(tokens) == 0 {
		return "none (loopback only)"
	}
	return fmt.Sprintf("bearer tokens for %d principal(s)", len(tokens))
}

func pluginDirLabel(dir string) string {
	if dir == "" {
		return "bundled only"
	}
	return dir
}
