package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/valyala/fasthttp"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/api/client"
	"github.com/vigilhq/vigil/api/mcpserver"
	"github.com/vigilhq/vigil/internal/scheduler"
)

// MCPPath is where the host serves its MCP server (streamable HTTP).
const MCPPath = "/mcp"

// DefaultMCPSessions is how many MCP sessions the host holds open at
// most, unless Options.MCPSessions says.
const DefaultMCPSessions = 1000

// mcpSessionTimeout closes an MCP session no request has come for in
// this long, so sessions an agent abandoned do not accumulate.
const mcpSessionTimeout = 30 * time.Minute

// mountMCP serves the MCP server (package api/mcpserver) at /mcp, behind
// the API's authentication: a request without a valid bearer token is
// refused by the same authenticate as /api/v1, in the same envelope.
//
// Each tool call speaks to this API in process, with the bearer token of
// the HTTP request that carried the call (inProcess): the same routes,
// validation, grants and errors as a REST client gets, without a socket.
// A session belongs to the principal that opened it; a request of another
// principal naming it is refused (the SDK compares the TokenInfo's
// UserID, which is the principal).
//
// The SDK's handler is net/http and streams (the standalone GET stream
// carries notifications/tools/list_changed; a POST may answer as a
// stream). fiber's adaptor middleware buffers a whole response before it
// writes any of it, which would hold those streams forever, so serveMCP
// bridges the two itself: the handler runs in a goroutine the request
// owns, its status and headers go out at its first flush (or, for an
// answer it never flushes, when it returns, with the whole body), and each
// flush is written through fasthttp's body stream as it happens. The
// rejected alternative, a net/http server beside fiber on the listener,
// would split one port between two servers and their limits, and the
// authentication would have to be written twice.
func (s *server) mountMCP(app *fiber.App) {
	tr := &inProcess{app: app, limit: s.o.BodyLimit}
	m := mcpserver.New(s.d.Base, mcpserver.Config{
		API: func(req *mcp.CallToolRequest) (mcpserver.API, error) {
			token, base := "", "http://vigil.in-process"
			if req.Extra != nil {
				token, _ = strings.CutPrefix(req.Extra.Header.Get(fiber.HeaderAuthorization), "Bearer ")
				base = mcpBase(req.Extra.Header, base)
			}
			return client.New(base, client.WithToken(token), client.WithHTTPClient(&http.Client{Transport: tr})), nil
		},
		Kinds:    func(context.Context) (api.KindList, error) { return s.kinds(), nil },
		Defaults: mcpserver.Defaults{Every: scheduler.DefaultEvery, Deadline: scheduler.DefaultDeadline},
		// The host's logger, not s.log: the MCP server scopes it with
		// component=mcp, and s.log already carries component=api (a
		// second component key is a duplicate key in a JSON line).
		Logger: s.d.Logger,
	})
	if s.d.Kinds != nil {
		// Owned by the server's base context: it ends at shutdown.
		go m.Follow(s.d.Base, s.d.Kinds.Changed)
	}
	verify := func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		p, _ := ctx.Value(mcpPrincipalKey{}).(string)
		return &auth.TokenInfo{UserID: p}, nil
	}
	sessions := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return m.MCP() }, &mcp.StreamableHTTPOptions{
		Logger: s.log, SessionTimeout: mcpSessionTimeout, MaxRequestBodyBytes: int64(s.o.BodyLimit),
	})
	// A request with a token binds its session to its principal; one the
	// local policy let in without a token opens a session any local
	// request may use, as every request there is the one local principal.
	bound := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(sessions)
	serve := s.serveMCP(func(c *fiber.Ctx) http.Handler {
		if bearer(c) == "" {
			return sessions
		}
		return bound
	})
	// A request without a session id opens one (initialize): one at a
	// time, each counting the sessions open before it is let in, so the
	// bound holds however many arrive at once. The SDK has the session
	// before it answers, which is when serve returns.
	var opening sync.Mutex
	open := func(c *fiber.Ctx) error {
		if c.Get("Mcp-Session-Id") != "" {
			return serve(c)
		}
		opening.Lock()
		defer opening.Unlock()
		n := 0
		for range m.MCP().Sessions() {
			n++
		}
		if n >= s.o.MCPSessions {
			return &api.Error{Code: api.CodeTooManySessions, Message: fmt.Sprintf("the host holds its bound of %d open MCP sessions; retry later, or end a session you no longer use (DELETE /mcp)", s.o.MCPSessions)}
		}
		return serve(c)
	}
	app.Get(MCPPath, s.authenticate, serve)
	app.Post(MCPPath, s.authenticate, open)
	app.Delete(MCPPath, s.authenticate, serve)
}

// mcpBase is the base URL a tool call's in-process requests carry: the
// scheme and host the MCP request reached the host by, so what the API
// answers with the host's own URL (a signal's signal_url) names the host
// as the agent reaches it, not the in-process transport; def when the
// request names no host.
func mcpBase(h http.Header, def string) string {
	host := h.Get("Host")
	u, err := url.Parse("http://" + host)
	if host == "" || err != nil || u.Host != host || u.User != nil || u.Path != "" || u.RawQuery != "" {
		return def
	}
	scheme := "http"
	if h.Get("X-Forwarded-Proto") == "https" {
		scheme = "https"
	}
	return scheme + "://" + host
}

// mcpPrincipalKey carries the authenticated principal to the token
// verifier inside the SDK's handler.
type mcpPrincipalKey struct{}

// serveMCP runs h, a net/http handler, for one authenticated request.
// The request's context ends when the server shuts down, the principal's
// token is revoked, or the client goes away during a stream.
func (s *server) serveMCP(handlerFor func(*fiber.Ctx) http.Handler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		h := handlerFor(c)
		ctx, cancel := s.requestContext(c)
		ctx = context.WithValue(ctx, mcpPrincipalKey{}, Principal(c))
		ctx = context.WithValue(ctx, http.LocalAddrContextKey, c.Context().LocalAddr())
		r, err := netHTTPRequest(ctx, c)
		if err != nil {
			cancel()
			return err
		}
		w := newBridgeWriter()
		go func() {
			defer close(w.done)
			defer w.finish()
			h.ServeHTTP(w, r)
		}()
		select {
		case <-w.committed:
		case <-w.done:
		}
		status, header, body, streaming := w.head()
		for k, vs := range header {
			for _, v := range vs {
				c.Response().Header.Add(k, v)
			}
		}
		c.Status(status)
		if !streaming {
			cancel()
			return c.Send(body)
		}
		sse := strings.HasPrefix(header.Get(fiber.HeaderContentType), "text/event-stream")
		c.Context().SetBodyStreamWriter(func(bw *bufio.Writer) {
			defer func() {
				cancel()
				for range w.chunks { // let the handler finish writing into nothing
				}
				<-w.done
			}()
			if _, err := bw.Write(body); err != nil || bw.Flush() != nil {
				return
			}
			keepAlive := time.NewTimer(s.o.StreamWait)
			defer keepAlive.Stop()
			for {
				select {
				case chunk, ok := <-w.chunks:
					if !ok {
						return
					}
					if _, err := bw.Write(chunk); err != nil || bw.Flush() != nil {
						return // the client went away
					}
				case <-keepAlive.C:
					// Only a write notices a client that went away; an SSE
					// comment between events is one the client ignores.
					if sse {
						if _, err := bw.WriteString(": keep-alive\n\n"); err != nil || bw.Flush() != nil {
							return
						}
					}
				}
				keepAlive.Reset(s.o.StreamWait)
			}
		})
		return nil
	}
}

// netHTTPRequest is the fiber request as a net/http one.
func netHTTPRequest(ctx context.Context, c *fiber.Ctx) (*http.Request, error) {
	r, err := http.NewRequestWithContext(ctx, c.Method(), c.OriginalURL(), bytes.NewReader(bytes.Clone(c.Body())))
	if err != nil {
		return nil, &api.Error{Code: api.CodeMalformedRequest, Message: err.Error()}
	}
	r.Host = c.Hostname()
	r.RemoteAddr = c.Context().RemoteAddr().String()
	c.Request().Header.VisitAll(func(k, v []byte) { r.Header.Add(string(k), string(v)) })
	r.ContentLength = int64(len(c.Body()))
	return r, nil
}

// bridgeWriter is the http.ResponseWriter serveMCP gives the handler.
// Until the handler commits (its first Flush), what it writes is held:
// returning without a flush makes the whole response. After the commit,
// each Flush sends what was written since as one chunk, in order.
type bridgeWriter struct {
	header    http.Header
	committed chan struct{} // closed at the first flush
	chunks    chan []byte   // a streaming response's writes, flush by flush; closed when the handler returns
	done      chan struct{} // closed when the handler has returned

	mu sync.Mutex // guards what follows
	// status is the status written (0: none yet); buf what was written
	// since the last flush; sent is whether committed is closed.
	status int
	buf    bytes.Buffer
	sent   bool
	// frozen and first are the header and the body written as they were
	// at the commit: the start of the response.
	frozen http.Header
	first  []byte
}

func newBridgeWriter() *bridgeWriter {
	return &bridgeWriter{header: http.Header{}, committed: make(chan struct{}), chunks: make(chan []byte, 16), done: make(chan struct{})}
}

func (w *bridgeWriter) Header() http.Header { return w.header }

func (w *bridgeWriter) WriteHeader(status int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status == 0 {
		w.status = status
	}
}

func (w *bridgeWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.buf.Write(p)
}

// Flush commits the response: the first closes committed with what was
// written so far as the start of the body; each later one sends a chunk.
func (w *bridgeWriter) Flush() {
	w.mu.Lock()
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if !w.sent {
		w.sent = true
		w.frozen = w.header.Clone()
		w.first = bytes.Clone(w.buf.Bytes())
		w.buf.Reset()
		w.mu.Unlock()
		close(w.committed)
		return
	}
	if w.buf.Len() == 0 {
		w.mu.Unlock()
		return
	}
	chunk := bytes.Clone(w.buf.Bytes())
	w.buf.Reset()
	w.mu.Unlock()
	select {
	case w.chunks <- chunk:
	case <-w.done:
	}
}

// finish, when the handler returns, sends what a stream still holds and
// ends the chunks.
func (w *bridgeWriter) finish() {
	w.mu.Lock()
	streaming := w.sent
	w.mu.Unlock()
	if streaming {
		w.Flush()
	}
	close(w.chunks)
}

// head is the response's status and header, and either the whole body
// (the handler returned without flushing) or the start of a stream.
// serveMCP calls it once, after committed or done.
func (w *bridgeWriter) head() (status int, h http.Header, body []byte, streaming bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	status = w.status
	if status == 0 {
		status = http.StatusOK
	}
	if w.sent {
		// What was written up to the commit: what the handler has written
		// since goes out through chunks, after it.
		return status, w.frozen, w.first, true
	}
	return status, w.header, bytes.Clone(w.buf.Bytes()), false
}

var _ http.Flusher = (*bridgeWriter)(nil)

// inProcess is an http.RoundTripper that answers a request with the
// fiber app's own handler, in the calling goroutine: the MCP tools' way
// into the API. A long poll holds the caller for its wait, as over a
// socket; the caller's context does not cut it short (the API's handlers
// end their waits at shutdown, at a revocation or at their bound).
type inProcess struct {
	app   *fiber.App
	limit int

	once    sync.Once
	handler fasthttp.RequestHandler
}

func (t *inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	// The handler is taken at the first call, when every route is in.
	t.once.Do(func() { t.handler = t.app.Handler() })
	var body []byte
	if r.Body != nil {
		b, err := io.ReadAll(io.LimitReader(r.Body, int64(t.limit)+1))
		_ = r.Body.Close()
		if err != nil {
			return nil, err
		}
		if len(b) > t.limit {
			return envelope(r, &api.Error{Code: api.CodeBodyTooLarge, Message: "the request body is over the limit"}), nil
		}
		body = b
	}
	var req fasthttp.Request
	req.Header.SetMethod(r.Method)
	req.SetRequestURI(r.URL.RequestURI())
	req.Header.SetHost(r.URL.Host)
	for k, vs := range r.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.SetBody(body)
	var ctx fasthttp.RequestCtx
	ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, nil)
	t.handler(&ctx)
	resp := &http.Response{
		Status: fmt.Sprintf("%d %s", ctx.Response.StatusCode(), http.StatusText(ctx.Response.StatusCode())), StatusCode: ctx.Response.StatusCode(),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{}, Request: r,
		Body: io.NopCloser(bytes.NewReader(bytes.Clone(ctx.Response.Body()))),
	}
	ctx.Response.Header.VisitAll(func(k, v []byte) { resp.Header.Add(string(k), string(v)) })
	return resp, nil
}

// envelope is an error answer made without the app.
func envelope(r *http.Request, e *api.Error) *http.Response {
	b, _ := json.Marshal(api.ErrorEnvelope{Error: *e})
	return &http.Response{StatusCode: api.Status(e.Code), Status: http.StatusText(api.Status(e.Code)), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(b)), Request: r}
}
