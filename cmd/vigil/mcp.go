package main

import (
	"errors"
	"io"
	"log/slog"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/vigilhq/vigil/api/client"
	"github.com/vigilhq/vigil/api/mcpserver"
)

// newMCP is `vigil mcp`: the MCP server over stdio, a client of a running
// host like the other client commands. An MCP client (Claude Code, Claude
// Desktop, …) starts it as a subprocess; see docs/mcp.md.
func newMCP(stderr io.Writer) *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve vigil's MCP tools over stdio, as a client of a running host",
		Long: `Serve the Model Context Protocol over stdin and stdout: the tools an agent
registers a watch, waits on it and reads its mailbox with, each one call of the
REST API of the host at --server (default $VIGIL_SERVER, else ` + defaultServer + `)
with the token --token (default $VIGIL_TOKEN). An MCP client starts it as a
subprocess; stdout carries the protocol only, and logs go to stderr.

The host serves the same tools itself over streamable HTTP at /mcp.

  {"mcpServers": {"vigil": {"command": "vigil", "args": ["mcp"],
    "env": {"VIGIL_SERVER": "http://127.0.0.1:7878", "VIGIL_TOKEN": "…"}}}}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c := f.client(cmd)
			log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			s := mcpserver.New(cmd.Context(), mcpserver.Config{
				API:    func(*mcp.CallToolRequest) (mcpserver.API, error) { return c, nil },
				Kinds:  c.Kinds,
				Logger: log,
			})
			err := s.MCP().Run(cmd.Context(), &mcp.IOTransport{Reader: io.NopCloser(cmd.InOrStdin()), Writer: nopWriteCloser{cmd.OutOrStdout()}})
			switch {
			case cmd.Context().Err() != nil, errors.Is(err, io.EOF), errors.Is(err, io.ErrClosedPipe), errors.Is(err, syscall.EPIPE):
				return nil // the client closed the session, went away, or asked us to stop
			}
			return err
		},
	}
	addClientFlags(cmd, &f)
	_ = cmd.PersistentFlags().MarkHidden("json") // the protocol is JSON already
	return cmd
}

var _ mcpserver.API = (*client.Client)(nil)

// nopWriteCloser is stdout for the transport, which closes its writer at
// the end of the session: the process's stdout stays the process's.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
