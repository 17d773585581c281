package main

import (
	"context"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/vigilhq/vigil/internal/host"
	"github.com/vigilhq/vigil/plugins"
)

// localFlags are the flags of the commands that load the plugins on this
// machine, without a server (vigil plugins, vigil plugin try): the ones
// of serve that decide which plugins load, with what grants and secrets,
// and where their compiled code is kept. The rest of the settings come
// from the config file and the environment as serve reads them.
func localFlags(cmd *cobra.Command) {
	cmd.Flags().String("config", "", "YAML config file serve reads (also VIGIL_CONFIG): its plugins, plugin_cache, fetch and secrets apply")
	cmd.Flags().String("plugins", "", "plugin directory: *.wasm and an optional registry.json (also VIGIL_PLUGINS)")
	cmd.Flags().String("plugin-cache", "", "plugin compilation cache directory, shared with serve (default $VIGIL_PLUGIN_CACHE, else vigil/wazero in the user cache directory)")
}

// localOptions is what one command adds to serve's settings.
type localOptions struct {
	extra     string // a .wasm file to load beside the others
	workspace string // where vigil_exec runs commands
	wrap      func(*host.PluginsConfig)
	logger    *slog.Logger
}

// openLocal reads the settings as serve does (flags, environment, config
// file, defaults), resolves the secrets, and loads the plugins through
// host.OpenPlugins: the runtime, issuer and runner serve would build,
// with no store and no API. Nothing is written but the compilation cache.
func openLocal(ctx context.Context, cmd *cobra.Command, lo localOptions) (*host.Plugins, error) {
	s, err := loadSettings(cmd.Flags(), os.Getenv)
	if err != nil {
		return nil, err
	}
	cache, err := s.pluginCache()
	if err != nil {
		return nil, err
	}
	secrets, err := s.resolveSecrets(os.Getenv)
	if err != nil {
		return nil, err
	}
	log := lo.logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	pc := host.PluginsConfig{
		PluginCache: cache, PluginDir: s.Plugins, Bundled: plugins.Bundled(), Secrets: secrets,
		Fetch: s.fetchConfig(), Logger: log, Extra: lo.extra, Workspace: lo.workspace,
	}
	if lo.wrap != nil {
		lo.wrap(&pc)
	}
	return host.OpenPlugins(ctx, pc)
}

// fetchConfig is the fetch issuer's tuning, as serve and openLocal give it.
func (s settings) fetchConfig() host.FetchConfig {
	return host.FetchConfig{
		MaxTimeout: s.Fetch.MaxTimeout, MaxFetchTime: s.Fetch.MaxFetchTime, MinInterval: s.Fetch.MinInterval, MaxBodyBytes: s.Fetch.MaxBodyBytes, UserAgent: s.Fetch.UserAgent,
	}
}
