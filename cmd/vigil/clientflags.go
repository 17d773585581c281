package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/api/client"
)

// defaultServer is where the client commands look for a server when
// neither --server nor VIGIL_SERVER says: serve's default listen address.
const defaultServer = "http://127.0.0.1:7878"

// clientFlags are the flags of every command that talks to a server.
type clientFlags struct {
	server string
	token  string
	json   bool
}

// addClientFlags puts the client flags on a command group, for every
// subcommand under it.
func addClientFlags(cmd *cobra.Command, f *clientFlags) {
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.server, "server", "", "the server's URL (default $VIGIL_SERVER, else "+defaultServer+")")
	pf.StringVar(&f.token, "token", "", "bearer token (default $VIGIL_TOKEN; prefer the variable: a flag shows in process listings)")
	pf.BoolVar(&f.json, "json", false, "print JSON instead of a table (the default is a table, whether or not stdout is a terminal)")
}

// client builds the API client from the flags and the environment.
func (f *clientFlags) client(cmd *cobra.Command) *client.Client {
	server, token := f.server, f.token
	if !cmd.Flags().Changed("server") {
		server = os.Getenv("VIGIL_SERVER")
	}
	if server == "" {
		server = defaultServer
	}
	if !cmd.Flags().Changed("token") {
		token = os.Getenv("VIGIL_TOKEN")
	}
	f.server = server
	return client.New(server, client.WithToken(token))
}

// run adapts a client command to cobra: it builds the client and turns
// the errors that come back into what the user reads.
func (f *clientFlags) run(fn func(ctx context.Context, c *client.Client, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c := f.client(cmd)
		return f.explain(fn(cmd.Context(), c, args))
	}
}

// apiError prints an API refusal as `<code>: <message> (field: …)`.
type apiError struct{ e *api.Error }

func (a *apiError) Error() string {
	var extra []string
	if a.e.Field != "" {
		extra = append(extra, "field: "+a.e.Field)
	}
	if a.e.Setting != "" {
		extra = append(extra, "setting: "+a.e.Setting)
	}
	s := a.e.Code + ": " + a.e.Message
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return s
}

func (a *apiError) Unwrap() error { return a.e }

// explain makes err readable: an API refusal in its one format, and a
// server that does not answer named with where to point the client.
func (f *clientFlags) explain(err error) error {
	var (
		ae   *api.Error
		ue   *url.Error
		exit *exitError
	)
	switch {
	case err == nil, errors.As(err, &exit):
		return err
	case errors.As(err, &ae):
		return &apiError{ae}
	case errors.As(err, &ue) && !errors.Is(err, context.Canceled):
		return fmt.Errorf("no answer from the vigil server at %s (is vigil serve running? point --server or VIGIL_SERVER at it): %w", f.server, ue)
	}
	return err
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes aligned columns.
func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

// fields prints key/value lines, skipping empty values.
func fields(w io.Writer, kv ...string) error {
	tw := table(w)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			fmt.Fprintf(tw, "%s\t%s\n", kv[i], kv[i+1])
		}
	}
	return tw.Flush()
}

func timeText(t *time.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339)
}

// compact prints raw JSON on one line ("" for none).
func compact(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// orDash keeps empty table cells visible.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
