package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/api/client"
	"github.com/vigilhq/vigil/api/mcpserver"
	"github.com/vigilhq/vigil/internal/scheduler"
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
				API:   func(*mcp.CallToolRequest) (mcpserver.API, error) { return c, nil },
				Kinds: c.Kinds,
				// The host's scheduler constants: serve sets no other.
				Defaults: mcpserver.Defaults{Every: scheduler.DefaultEvery, Deadline: scheduler.DefaultDeadline},
				Logger:   log,
			})
			// One follower long-polls the host's kinds for the session's
			// life, so a plugin reload reaches the client as
			// notifications/tools/list_changed without its asking.
			follow, stop := context.WithCancel(cmd.Context())
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				followKinds(follow, c, s.Refresh, log, followBackoffFirst)
			}()
			err := s.MCP().Run(cmd.Context(), &mcp.IOTransport{Reader: io.NopCloser(cmd.InOrStdin()), Writer: nopWriteCloser{cmd.OutOrStdout()}})
			stop()
			wg.Wait()
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

// kindWaiter is the long poll on the host's kinds; *client.Client has it.
type kindWaiter interface {
	WaitKinds(ctx context.Context, since string, wait time.Duration) (api.KindList, error)
}

var _ kindWaiter = (*client.Client)(nil)

// The follower's backoff after a failed long poll: from the first to the
// most, doubling.
const (
	followBackoffFirst = time.Second
	followBackoffMost  = 30 * time.Second
)

// followKinds long-polls the host's kinds until ctx ends and calls
// refresh each time their version changes (the first answer included:
// the kinds may have changed since the server read them). A failed poll
// (the host down, the token refused) or a failed read waits before the
// next, first, then doubling up to followBackoffMost. A host that answers
// no version does not know the long poll: the follower stops, and the
// kinds are read again only when the client lists the tools or registers
// a watch.
func followKinds(ctx context.Context, k kindWaiter, refresh func(context.Context) error, log *slog.Logger, first time.Duration) {
	since, backoff := "", first
	for ctx.Err() == nil {
		list, err := k.WaitKinds(ctx, since, mcpserver.MaxWait)
		switch {
		case err == nil && list.Version == "":
			log.Warn("the host does not long-poll its kinds: a plugin reload reaches the client at its next tools/list")
			return
		case err == nil && list.Version == since:
			continue // the wait ran out
		case err == nil:
			// since moves only once the server has the new kinds: a
			// failed read is retried, not skipped.
			if err = refresh(ctx); err == nil {
				since, backoff = list.Version, first
				continue
			}
		}
		if ctx.Err() != nil {
			return
		}
		log.Warn("following the host's kinds", "err", err, "retry_in", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, followBackoffMost)
	}
}

// nopWriteCloser is stdout for the transport, which closes its writer at
// the end of the session: the process's stdout stays the process's.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
