package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/vigilhq/vigil/host"
	"github.com/vigilhq/vigil/host/plugin"
	"github.com/vigilhq/vigil/plugins"
)

func newPlugins(stdout, stderr io.Writer) *cobra.Command {
	var data, cache, dir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "plugins",
		Short: "List the plugins the host would load, and why any would not",
		Long: `Load the bundled plugins and the plugin directory exactly as serve does, and
list each kind, or print why a file was refused. A file that claims a kind
the registry gives to another file (kinds.KIND.wasm) is listed as not
loaded, rule kind.pinned. Exits non-zero when any plugin failed to load
(a pinned-out file is not a failure: its kind is served by the file the
registry names), so it can gate a deployment.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cache == "" {
				cache = settings{Data: data, PluginCache: os.Getenv("VIGIL_PLUGIN_CACHE")}.pluginCache()
			}
			rt, err := host.OpenRuntime(cmd.Context(), host.RuntimeConfig{Cache: cache, Dir: dir, Bundled: plugins.Bundled()})
			if err != nil {
				return err
			}
			defer func() { _ = rt.Close(cmd.Context()) }()
			infos, problems := rt.Plugins(), rt.Problems()
			if asJSON {
				type problem struct {
					File  string `json:"file"`
					Kind  string `json:"kind,omitempty"`
					Rule  string `json:"rule"`
					Error string `json:"error"`
				}
				out := struct {
					Plugins  any       `json:"plugins"`
					Problems []problem `json:"problems"`
				}{Plugins: infos, Problems: []problem{}}
				for _, p := range problems {
					out.Problems = append(out.Problems, problem{p.File, p.Kind, p.Rule, p.Err.Error()})
				}
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(out); err != nil {
					return err
				}
			} else {
				tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "KIND\tVERSION\tSTANDING\tCAPABILITIES\tOBSERVABLE\tFILE")
				for _, p := range infos {
					obs := "yes"
					if !p.Observable {
						obs = "no: grant " + p.Setting
					}
					fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\t%s\n", p.Kind, p.Version, p.Standing, strings.Join(p.Capabilities, ","), obs, p.File)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				for _, p := range problems {
					fmt.Fprintf(stderr, "not loaded: %v\n", p)
				}
			}
			failed := 0
			for _, p := range problems {
				if p.Rule != plugin.RuleKindPinned {
					failed++
				}
			}
			if failed > 0 {
				return fmt.Errorf("%d plugin(s) not loaded", failed)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "plugins", "", "plugin directory: *.wasm and an optional registry.json")
	cmd.Flags().StringVar(&data, "data", "./vigil-data", "data directory (holds the plugin compilation cache)")
	cmd.Flags().StringVar(&cache, "plugin-cache", "", "plugin compilation cache directory (default $VIGIL_PLUGIN_CACHE, else DATA/plugin-cache)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
