package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/vigilhq/vigil/host/plugin"
	"github.com/vigilhq/vigil/host/scheduler"
	"github.com/vigilhq/vigil/plugins"
	"github.com/vigilhq/vigil/store"
)

type serveFlags struct {
	data    string
	plugins string
	fsync   bool
	workers int
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
	return cmd
}

func serve(ctx context.Context, f serveFlags, stderr io.Writer) error {
	log := newLogger(stderr)
	if f.workers < 1 || f.workers > 16 {
		return fmt.Errorf("--workers %d: want 1 to 16", f.workers)
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

	sched, err := scheduler.New(scheduler.Config{
		Store: st, Plugins: rt, Deliver: logOnlyDelivery{log}, Logger: log, Workers: f.workers,
	})
	if err != nil {
		return err
	}
	pending, err := sched.Prime(ctx)
	if err != nil {
		return err
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

// logOnlyDelivery logs each outcome and reports its fate as unknown: the
// host has no mailboxes or webhooks yet, so nothing can say it landed.
type logOnlyDelivery struct{ log *slog.Logger }

func (d logOnlyDelivery) Send(_ context.Context, to store.Recipient, m store.Message) store.Receipt {
	d.log.Info("outcome (no delivery channel yet)", "recipient", to.ID, "watch", m.WatchID, "type", m.Type, "result", m.Outcome.Result)
	return store.ReceiptUnknown
}

func (d logOnlyDelivery) Notify(ctx context.Context, to store.Recipient, m store.Message) store.Receipt {
	return d.Send(ctx, to, m)
}

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
