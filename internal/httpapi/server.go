package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/valyala/fasthttp"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/authz"
	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/internal/delivery"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/observe"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/internal/recipients"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/internal/signal"
	"github.com/vigilhq/vigil/internal/watchwait"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// Scheduler is what the API needs of the scheduler.
type Scheduler interface {
	Register(ctx context.Context, r scheduler.Registration) (store.Watch, error)
	Cancel(ctx context.Context, id store.ID, reason string) (store.Watch, error)
}

// Seer is what the API reads of a pending watch from the scheduler's
// memory, when its Scheduler has it (a *scheduler.Scheduler does): the
// probes so far and when the last began, written to the row only with a
// change.
type Seer interface {
	Seen(id store.ID) (scheduler.Seen, bool)
}

// SeenReader reads what a pending watch's owner holds in memory of its
// probes, wherever it runs (internal/core's Core.Seen, which on a cluster
// asks the owner within a bound): ok false when nobody answered with it
// and the row's count stands; from is the view's probes_from ("" on one
// host).
type SeenReader interface {
	Seen(ctx context.Context, id store.ID) (seen scheduler.Seen, from string, ok bool)
}

// ChangeWaiter wakes a wait on a watch, when its Scheduler can (a
// *scheduler.Scheduler does): the channel the next change of the watch
// closes, and release, to call once the wait ends; taken before the watch
// is read. Without one, a wait runs to its bound.
type ChangeWaiter interface {
	WaitChange(id store.ID) (<-chan struct{}, func(), error)
}

// Watches reads watch rows.
type Watches interface {
	Get(ctx context.Context, id store.ID) (store.Watch, error)
	ListPage(ctx context.Context, q store.Query) (store.Page, error)
}

// Mailboxes reads mailboxes.
type Mailboxes interface {
	Read(ctx context.Context, rid string, after uint64, limit int, wait time.Duration) ([]store.Message, error)
}

// Recipients manages recipients.
type Recipients interface {
	Put(ctx context.Context, u recipients.Update) (store.RecipientRecord, error)
	Get(ctx context.Context, id string) (store.RecipientRecord, error)
	Delete(ctx context.Context, id string) error
	// CheckPending refuses a new watch for a recipient at its bound of
	// pending watches.
	CheckPending(ctx context.Context, recipient string) error
}

// Plugins is the plugin runtime as the API sees it.
type Plugins interface {
	Plugins() []kind.Info
	Problems() []*plugin.LoadError
	Reload(ctx context.Context) (plugin.Report, error)
}

// DeadLetters reads the fetch issuer's dead-letter list.
type DeadLetters interface {
	DeadLetters(ctx context.Context, after uint64, limit int) ([]api.DeadLetter, error)
}

// Observe records observed items and serves the Work they become.
type Observe interface {
	Record(ctx context.Context, principal, scope string, r observe.Record) (observe.Recorded, error)
	ListWork(ctx context.Context, scope string, st store.WorkState) ([]store.Work, error)
	GetWork(ctx context.Context, id store.ID) (store.Work, []store.WorkInput, error)
	ClaimWork(ctx context.Context, id store.ID, recipient string) (store.Work, []store.WorkInput, error)
	// CompleteWorkAs completes a Work still claimed by claimedBy, as it
	// was when the route checked who may complete it.
	CompleteWorkAs(ctx context.Context, id store.ID, claimedBy string) (store.Work, error)
}

// Deps are the services behind the API.
type Deps struct {
	Scheduler   Scheduler
	Watches     Watches
	Mailboxes   Mailboxes
	Recipients  Recipients
	Plugins     Plugins
	DeadLetters DeadLetters
	Observe     Observe
	// Overview and Node feed the operator's views (views.go).
	Overview Overviewer
	Node     NodeInfo
	// Refusals counts refused requests (nil: not counted).
	Refusals Refusals
	// Seen reads a pending watch's probes from its owner (nil: the
	// Scheduler's, when it is a Seer).
	Seen   SeenReader
	Logger *slog.Logger
	// Base ends long polls and streams when the server shuts down.
	Base context.Context

	// Kinds are every kind the host serves (nil: the plugins'), for
	// GET /kinds and the MCP server at /mcp (kinds.go, mcp.go). With it,
	// New starts one goroutine that follows its changes until Base ends.
	Kinds KindSource
	// Idem reads the idempotency keys' records (nil: Watches, when it is
	// an IdemReader; else a keyed request is decided by its write alone).
	Idem IdemReader
	// Clock dates a keyed request (default the wall clock).
	Clock clock.Clock
	// Signals answers signals' capability URLs (nil: every such URL
	// names none).
	Signals Signals
	// Heartbeats takes heartbeats' pings (nil: every ping URL names
	// none).
	Heartbeats Heartbeats
	// Hooks takes inbound hooks (nil: every hook source is unknown, 401).
	Hooks Hooks
}

// Options tune the server.
type Options struct {
	// Auth holds the policy in force: the tokens, the principals they
	// authenticate and their grants. Nil is authz.Local(): no tokens, one
	// local principal that may do everything (the caller binds to
	// loopback only).
	Auth *authz.Guard
	// Metrics, when set, is served at /metrics (to the operator role).
	Metrics http.Handler
	// BodyLimit bounds a request body (default 1 MiB).
	BodyLimit int
	// StreamWait is how long an SSE stream waits for a message before it
	// writes a keep-alive comment (default 15 s).
	StreamWait time.Duration
	// ReadTimeout bounds reading one request, headers and body: a client
	// that stalls past it is answered 408 request_timeout (default 75 s,
	// above the longest long poll).
	ReadTimeout time.Duration
	// Console, when set, is the operator's web console, served at the
	// paths it serves outside /api/ (views.go).
	Console Console
	// MCPSessions bounds the open MCP sessions at /mcp (default 1000): an
	// initialize past it is 503 too_many_sessions.
	MCPSessions int
}

// Transport limits. A request line and headers that do not fit in
// HeaderLimit bytes answer 431 headers_too_large; a request target over
// MaxURI bytes answers 414 uri_too_long, and so does a request line longer
// than the whole buffer when the app is served on Listener (fasthttp
// reports only that its buffer overflowed; Listener's connections can tell
// whether the request line ended inside it).
const (
	HeaderLimit = 8 << 10
	MaxURI      = 4 << 10
)

type server struct {
	d        Deps
	o        Options
	log      *slog.Logger
	refusals Refusals
	routes   []fiber.Route
	cursors  cursorCodec
	idem     IdemReader
	clock    clock.Clock
}

// New builds the fiber app with every route.
func New(d Deps, o Options) *fiber.App {
	if o.BodyLimit <= 0 {
		o.BodyLimit = 1 << 20
	}
	if o.StreamWait <= 0 {
		o.StreamWait = 15 * time.Second
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = 75 * time.Second
	}
	if o.MCPSessions <= 0 {
		o.MCPSessions = DefaultMCPSessions
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Base == nil {
		d.Base = context.Background()
	}
	if o.Auth == nil {
		o.Auth = authz.NewGuard(authz.Local())
	}
	s := &server{d: d, o: o, log: d.Logger.With("component", "api"), refusals: d.Refusals, cursors: newCursorCodec(), idem: d.Idem, clock: d.Clock}
	if s.refusals == nil {
		s.refusals = nopRefusals{}
	}
	if s.idem == nil {
		s.idem, _ = d.Watches.(IdemReader)
	}
	if s.clock == nil {
		s.clock = clock.Wall{}
	}
	app := fiber.New(fiber.Config{
		AppName:               "vigil",
		DisableStartupMessage: true,
		// Strings from the request (path params, query values) are copies,
		// not views of fasthttp's reused buffers: a recipient id outlives
		// its request as a long-poll hub key and inside an SSE stream.
		Immutable:      true,
		BodyLimit:      o.BodyLimit,
		ErrorHandler:   s.errorHandler,
		ReadTimeout:    o.ReadTimeout,
		IdleTimeout:    120 * time.Second,
		ReadBufferSize: HeaderLimit,
	})
	// What fasthttp fails to read never reaches a handler: answer it here,
	// in the envelope, by the error's type (fiber's own translation reads
	// error text and answers a broken connection 502).
	app.Server().ErrorHandler = transportError
	// A handler that panics answers 500 internal; it never takes the
	// daemon down.
	app.Use(recover.New())
	app.Use(func(c *fiber.Ctx) error {
		if n := len(c.Request().RequestURI()); n > MaxURI {
			return &api.Error{Code: api.CodeURITooLong, Message: fmt.Sprintf("the request target is %d bytes; the limit is %d", n, MaxURI)}
		}
		return c.Next()
	})
	app.Get("/healthz", func(c *fiber.Ctx) error { return c.JSON(fiber.Map{"status": "ok"}) })
	if o.Metrics != nil {
		metrics := adaptor.HTTPHandler(o.Metrics)
		app.Get("/metrics", s.authenticate, func(c *fiber.Ctx) error {
			if err := s.allow(c, authz.Action{Verb: authz.Operate}); err != nil {
				return err
			}
			return metrics(c)
		})
	}
	// Before the group: the capability URL's token is its credential.
	s.signalRoutes(app)
	s.heartbeatRoutes(app)
	s.hookRoutes(app)
	v1 := app.Group("/api/v1", s.authenticate, clientWrites)
	v1.Get("/openapi.yaml", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, "application/yaml")
		return c.Send(api.OpenAPI())
	})
	v1.Get("/plugins", s.listPlugins)
	v1.Post("/plugins/reload", s.reloadPlugins)
	v1.Get("/kinds", s.listKinds)
	v1.Post("/watches", s.idempotent(watchAnswer), s.createWatch)
	v1.Get("/watches", s.listWatches)
	v1.Get("/watches/:id", s.getWatch)
	v1.Delete("/watches/:id", s.cancelWatch)
	v1.Put("/recipients/:id", s.putRecipient)
	v1.Get("/recipients/:id", s.getRecipient)
	v1.Delete("/recipients/:id", s.deleteRecipient)
	v1.Put("/recipients/:id/phase", s.idempotent(phaseAnswer), s.reportPhase)
	v1.Post("/recipients/:id/activity", s.idempotent(activityAnswer), s.reportActivity)
	v1.Put("/recipients/:id/reminder", s.setReminder)
	v1.Delete("/recipients/:id/reminder", s.clearReminder)
	v1.Get("/recipients/:id/mailbox", s.readMailbox)
	v1.Get("/recipients/:id/mailbox/stream", s.streamMailbox)
	v1.Get("/fetch/dead-letters", s.readDeadLetters)
	v1.Post("/scopes/:scope/observe", s.observing, s.idempotent(recordAnswer), s.recordObserved)
	v1.Get("/scopes/:scope/work", s.observing, s.listWork)
	v1.Get("/work/:id", s.observing, s.getWork)
	v1.Post("/work/:id/claim", s.observing, s.idempotent(s.claimAnswer), s.claimWork)
	v1.Post("/work/:id/complete", s.observing, s.idempotent(completeAnswer), s.completeWork)
	s.mountMCP(app)
	s.viewRoutes(app, v1)
	s.routes = app.GetRoutes(true)
	app.Use(func(c *fiber.Ctx) error {
		var allowed []string
		for _, r := range s.routes {
			if r.Method != c.Method() && r.Method != fiber.MethodHead && matches(r.Path, c.Path()) {
				allowed = append(allowed, r.Method)
			}
		}
		if len(allowed) > 0 {
			c.Set(fiber.HeaderAllow, strings.Join(allowed, ", "))
			return &api.Error{Code: api.CodeMethodNotAllowed, Message: c.Method() + " is not allowed on " + c.Path() + "; allowed: " + strings.Join(allowed, ", ")}
		}
		return &api.Error{Code: api.CodeNotFound, Message: "no route " + c.Method() + " " + c.Path()}
	})
	return app
}

// matches reports whether path fits a route pattern with :params.
func matches(pattern, path string) bool {
	ps := strings.Split(strings.Trim(pattern, "/"), "/")
	xs := strings.Split(strings.Trim(path, "/"), "/")
	if len(ps) != len(xs) {
		return false
	}
	for i := range ps {
		if !strings.HasPrefix(ps[i], ":") && ps[i] != xs[i] {
			return false
		}
	}
	return true
}

// decode reads a JSON body strictly into v.
func decode(c *fiber.Ctx, v any) error {
	body := c.Body()
	if len(bytes.TrimSpace(body)) == 0 {
		return &api.Error{Code: api.CodeMalformedJSON, Message: "the request needs a JSON body"}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		const unknown = "json: unknown field "
		if msg := err.Error(); strings.HasPrefix(msg, unknown) {
			field := strings.Trim(strings.TrimPrefix(msg, unknown), `"`)
			return &api.Error{Code: api.CodeInvalidField, Field: field, Message: "unknown field"}
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &api.Error{Code: api.CodeInvalidField, Field: te.Field, Message: "want " + te.Type.String() + ", got JSON " + te.Value}
		}
		return &api.Error{Code: api.CodeMalformedJSON, Message: err.Error()}
	}
	if dec.More() {
		return &api.Error{Code: api.CodeMalformedJSON, Message: "trailing data after the JSON body"}
	}
	return nil
}

// transportError answers a request fasthttp could not read. The
// connection is closed after it.
func transportError(ctx *fasthttp.RequestCtx, err error) {
	e := transportAPIError(err)
	if e.Code == api.CodeHeadersTooLarge && requestLineOverflowed(ctx.Conn()) {
		e = &api.Error{Code: api.CodeURITooLong, Message: fmt.Sprintf("the request line is over %d bytes", HeaderLimit)}
	}
	b, _ := json.Marshal(api.ErrorEnvelope{Error: *e})
	ctx.Response.Reset()
	ctx.SetStatusCode(api.Status(e.Code))
	ctx.SetContentType(fiber.MIMEApplicationJSON)
	ctx.SetBody(b)
}

// transportAPIError classifies what fasthttp reports by type, never by
// its text.
func transportAPIError(err error) *api.Error {
	var (
		small *fasthttp.ErrSmallBuffer
		ne    net.Error
	)
	switch {
	case errors.As(err, &small):
		return &api.Error{Code: api.CodeHeadersTooLarge, Message: fmt.Sprintf("the request line and headers are over %d bytes", HeaderLimit)}
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		return &api.Error{Code: api.CodeBodyTooLarge, Message: "the request body is over the limit"}
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, fasthttp.ErrTimeout), errors.As(err, &ne) && ne.Timeout():
		return &api.Error{Code: api.CodeRequestTimeout, Message: "the request did not arrive within the read timeout"}
	}
	return &api.Error{Code: api.CodeMalformedRequest, Message: "the request is not HTTP/1.x this server can read"}
}

func (s *server) errorHandler(c *fiber.Ctx, err error) error {
	e := toAPIError(err)
	var (
		rf     *refused
		hidden *kind.HiddenError
	)
	switch {
	case errors.As(err, &rf):
		s.audit(c, e.Code, rf.reason)
	case errors.As(err, &hidden):
		// A kind's admission hid a record the principal may not read,
		// answering as for an unknown id; the reason is the log's.
		s.audit(c, e.Code, "hidden: "+hidden.Reason.Error())
	case e.Code == api.CodeNotAReporter:
		s.audit(c, e.Code, e.Message)
	}
	if e.Code == api.CodeInternal {
		s.log.Error("request failed", "method", c.Method(), "path", logPath(c), "err", err)
	}
	if e.Code == api.CodeStoreUnavailable {
		s.log.Warn("the store is unavailable", "method", c.Method(), "path", logPath(c), "err", err)
	}
	if e.RetryAfter > 0 {
		// A refusal that says when to come back (plugin_set_mismatch,
		// rate_limited, store_busy, store_unavailable): whole seconds,
		// rounded up.
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	return c.Status(api.Status(e.Code)).JSON(api.ErrorEnvelope{Error: *e})
}

// StoreBusyRetryAfter is the Retry-After of a 503 store_busy: long
// enough for a burst of writes to one recipient to drain, short enough
// that an agent retrying is not kept waiting.
const StoreBusyRetryAfter = time.Second

// StorageFullRetryAfter is the Retry-After of a 507 insufficient_storage:
// space comes back when an operator frees it, so a client need not ask
// more often than this.
const StorageFullRetryAfter = 10 * time.Second

// clientWrites marks the context of every request that may write (any
// method but GET and HEAD) as a client's write (store.ClientWrite): a
// store short of space refuses it before the host's own writes, which
// settle and mail the watches clients registered.
func clientWrites(c *fiber.Ctx) error {
	if m := c.Method(); m != fiber.MethodGet && m != fiber.MethodHead {
		c.SetUserContext(store.ClientWrite(c.UserContext()))
	}
	return c.Next()
}

// toAPIError is the one translation from the host's errors to the API's.
func toAPIError(err error) *api.Error {
	var (
		ae  *api.Error // every service's refusal: scheduler, recipients, kinds, observe
		ce  *kind.CallError
		rge *plugin.RegistryError
		fe  *fiber.Error
		tmp *store.TooManyPendingError
	)
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &tmp):
		// Registrations that raced to the recipient's bound: the last
		// place went to another, in the store's transaction.
		return recipients.TooManyPending(tmp.Recipient, tmp.Max)
	case errors.As(err, &ce):
		return &api.Error{Code: api.CodePluginFault, Message: ce.Error()}
	case errors.Is(err, observe.ErrUnknownScope):
		return &api.Error{Code: api.CodeNotFound, Message: err.Error()}
	case errors.Is(err, store.ErrStorageFull):
		// The data directory (or a JetStream server) has no room: nothing
		// was written, and the operator's freeing space lets the same
		// request land, without a restart. Where and how much is the
		// log's (the store says it once), not the client's.
		return &api.Error{Code: api.CodeInsufficientStorage, Message: "the host's disk is too full to take this write; nothing was written, retry once space is freed", RetryAfter: StorageFullRetryAfter}
	case errors.Is(err, store.ErrValueTooLarge):
		// A record the request would write is over what the store keeps
		// under one key: the request's own input made it so.
		return &api.Error{Code: api.CodeInvalidField, Message: "the request would write a record larger than the store keeps in one: send less; nothing was written"}
	case errors.As(err, &rge):
		// The operator's registry file: say what is wrong with it.
		return &api.Error{Code: api.CodeInternal, Message: rge.Error()}
	case errors.Is(err, store.ErrNotFound), errors.Is(err, delivery.ErrUnknownRecipient):
		return &api.Error{Code: api.CodeNotFound, Message: err.Error()}
	case errors.Is(err, store.ErrIdemReused):
		return &api.Error{Code: api.CodeIdempotencyKeyReused, Field: api.HeaderIdempotencyKey,
			Message: "the idempotency key was used for another request (another method, path or body); nothing was written: use a fresh key for each request"}
	case errors.Is(err, store.ErrUnavailable):
		// Before ErrBusy: a commit retried after an unanswered attempt
		// may wrap both, and then it may have been written.
		return unavailableError(err)
	case errors.Is(err, store.ErrBusy):
		// Other writers kept winning the records this write needs (a
		// burst for one recipient, other nodes): nothing was written, and
		// the same request a moment later will most likely land.
		return &api.Error{Code: api.CodeStoreBusy, Message: "the store's records kept changing under this write (other writers for the same records); nothing was written, retry shortly", RetryAfter: StoreBusyRetryAfter}
	case errors.As(err, &fe):
		switch fe.Code {
		case fiber.StatusRequestEntityTooLarge:
			return &api.Error{Code: api.CodeBodyTooLarge, Message: "the request body is over the limit"}
		case fiber.StatusNotFound:
			return &api.Error{Code: api.CodeNotFound, Message: fe.Message}
		case fiber.StatusMethodNotAllowed:
			return &api.Error{Code: api.CodeMethodNotAllowed, Message: fe.Message}
		case fiber.StatusBadRequest:
			return &api.Error{Code: api.CodeMalformedJSON, Message: fe.Message}
		}
	}
	return &api.Error{Code: api.CodeInternal, Message: "internal error"}
}

// param is a path parameter percent-decoded (fiber's Params is the raw
// path segment); ok is false when the segment is not valid
// percent-encoding.
func param(c *fiber.Ctx, name string) (v string, ok bool) {
	raw := c.Params(name)
	v, err := url.PathUnescape(raw)
	if err != nil {
		return raw, false
	}
	return v, true
}

func recipientParam(c *fiber.Ctx) (string, error) {
	id, ok := param(c, "id")
	if !ok || !store.ValidRecipientID(id) {
		return "", &api.Error{Code: api.CodeInvalidRecipient, Field: "id", Message: fmt.Sprintf("recipient id %q: %s", id, store.RecipientIDGrammar)}
	}
	return id, nil
}

func (s *server) createWatch(c *fiber.Ctx) error {
	var req api.WatchRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Kind == "" {
		return &api.Error{Code: api.CodeInvalidField, Field: "kind", Message: "required"}
	}
	if !store.ValidRecipientID(req.Recipient.ID) {
		return &api.Error{Code: api.CodeInvalidRecipient, Field: "recipient.id", Message: store.RecipientIDGrammar}
	}
	if err := s.allow(c, authz.Action{Verb: authz.Register, Recipient: req.Recipient.ID}); err != nil {
		return err
	}
	reg := scheduler.Registration{Kind: req.Kind, Params: req.Params, Recipient: store.Recipient{ID: req.Recipient.ID},
		RegisteredBy: Principal(c), Caller: caller(c), ExpiresAt: req.ExpiresAt, Bounded: true}
	if req.Every != "" {
		d, err := time.ParseDuration(req.Every)
		if err != nil {
			return &api.Error{Code: api.CodeInvalidField, Field: "every", Message: "want a duration such as 30s"}
		}
		reg.Every = &d
	}
	if err := s.d.Recipients.CheckPending(c.UserContext(), reg.Recipient.ID); err != nil {
		return err
	}
	if req.Kind == signal.Name {
		// The capability is made here, shown in this answer once: the
		// store keeps its hash, and a replay of the idempotency key's
		// record answers the watch without it.
		tok, err := newSignalToken()
		if err != nil {
			return err
		}
		reg.Token = tok
	}
	w, err := s.d.Scheduler.Register(c.UserContext(), reg)
	if err != nil {
		return err
	}
	a, err := watchAnswer(c.UserContext(), w)
	if err != nil {
		return err
	}
	if reg.Token != "" {
		out := toWatch(w)
		out.SignalURL = signalURL(c, reg.Token)
		if a, err = answerJSON(a.Status, a.Location, out); err != nil {
			return err
		}
		c.Set(fiber.HeaderCacheControl, "no-store")
	}
	return send(c, a)
}

// listWatches answers one page of watches, oldest first, and the cursor
// of the next page when there may be more.
func (s *server) listWatches(c *fiber.Ctx) error {
	f := store.Filter{Recipient: c.Query("recipient"), State: store.State(c.Query("state")), Kind: c.Query("kind"), RegisteredBy: c.Query("registered_by")}
	if f.Recipient != "" && !store.ValidRecipientID(f.Recipient) {
		return &api.Error{Code: api.CodeInvalidRecipient, Field: "recipient", Message: fmt.Sprintf("recipient id %q: %s", f.Recipient, store.RecipientIDGrammar)}
	}
	if f.RegisteredBy != "" && !store.ValidRecipientID(f.RegisteredBy) {
		return &api.Error{Code: api.CodeInvalidField, Field: "registered_by", Message: fmt.Sprintf("principal %q: %s", f.RegisteredBy, store.RecipientIDGrammar)}
	}
	if f.State != "" && !f.State.Valid() {
		return &api.Error{Code: api.CodeInvalidField, Field: "state", Message: "want pending, fired, expired, cancelled, undeliverable or unwatchable"}
	}
	if f.Kind != "" && !abi.ValidKind(f.Kind) {
		return &api.Error{Code: api.CodeInvalidField, Field: "kind", Message: fmt.Sprintf("want 1-%d of a-z 0-9 . _ -", abi.MaxKindLen)}
	}
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	after, err := s.cursors.decode(c.Query("after"))
	if err != nil {
		return err
	}
	// An explicit filter the principal may not use is refused, never an
	// empty list that would read as "no watches here"; without one, the
	// list holds only what the principal may see.
	q := store.Query{Filter: f, After: after, Limit: limit}
	if f.Recipient != "" {
		if err := s.allow(c, authz.Action{Verb: authz.Read, Recipient: f.Recipient}); err != nil {
			return err
		}
	}
	if f.RegisteredBy != "" {
		if err := s.allow(c, authz.Action{Verb: authz.ListRegistered, RegisteredBy: f.RegisteredBy}); err != nil {
			return err
		}
	}
	pr := principal(c)
	if f.Recipient == "" && f.RegisteredBy == "" && !pr.Operator() {
		q.Match = func(w store.Watch) bool {
			return pr.Allows(authz.Action{Verb: authz.SeeWatch, Recipient: w.Recipient.ID, RegisteredBy: w.RegisteredBy})
		}
	}
	p, err := s.d.Watches.ListPage(c.UserContext(), q)
	if err != nil {
		return err
	}
	out := api.WatchList{Watches: make([]api.Watch, 0, len(p.Watches)), HeldAside: p.HeldAside}
	if f.Recipient == "" && !pr.Operator() {
		out.HeldAside = 0 // rows nobody can attribute: the operator's to see
	}
	for _, w := range p.Watches {
		out.Watches = append(out.Watches, toWatch(w))
	}
	if p.Next != (store.ID{}) {
		out.Next = s.cursors.encode(p.Next)
	}
	return c.JSON(out)
}

// watchFor reads the watch the route's :id names, as the principal may
// see it: an unknown id, a malformed one and one it may not see all answer
// the same 404.
func (s *server) watchFor(c *fiber.Ctx) (store.Watch, error) {
	v, _ := param(c, "id")
	notFound := &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no watch %q", v)}
	id, err := store.ParseID(v)
	if err != nil {
		return store.Watch{}, notFound
	}
	w, err := s.d.Watches.Get(c.UserContext(), id)
	if errors.Is(err, store.ErrNotFound) {
		return w, notFound
	}
	if err != nil {
		return w, err
	}
	return w, s.visible(c, authz.Action{Verb: authz.SeeWatch, Recipient: w.Recipient.ID, RegisteredBy: w.RegisteredBy, ID: w.ID.String()}, notFound)
}

// getWatch answers a watch. With ?wait=D it is a bounded long poll on
// the watch's version: at once when the version differs from ?since= (or
// since is empty), else as soon as the scheduler changes the watch, else
// at the end of the wait with the watch unchanged; 200 either way.
func (s *server) getWatch(c *fiber.Ctx) error {
	w, err := s.watchFor(c)
	if err != nil {
		return err
	}
	wait, waiting, err := waitParam(c)
	if err != nil {
		return err
	}
	if !waiting {
		return c.JSON(s.watchView(c.UserContext(), w))
	}
	since := c.Query("since")
	ctx, cancel := s.requestContext(c)
	defer cancel()
	ctx, stop := context.WithTimeout(ctx, wait)
	defer stop()
	cw, _ := s.d.Scheduler.(ChangeWaiter)
	for {
		var changed <-chan struct{}
		release := func() {}
		if cw != nil {
			ch, rel, err := cw.WaitChange(w.ID)
			if errors.Is(err, watchwait.ErrTooManyWaiters) {
				return &api.Error{Code: api.CodeTooManyWaiters, Message: "the host holds its bound of requests waiting on a watch; retry later, or without wait"}
			}
			if err != nil {
				return err
			}
			changed, release = ch, rel
		}
		// Read after taking the channel: a change in between wakes it.
		cur, err := s.d.Watches.Get(c.UserContext(), w.ID)
		if err != nil {
			release()
			if errors.Is(err, store.ErrNotFound) {
				return &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no watch %q", w.ID)}
			}
			return err
		}
		// The view's own reads are bounded by themselves (the owner's
		// answer by its bound), not by the wait: at its end the owner is
		// still asked.
		out := s.watchView(c.UserContext(), cur)
		if out.Version != since || ctx.Err() != nil {
			release()
			if principal(c).Revoked() && !s.stillAuthenticated(c) {
				return revokedError()
			}
			return c.JSON(out)
		}
		select {
		case <-changed:
		case <-ctx.Done():
		}
		release()
	}
}

// watchView is a watch as GET answers it: a pending one with what its
// owner's scheduler holds in memory of its probes.
func (s *server) watchView(ctx context.Context, w store.Watch) api.Watch {
	if w.State != store.Pending {
		return toWatch(w)
	}
	if s.d.Seen != nil {
		seen, from, ok := s.d.Seen.Seen(ctx, w.ID)
		if !ok {
			seen = scheduler.Seen{}
		}
		out := withSeen(w, seen)
		out.ProbesFrom = from
		return out
	}
	if sr, ok := s.d.Scheduler.(Seer); ok {
		if seen, ok := sr.Seen(w.ID); ok {
			return withSeen(w, seen)
		}
	}
	return toWatch(w)
}

func (s *server) cancelWatch(c *fiber.Ctx) error {
	w, err := s.watchFor(c)
	if err != nil {
		return err
	}
	if err := s.allow(c, authz.Action{Verb: authz.ChangeWatch, Recipient: w.Recipient.ID, RegisteredBy: w.RegisteredBy, ID: w.ID.String()}); err != nil {
		return err
	}
	w, err = s.d.Scheduler.Cancel(c.UserContext(), w.ID, "cancelled through the API by "+Principal(c))
	if err != nil {
		return err
	}
	return c.JSON(toWatch(w))
}

func (s *server) listPlugins(c *fiber.Ctx) error {
	return c.JSON(toPluginList(s.d.Plugins.Plugins(), s.d.Plugins.Problems()))
}

func (s *server) reloadPlugins(c *fiber.Ctx) error {
	if err := s.allow(c, authz.Action{Verb: authz.Administer, What: "reload the plugins"}); err != nil {
		return err
	}
	rep, err := s.d.Plugins.Reload(c.UserContext())
	if err != nil {
		return err
	}
	return c.JSON(toPluginList(rep.Loaded, rep.Problems))
}

func (s *server) putRecipient(c *fiber.Ctx) error {
	id, err := recipientParam(c)
	if err != nil {
		return err
	}
	if err := s.allow(c, authz.Action{Verb: authz.ActFor, Recipient: id}); err != nil {
		return err
	}
	var req api.RecipientRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	u := recipients.Update{ID: id, Status: store.RecipientStatus(req.Status), Workspace: req.Workspace, Caller: caller(c)}
	if req.Webhook != nil {
		u.Webhook = &store.Webhook{URL: req.Webhook.URL, Secret: req.Webhook.Secret}
	}
	for _, r := range req.Refs {
		u.Refs = append(u.Refs, store.Ref{Kind: r.Kind, Params: r.Params})
	}
	for i, h := range req.Heartbeats {
		period, err := time.ParseDuration(h.Period)
		if err != nil {
			return &api.Error{Code: api.CodeInvalidField, Field: fmt.Sprintf("heartbeats[%d].period", i), Message: "want a duration such as 5m"}
		}
		grace, err := time.ParseDuration(h.Grace)
		if err != nil {
			return &api.Error{Code: api.CodeInvalidField, Field: fmt.Sprintf("heartbeats[%d].grace", i), Message: "want a duration such as 1m"}
		}
		u.Heartbeats = append(u.Heartbeats, recipients.HeartbeatDecl{Name: h.Name, Period: period, Grace: grace})
	}
	rec, err := s.d.Recipients.Put(c.UserContext(), u)
	if err != nil {
		return err
	}
	return c.JSON(s.recipientView(c, rec))
}

func (s *server) getRecipient(c *fiber.Ctx) error {
	id, err := recipientParam(c)
	if err != nil {
		return err
	}
	if err := s.allow(c, authz.Action{Verb: authz.Read, Recipient: id}); err != nil {
		return err
	}
	rec, err := s.d.Recipients.Get(c.UserContext(), id)
	if err != nil {
		return err
	}
	return c.JSON(s.recipientView(c, rec))
}

func (s *server) deleteRecipient(c *fiber.Ctx) error {
	id, err := recipientParam(c)
	if err != nil {
		return err
	}
	if err := s.allow(c, authz.Action{Verb: authz.ActFor, Recipient: id}); err != nil {
		return err
	}
	if err := s.d.Recipients.Delete(c.UserContext(), id); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// cursor reads the SSE Last-Event-ID, else ?after=. Last-Event-ID wins:
// an EventSource opened on ?after=5 reconnects to the same URL with the
// id of the last event it saw, and must resume there, not at 5.
func cursor(c *fiber.Ctx) (uint64, error) {
	v := c.Get("Last-Event-ID")
	if v == "" {
		v = c.Query("after")
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, &api.Error{Code: api.CodeInvalidField, Field: "after", Message: "want a message sequence number"}
	}
	return n, nil
}

func (s *server) readMailbox(c *fiber.Ctx) error {
	id, err := recipientParam(c)
	if err != nil {
		return err
	}
	if err := s.allow(c, authz.Action{Verb: authz.Read, Recipient: id}); err != nil {
		return err
	}
	after, err := cursor(c)
	if err != nil {
		return err
	}
	wait, _, err := waitParam(c)
	if err != nil {
		return err
	}
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.requestContext(c)
	defer cancel()
	msgs, err := s.d.Mailboxes.Read(ctx, id, after, limit, wait)
	if principal(c).Revoked() && !s.stillAuthenticated(c) {
		return revokedError()
	}
	if err != nil {
		return err
	}
	out := api.Mailbox{Messages: make([]api.Message, 0, len(msgs)), Next: after}
	for _, m := range msgs {
		out.Messages = append(out.Messages, toMessage(m))
		out.Next = m.Seq
	}
	return c.JSON(out)
}

// waitParam reads a long poll's ?wait=, a Go duration from 0s to the
// longest wait (delivery.MaxWait); waiting is false when it is absent,
// and an empty one is refused like any other that is not a duration. One
// reading for every route that long-polls, so their bounds and their
// refusals cannot drift apart.
func waitParam(c *fiber.Ctx) (wait time.Duration, waiting bool, err error) {
	raw, ok := c.Queries()["wait"]
	if !ok {
		return 0, false, nil
	}
	wait, err = time.ParseDuration(raw)
	if err != nil || wait < 0 || wait > delivery.MaxWait {
		return 0, false, &api.Error{Code: api.CodeInvalidField, Field: "wait",
			Message: fmt.Sprintf("want a duration from 0s to %ds", int(delivery.MaxWait/time.Second))}
	}
	return wait, true, nil
}

// limitParam reads ?limit=, 1 to 1000, default 100.
func limitParam(c *fiber.Ctx) (int, error) { return parseLimit(c.Query("limit")) }

// readDeadLetters answers the fetch commands refused before any request
// went out, oldest first, from ?after=.
func (s *server) readDeadLetters(c *fiber.Ctx) error {
	if err := s.allow(c, authz.Action{Verb: authz.Administer, What: "read the fetch dead letters"}); err != nil {
		return err
	}
	after, err := cursor(c)
	if err != nil {
		return err
	}
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	out := api.DeadLetters{DeadLetters: []api.DeadLetter{}, Next: after}
	if s.d.DeadLetters == nil {
		return c.JSON(out)
	}
	dls, err := s.d.DeadLetters.DeadLetters(c.UserContext(), after, limit)
	if err != nil {
		return err
	}
	for _, d := range dls {
		if d.HeaderNames == nil {
			d.HeaderNames = []string{}
		}
		out.DeadLetters = append(out.DeadLetters, d)
		out.Next = d.Seq
	}
	return c.JSON(out)
}

// streamMailbox is a server-sent-events stream of the mailbox from the
// cursor: each message is an event whose id is its seq, so a client that
// reconnects with Last-Event-ID misses and repeats nothing.
func (s *server) streamMailbox(c *fiber.Ctx) error {
	id, err := recipientParam(c)
	if err != nil {
		return err
	}
	if err := s.allow(c, authz.Action{Verb: authz.Read, Recipient: id}); err != nil {
		return err
	}
	after, err := cursor(c)
	if err != nil {
		return err
	}
	if _, err := s.d.Recipients.Get(c.UserContext(), id); err != nil {
		return err
	}
	c.Set("Content-Type", "text/event-stream")
	c.Set("Cache-Control", "no-cache")
	c.Set("Connection", "keep-alive")
	// The stream ends when the server shuts down or the token is revoked.
	base, cancel := s.requestContext(c)
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer cancel()
		// A comment first: the client has the headers, and knows the
		// stream is open, before the first message or keep-alive.
		if _, err := w.WriteString(": open\n\n"); err != nil || w.Flush() != nil {
			return
		}
		cur := after
		for base.Err() == nil {
			msgs, err := s.d.Mailboxes.Read(base, id, cur, 100, s.o.StreamWait)
			if err != nil {
				return
			}
			if len(msgs) == 0 {
				if _, err := w.WriteString(": keep-alive\n\n"); err != nil {
					return
				}
			}
			for _, m := range msgs {
				m.Push = nil // the event's data is the webhook body
				b, _ := json.Marshal(toMessage(m))
				fmt.Fprintf(w, "id: %d\nevent: message\ndata: %s\n\n", m.Seq, b)
				cur = m.Seq
			}
			if err := w.Flush(); err != nil {
				return // the client went away
			}
		}
	})
	return nil
}
