package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigilhq/vigil/host/delivery"
	"github.com/vigilhq/vigil/host/netguard"
	"github.com/vigilhq/vigil/host/plugin"
	"github.com/vigilhq/vigil/host/recipients"
	"github.com/vigilhq/vigil/host/scheduler"
	"github.com/vigilhq/vigil/plugins"
	"github.com/vigilhq/vigil/store"
)

type serveFlags struct {
	data         string
	plugins      string
	fsync        bool
	workers      int
	webhookAllow []string
}

func newServe(stderr io.Writer) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the host",
		Long: `Run the vigil host on the embedded store and the bundled plugins.

Plugins load from the bundled set and, with --plugins, from a directory of
.wasm files and its registry.json. SIGHUP reloads the plugins; SIGINT and
SIGTERM stop the host after in-flight plugin calls finish.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd.Context(), f, stderr)
		},
	}
	cmd.Flags().StringVar(&f.data, "data", "./vigil-data", "data directory (store and plugin compilation cache)")
	cmd.Flags().StringVar(&f.plugins, "plugins", "", "plugin directory: *.wasm and an optional registry.json")
	cmd.Flags().BoolVar(&f.fsync, "fsync", false, "fsync every store commit (survives power loss; slower registration)")
	cmd.Flags().IntVar(&f.workers, "workers", 1, "probes run at once (a small fixed number, at most 16)")
	cmd.Flags().StringArrayVar(&f.webhookAllow, "webhook-allow", nil, "a CIDR webhooks may reach although it is loopback or private (repeatable)")
	return cmd
}

func serve(ctx context.Context, f serveFlags, stderr io.Writer) error {
	log := newLogger(stderr)
	if f.workers < 1 || f.workers > 16 {
		return fmt.Errorf("--workers %d: want 1 to 16", f.workers)
	}
	var allow []netip.Prefix
	for _, c := range f.webhookAllow {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return fmt.Errorf("--webhook-allow %q: %w", c, err)
		}
		allow = append(allow, p)
	}
	rt, err := openRuntime(ctx, f.data, f.plugins)
	if err != nil {
		return err
	}
	defer func() { _ = rt.Close(context.Background()) }()

	st, err := store.Open(filepath.Join(f.data, "store"), store.Options{SyncWrites: f.fsync, Logger: log})
	if err != nil {
		return fmt.Errorf("opening the store: %w", err)
	}
	defer func() {
		if err := st.Close(); err != nil {
			log.Error("closing the store", "err", err)
		}
	}()

	deliver, err := delivery.New(delivery.Config{Store: st, Guard: netguard.New(allow), Logger: log})
	if err != nil {
		return err
	}
	sched, err := scheduler.New(scheduler.Config{
		Store: st, Plugins: rt, Deliver: deliver, Recipients: st, Logger: log, Workers: f.workers,
	})
	if err != nil {
		return err
	}
	pending, err := sched.Prime(ctx)
	if err != nil {
		return err
	}
	recips := recipients.New(st, sched, rt, wallClock{}, log)
	if err := recips.ReconcileAll(ctx); err != nil {
		return fmt.Errorf("reconciling recipients: %w", err)
	}

	log.Info("vigil serving", "data", f.data, "plugins", pluginDirLabel(f.plugins), "kinds", len(rt.Plugins()), "pending", pending, "fsync", f.fsync)
	for _, p := range rt.Plugins() {
		log.Info("plugin loaded", "kind", p.Kind, "version", p.Version, "file", p.File, "observable", p.Observable)
	}
	for _, p := range rt.Problems() {
		log.Warn("plugin not loaded", "file", p.File, "kind", p.Kind, "rule", p.Rule, "err", p.Err)
	}
	loop := sched.Start(ctx)

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			log.Info("vigil stopping: finishing probes in flight")
			<-loop
			return nil
		case <-hup:
			rep, err := rt.Reload(ctx)
			if err != nil {
				log.Error("plugin reload failed; keeping the plugins loaded before", "err", err)
				continue
			}
			log.Info("plugins reloaded", "kinds", len(rep.Loaded), "problems", len(rep.Problems))
		}
	}
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

// openRuntime loads the bundled plugins and dir, with the compilation cache
// under the data directory.
func openRuntime(ctx context.Context, data, dir string) (*plugin.Runtime, error) {
	if data == "" {
		return nil, errors.New("--data: must not be empty")
	}
	cache := filepath.Join(data, "plugin-cache")
	if err := os.MkdirAll(cache, 0o700); err != nil {
		return nil, fmt.Errorf("--data: %w", err)
	}
	rt, err := plugin.New(ctx, plugin.Config{
		Bundled:  plugins.Bundled(),
		Dir:      dir,
		CacheDir: cache,
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
