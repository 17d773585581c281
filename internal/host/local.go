package host

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"slices"

	"github.com/vigilhq/vigil/internal/fetch"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/internal/runner"
)

// Plugins is the plugin side of a host on its own: the runtime loaded as
// New loads it, beside the fetch issuer and the exec runner New gives it,
// and no store, scheduler or API. `vigil plugins` lists what it loaded;
// `vigil plugin try` admits and observes through it. Nothing it does is
// written anywhere but the compilation cache: the issuer records no facts
// and no dead letters, and no kind is registered with a scheduler.
type Plugins struct {
	Runtime *plugin.Runtime
	Issuer  *fetch.Issuer
}

// PluginsConfig is what OpenPlugins needs.
type PluginsConfig struct {
	// PluginCache, PluginDir, Bundled, Secrets, Fetch and Logger are
	// serve's (Config); the rest of Config is not read.
	PluginCache string
	PluginDir   string
	Bundled     fs.FS
	Secrets     map[string]string
	Fetch       FetchConfig
	Logger      *slog.Logger
	// Extra is a .wasm file loaded beside the others (plugin.Config.Extra).
	Extra string
	// Workspace is the directory every command a plugin asks for runs in
	// (vigil_exec), whoever the recipient; "" runs none (no_workspace).
	Workspace string
	// WrapFetcher and WrapExecer, when set, stand between the plugins and
	// the issuer and the runner (to record what they did).
	WrapFetcher func(plugin.Fetcher) plugin.Fetcher
	WrapExecer  func(plugin.Execer) plugin.Execer
}

// OpenPlugins builds the issuer and the runner as New does, without the
// store, and loads the plugins through OpenRuntime.
func OpenPlugins(ctx context.Context, pc PluginsConfig) (*Plugins, error) {
	log := pc.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	iss, err := newIssuer(Config{Fetch: pc.Fetch, Secrets: pc.Secrets}, nil, nil, log)
	if err != nil {
		return nil, fmt.Errorf("fetch: %w", err)
	}
	ws := pc.Workspace
	var f plugin.Fetcher = iss
	var x plugin.Execer = newExecer(log, runner.WorkspaceFunc(func(context.Context, string) (string, error) { return ws, nil }))
	if pc.WrapFetcher != nil {
		f = pc.WrapFetcher(f)
	}
	if pc.WrapExecer != nil {
		x = pc.WrapExecer(x)
	}
	rt, err := OpenRuntime(ctx, RuntimeConfig{
		Cache: pc.PluginCache, Dir: pc.PluginDir, Bundled: pc.Bundled, Extra: pc.Extra,
		Fetcher: f, Execer: x, SecretNames: slices.Sorted(maps.Keys(pc.Secrets)), Logger: log,
	})
	if err != nil {
		iss.CloseIdleConnections()
		return nil, err
	}
	return &Plugins{Runtime: rt, Issuer: iss}, nil
}

// Close closes the runtime and the issuer's idle connections.
func (p *Plugins) Close(ctx context.Context) error {
	err := p.Runtime.Close(ctx)
	p.Issuer.CloseIdleConnections()
	return err
}

// newIssuer is the fetch issuer of cfg, as New and OpenPlugins build it,
// recording its facts and dead letters in log and what it could not hold
// in m (nil: nowhere).
func newIssuer(cfg Config, log fetch.EventLog, m fetch.Metrics, logger *slog.Logger) (*fetch.Issuer, error) {
	fc := fetch.Config{
		MaxTimeout: cfg.Fetch.MaxTimeout, MaxFetchTime: cfg.Fetch.MaxFetchTime, MinInterval: cfg.Fetch.MinInterval, MaxBody: cfg.Fetch.MaxBodyBytes,
		UserAgent: cfg.Fetch.UserAgent, Secrets: cfg.Secrets, Logger: logger,
	}
	// Interfaces holding a typed nil are not nil: set only what is set.
	if log != nil {
		fc.Log = log
	}
	if m != nil {
		fc.Metrics = m
	}
	return fetch.New(fc)
}

// newExecer is the exec runner as the plugins see it, in the workspaces
// ws says.
func newExecer(logger *slog.Logger, ws runner.Workspaces) runner.PluginExecer {
	return runner.PluginExecer{Runner: runner.New(runner.Config{Logger: logger}), Workspaces: ws}
}
