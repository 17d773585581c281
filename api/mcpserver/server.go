package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/api/client"
)

// MaxWait is the longest a tool waits in one call: the mailbox's longest
// wait (delivery.MaxWait), which bounds the REST API's long polls too.
const MaxWait = 60 * time.Second

// CodeUnreachable is a tool error's code when the host did not answer
// (the stdio server could not reach it). Every other code is the API's.
const CodeUnreachable = "host_unreachable"

// API is what the tools call of vigil's REST API; *client.Client has it.
type API interface {
	Kinds(ctx context.Context) (api.KindList, error)
	CreateWatch(ctx context.Context, req api.WatchRequest) (api.Watch, error)
	GetWatch(ctx context.Context, id string) (api.Watch, error)
	WaitWatch(ctx context.Context, id, since string, wait time.Duration) (api.Watch, error)
	ListWatches(ctx context.Context, q client.WatchQuery) (api.WatchList, error)
	CancelWatch(ctx context.Context, id string) (api.Watch, error)
	ReadMailbox(ctx context.Context, id string, after uint64, wait time.Duration, limit int) (api.Mailbox, error)
	Record(ctx context.Context, scope string, req api.ObserveRequest) (api.ObserveResult, error)
	ListWork(ctx context.Context, scope, state string) (api.WorkList, error)
	GetWork(ctx context.Context, id string) (api.Work, error)
	ClaimWork(ctx context.Context, id, recipient string) (api.Work, error)
	CompleteWork(ctx context.Context, id string) (api.Work, error)
	SendSignal(ctx context.Context, signalURL string, req api.SignalRequest) (api.Signal, error)
}

var _ API = (*client.Client)(nil)

// Config is what a Server needs.
type Config struct {
	// API is the REST API one tool call speaks to: over stdio the one
	// client of the host, on the host a client carrying the bearer token
	// of the HTTP request that made the call. An error is the call's tool
	// error.
	API func(req *mcp.CallToolRequest) (API, error)
	// Kinds reads the kinds the host serves, for the register tool's enum.
	Kinds func(ctx context.Context) (api.KindList, error)
	// Version is the server's version in the MCP handshake.
	Version string
	// Defaults are the host's, for the register tool's descriptions of
	// every and expires_at (zero: described without a number).
	Defaults Defaults
	// Logger is scoped here with component=mcp, so it must not carry a
	// component of its own: slog would write the key twice.
	Logger *slog.Logger
}

// Defaults are what the host applies to a watch that names no cadence
// or deadline: its scheduler's constants, passed in by whoever builds
// the server (this package imports nothing of host/).
type Defaults struct {
	// Every is the cadence of a watch whose kind names no default_every.
	Every time.Duration
	// Deadline is the deadline of an open-ended watch whose kind names
	// no natural one.
	Deadline time.Duration
}

// Server is the MCP server and the kinds its register tool names.
type Server struct {
	cfg Config
	srv *mcp.Server
	log *slog.Logger

	mu sync.Mutex // guards kinds and added
	// kinds is the register tool's enum as last added ("" before the
	// first read); a read that finds the same adds nothing.
	kinds string
	// added counts the register tool's additions.
	added int
}

// New builds the server with every tool, and reads the kinds once. A
// host that does not answer yet leaves the register tool without an enum
// (its description says to call list_kinds); the next Refresh fills it.
func New(ctx context.Context, cfg Config) *Server {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	s := &Server{cfg: cfg, log: log.With("component", "mcp")}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "vigil", Title: "vigil watch host", Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       s.log,
	})
	s.addTools()
	if err := s.Refresh(ctx); err != nil {
		s.addRegister(nil)
		s.log.Warn("reading the host's kinds", "err", err)
	}
	// The kinds are read again when the agent lists the tools or
	// registers a watch, so neither acts on a stale enum, even between a
	// reload and the follower's (over stdio) or Follow's (on the host)
	// refresh.
	s.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" || method == "tools/call" && callsTool(req, toolRegister) {
				if err := s.Refresh(ctx); err != nil {
					s.log.Debug("reading the host's kinds", "err", err)
				}
			}
			return next(ctx, method, req)
		}
	})
	return s
}

func callsTool(req mcp.Request, name string) bool {
	c, ok := req.(*mcp.CallToolRequest)
	return ok && c.Params != nil && c.Params.Name == name
}

// MCP is the SDK's server, to run on a transport.
func (s *Server) MCP() *mcp.Server { return s.srv }

// Refresh reads the kinds and, when they differ from the register tool's
// enum, adds the tool again: the SDK then sends
// notifications/tools/list_changed to every session.
func (s *Server) Refresh(ctx context.Context) error {
	list, err := s.cfg.Kinds(ctx)
	if err != nil {
		return err
	}
	s.addRegister(list.Kinds)
	return nil
}

// Follow refreshes the kinds each time changed says they were written,
// until ctx ends: changed is called again after each wake for the next
// signal (the host's kind registry's Changed), before the kinds are read,
// so a write while they are read wakes it once more rather than being
// missed. It returns when ctx ends.
func (s *Server) Follow(ctx context.Context, changed func() <-chan struct{}) {
	ch := changed()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
		ch = changed()
		if err := s.Refresh(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("reading the host's kinds after a change", "err", err)
		}
	}
}

// kindsKey is what the register tool says of kinds: their names and
// summaries, in order.
func kindsKey(kinds []api.Kind) string {
	var b strings.Builder
	for _, k := range kinds {
		fmt.Fprintf(&b, "%s\x00%s\x00%t\n", k.Kind, k.Summary, k.Observable)
	}
	return b.String()
}

// addRegister adds the register tool for kinds (nil: none known yet),
// unless the tool already names the same.
func (s *Server) addRegister(kinds []api.Kind) {
	kinds = slices.Clone(kinds)
	slices.SortFunc(kinds, func(a, b api.Kind) int { return strings.Compare(a.Kind, b.Kind) })
	key := kindsKey(kinds)
	if kinds == nil {
		key = "\x00none"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if key == s.kinds {
		return
	}
	s.kinds = key
	s.added++
	t, err := registerTool(kinds, s.cfg.Defaults)
	if err != nil {
		s.log.Error("building the register tool", "err", err)
		return
	}
	mcp.AddTool(s.srv, t, handler(s, s.register))
}

// handler adapts a tool's function: the API of the call, then f; any
// error becomes the call's tool error.
func handler[In any](s *Server, f func(ctx context.Context, a API, in In) (any, error)) mcp.ToolHandlerFor[In, any] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		a, err := s.cfg.API(req)
		if err != nil {
			return toolError(err), nil, nil
		}
		out, err := f(ctx, a, in)
		if err != nil {
			if ctx.Err() != nil && !isAPIError(err) {
				return nil, nil, ctx.Err() // the client gave up on the call
			}
			return toolError(err), nil, nil
		}
		return nil, out, nil
	}
}

func isAPIError(err error) bool {
	var ae *api.Error
	return errors.As(err, &ae)
}

// ErrorOf is the API error a tool error carries: the API's own, a host
// that did not answer as CodeUnreachable, anything else as internal.
func ErrorOf(err error) *api.Error {
	var (
		ae *api.Error
		ue *url.Error
	)
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &ue):
		return &api.Error{Code: CodeUnreachable, Message: "no answer from the vigil host: " + ue.Err.Error()}
	}
	return &api.Error{Code: api.CodeInternal, Message: err.Error()}
}

// toolError is a tool result with IsError: the API's "code: message"
// as text, and {"error":{…}} as structured content.
func toolError(err error) *mcp.CallToolResult {
	e := ErrorOf(err)
	return &mcp.CallToolResult{
		IsError:           true,
		Content:           []mcp.Content{&mcp.TextContent{Text: e.Error()}},
		StructuredContent: api.ErrorEnvelope{Error: *e},
	}
}

const instructions = `vigil is a watch host. When you wait on something slow (a CI run, a URL, a timer, an issue, a reply in a thread), do not sleep or poll: register a watch for it (register_watch) and stop. vigil probes it on its own schedule and puts the outcome in your recipient's mailbox; every watch has a deadline, and an expiry is mailed too. list_kinds says what you can wait on and the params each kind takes. wait_watch waits on one watch for up to 60 s and answers the outcome or "still pending" with the version to pass next time; read_mailbox reads your messages from a cursor.`
