package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/vigilhq/vigil/internal/plugin"
)

func newPlugins(stdout, stderr io.Writer) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "plugins",
		Short: "List the plugins the host would load, and why any would not",
		Long: `Load the bundled plugins and the plugin directory exactly as serve does (the
same flags, environment and config file: plugins, plugin_cache, secrets),
and list each kind with its version, the SHA-256 of its file (the first 12
hex digits; --json gives all 64), where it came from (bundled, or the
plugin directory) and its file, or print why a file was refused. A file
that claims a kind the registry gives to another file (kinds.KIND.wasm) is
listed as not loaded, rule kind.pinned. Exits non-zero when any plugin
failed to load (a pinned-out file is not a failure: its kind is served by
the file the registry names), so it can gate a deployment.

Nothing is written but the compilation cache, which serve shares (vigil/wazero
in the user cache directory unless --plugin-cache, plugin_cache or
VIGIL_PLUGIN_CACHE moves it): no store is opened, nothing lands in the
current directory.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			local, err := openLocal(cmd.Context(), cmd, localOptions{})
			if err != nil {
				return err
			}
			defer func() { _ = local.Close(context.WithoutCancel(cmd.Context())) }()
			rt := local.Runtime
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
				fmt.Fprintln(tw, "KIND\tVERSION\tSHA256\tSOURCE\tSTANDING\tWAKES\tCAPABILITIES\tOBSERVABLE\tFILE")
				for _, p := range infos {
					obs := "yes"
					if !p.Observable {
						obs = "no: grant " + p.Setting
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\t%v\t%s\t%s\t%s\n", p.Kind, p.Version, shortSum(p.SHA256), p.Source, p.Standing, p.Wakes, orDash(strings.Join(p.Capabilities, ",")), obs, p.File)
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
	localFlags(cmd)
	// --data once held the compilation cache; it is accepted and ignored
	// (vigil plugins opens no store), so a script that passes it keeps
	// working. Hidden rather than deprecated: cobra would print the notice
	// into the --json output.
	cmd.Flags().String("data", defaultSettings().Data, "")
	_ = cmd.Flags().MarkHidden("data")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (the full SHA-256)")
	return cmd
}

// shortSum is the table's form of a SHA-256: its first 12 hex digits, as
// git shortens a commit, enough to tell two builds apart at a glance.
func shortSum(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return orDash(sum)
}
