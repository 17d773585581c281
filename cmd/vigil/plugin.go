package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/api/client"
)

// newPlugin is `vigil plugin`: ls and reload ask a running server about the
// plugins it has loaded; new and try work locally, without a server.
// (`vigil plugins` loads the plugins locally, too.)
func newPlugin(stdout, stderr io.Writer) *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "plugin",
		Short: "Write and try a plugin locally; list or reload a server's plugins",
		Long: `Work with plugins. Two commands are local and need no server:
  new     write a new plugin to start from
  try     admit and observe one watch through the real host path
Two ask a running server (--server, --token):
  ls      list the plugins it has loaded
  reload  make it reload its plugins, and list what it loaded
ls and reload exit non-zero when a plugin file failed to load, naming it on
stderr. (vigil plugins loads the plugins locally instead, without a server.)`,
		Args: cobra.NoArgs,
	}
	addClientFlags(cmd, &cf)
	show := func(pl api.PluginList) error {
		if cf.json {
			if err := printJSON(stdout, pl); err != nil {
				return err
			}
		} else {
			tw := table(stdout)
			fmt.Fprintln(tw, "KIND\tVERSION\tSHA256\tSOURCE\tSTANDING\tWAKES\tEVERY\tCAPABILITIES\tOBSERVABLE\tFILE")
			for _, p := range pl.Plugins {
				obs := "yes"
				if !p.Observable {
					obs = "no: grant " + p.Setting
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\t%v\t%s\t%s\t%s\t%s\n", p.Kind, orDash(p.Version), shortSum(p.SHA256), orDash(p.Source), p.Standing, p.Wakes, orDash(p.DefaultEvery), orDash(strings.Join(p.Capabilities, ",")), obs, orDash(p.File))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, p := range pl.Problems {
				fmt.Fprintf(stderr, "not loaded: %s: %s: %s\n", p.File, p.Rule, p.Error)
			}
		}
		if len(pl.Problems) > 0 {
			return fmt.Errorf("%d plugin(s) not loaded", len(pl.Problems))
		}
		return nil
	}
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List the plugins the server has loaded",
		Args:  exactArgs(),
		RunE: cf.run(func(ctx context.Context, c *client.Client, _ []string) error {
			pl, err := c.ListPlugins(ctx)
			if err != nil {
				return err
			}
			return show(pl)
		}),
	}
	reload := &cobra.Command{
		Use:   "reload",
		Short: "Make the server reload its plugins, and list what it loaded",
		Args:  exactArgs(),
		RunE: cf.run(func(ctx context.Context, c *client.Client, _ []string) error {
			pl, err := c.ReloadPlugins(ctx)
			if err != nil {
				return err
			}
			return show(pl)
		}),
	}
	cmd.AddCommand(ls, reload, newPluginTry(stdout), newPluginNew(stdout))
	return cmd
}
