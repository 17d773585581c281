package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/vigilhq/vigil/api"
)

// Client calls one vigil server. It is safe for concurrent use.
type Client struct {
	base  string
	token string
	hc    *http.Client
	retry Retry
}

// Option configures a Client.
type Option func(*Client)

// WithToken sends token as "Authorization: Bearer <token>" on every
// request. An empty token sends no Authorization header.
func WithToken(token string) Option {
	return func(c *Client) { c.token = token }
}

// WithHTTPClient makes the client use hc. Long polls and streams last as
// long as their context allows, so hc.Timeout, if set, must be longer than
// the longest wait the caller asks for (a stream ends at hc.Timeout).
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc != nil {
			c.hc = hc
		}
	}
}

// New returns a client of the server at baseURL ("http://127.0.0.1:7878").
// Its default http.Client has no overall timeout: every call is bounded by
// its context, and a long poll by its wait. Its creating calls retry as
// DefaultRetry says.
func New(baseURL string, opts ...Option) *Client {
	c := &Client{base: strings.TrimRight(baseURL, "/"), hc: &http.Client{}, retry: DefaultRetry}
	for _, o := range opts {
		o(c)
	}
	return c
}

// ErrStreamEnded: the server closed the mailbox stream (it shut down, or
// the connection broke). Reconnect from the last seq handled.
var ErrStreamEnded = errors.New("client: the mailbox stream ended")

// errRequest: a request that could not be built (its body does not
// encode, its URL does not parse), so was never sent.
var errRequest = errors.New("client: building the request")

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// maxEvent bounds one server-sent event.
const maxEvent = 4 << 20

// Health calls /healthz; nil means the server answered 2xx.
func (c *Client) Health(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "/healthz", nil, nil, nil)
}

// ListPlugins lists the loaded plugins and the files that did not load.
func (c *Client) ListPlugins(ctx context.Context) (api.PluginList, error) {
	var out api.PluginList
	err := c.do(ctx, http.MethodGet, "/api/v1/plugins", nil, nil, &out)
	return out, err
}

// ReloadPlugins makes the server reload its plugins, and returns what is
// loaded afterwards.
func (c *Client) ReloadPlugins(ctx context.Context) (api.PluginList, error) {
	var out api.PluginList
	err := c.do(ctx, http.MethodPost, "/api/v1/plugins/reload", nil, nil, &out)
	return out, err
}

// Kinds lists every kind the host serves (plugins and built in), each
// with its summary, params schema and example.
func (c *Client) Kinds(ctx context.Context) (api.KindList, error) {
	var out api.KindList
	err := c.do(ctx, http.MethodGet, "/api/v1/kinds", nil, nil, &out)
	return out, err
}

// WaitKinds is GET /kinds?wait=wait&since=since: the kinds at once when
// their version differs from since (or since is empty), else when they
// change, else at the end of the wait with the list unchanged (compare
// Version with since to tell which). wait is at most 60 s.
func (c *Client) WaitKinds(ctx context.Context, since string, wait time.Duration) (api.KindList, error) {
	q := url.Values{}
	q.Set("wait", wait.String())
	if since != "" {
		q.Set("since", since)
	}
	var out api.KindList
	err := c.do(ctx, http.MethodGet, "/api/v1/kinds", q, nil, &out)
	return out, err
}

// CreateWatch registers a watch. The watch is durable when it returns.
func (c *Client) CreateWatch(ctx context.Context, req api.WatchRequest) (api.Watch, error) {
	var out api.Watch
	err := c.create(ctx, http.MethodPost, "/api/v1/watches", req, &out)
	return out, err
}

// WatchQuery selects the watches to list. An empty Recipient,
// RegisteredBy, State or Kind does not filter; Limit 0 is the server's default page size (100,
// at most 1000); After is the Next of the page before, "" for the first.
type WatchQuery struct {
	Recipient string
	// RegisteredBy keeps the watches that principal registered.
	RegisteredBy string
	State        string
	Kind         string
	Limit        int
	After        string
}

// ListWatches lists one page of watches, oldest first. Its Next, when set,
// is the After of the following page; a page may be short, even empty,
// and still have a Next.
func (c *Client) ListWatches(ctx context.Context, q WatchQuery) (api.WatchList, error) {
	v := url.Values{}
	for k, x := range map[string]string{"recipient": q.Recipient, "registered_by": q.RegisteredBy, "state": q.State, "kind": q.Kind, "after": q.After} {
		if x != "" {
			v.Set(k, x)
		}
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var out api.WatchList
	err := c.do(ctx, http.MethodGet, "/api/v1/watches", v, nil, &out)
	return out, err
}

// MaxWatchPage is the largest page of watches the server gives.
const MaxWatchPage = 1000

// AllWatches follows ListWatches from q.After page after page (q.Limit is
// the page size) to the end, and returns every watch in one list with the
// pages' HeldAside summed and no Next.
func (c *Client) AllWatches(ctx context.Context, q WatchQuery) (api.WatchList, error) {
	return c.Watches(ctx, q, 0)
}

// Watches follows ListWatches from q.After page after page (q.Limit is
// the page size) until the end, or until it has upTo watches (0: no
// bound), with the pages' HeldAside summed. It asks for no more than
// upTo, and when it stops there with more to come, Next is where to go on
// from. A server answering a cursor with itself is an error: the paging
// would never end.
func (c *Client) Watches(ctx context.Context, q WatchQuery, upTo int) (api.WatchList, error) {
	out := api.WatchList{Watches: []api.Watch{}}
	page := q.Limit
	if upTo > 0 && page <= 0 {
		page = MaxWatchPage
	}
	for {
		if upTo > 0 {
			q.Limit = min(upTo-len(out.Watches), page)
		}
		p, err := c.ListWatches(ctx, q)
		if err != nil {
			return out, err
		}
		out.Watches = append(out.Watches, p.Watches...)
		out.HeldAside += p.HeldAside
		out.Next = p.Next
		if p.Next == "" || upTo > 0 && len(out.Watches) >= upTo {
			return out, nil
		}
		if p.Next == q.After {
			return out, fmt.Errorf("client: the server answered the cursor %q with itself", q.After)
		}
		q.After = p.Next
	}
}

// GetWatch reads one watch.
func (c *Client) GetWatch(ctx context.Context, id string) (api.Watch, error) {
	var out api.Watch
	err := c.do(ctx, http.MethodGet, "/api/v1/watches/"+url.PathEscape(id), nil, nil, &out)
	return out, err
}

// WaitWatch waits, up to wait (at most 60 s, the server's bound), for the
// watch to move from version since, and returns it: at once when its
// version already differs from since (or since is empty), as soon as it
// changes, else at the end of the wait unchanged. Compare the answer's
// Version with since to tell which. wait 0 answers at once.
func (c *Client) WaitWatch(ctx context.Context, id, since string, wait time.Duration) (api.Watch, error) {
	q := url.Values{}
	q.Set("wait", wait.String())
	if since != "" {
		q.Set("since", since)
	}
	var out api.Watch
	err := c.do(ctx, http.MethodGet, "/api/v1/watches/"+url.PathEscape(id), q, nil, &out)
	return out, err
}

// CancelWatch cancels a pending watch and returns it cancelled. A watch
// that has already settled is an *api.Error with code already_settled.
func (c *Client) CancelWatch(ctx context.Context, id string) (api.Watch, error) {
	var out api.Watch
	err := c.do(ctx, http.MethodDelete, "/api/v1/watches/"+url.PathEscape(id), nil, nil, &out)
	return out, err
}

// PutRecipient creates or replaces a recipient. It replaces the whole
// record: a webhook or refs left out of req are removed.
func (c *Client) PutRecipient(ctx context.Context, id string, req api.RecipientRequest) (api.Recipient, error) {
	var out api.Recipient
	err := c.do(ctx, http.MethodPut, "/api/v1/recipients/"+url.PathEscape(id), nil, req, &out)
	return out, err
}

// GetRecipient reads a recipient (never its webhook secret).
func (c *Client) GetRecipient(ctx context.Context, id string) (api.Recipient, error) {
	var out api.Recipient
	err := c.do(ctx, http.MethodGet, "/api/v1/recipients/"+url.PathEscape(id), nil, nil, &out)
	return out, err
}

// DeleteRecipient removes a recipient; its pending watches are cancelled.
func (c *Client) DeleteRecipient(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/recipients/"+url.PathEscape(id), nil, nil, nil)
}

// ReportPhase reports what the recipient is working on. The server
// records the token's principal as the reporter; a principal not acting
// as the recipient itself sets a seeded phase, which the phase reminder
// never acts on.
func (c *Client) ReportPhase(ctx context.Context, id string, req api.PhaseRequest) (api.Phase, error) {
	var out api.Phase
	err := c.create(ctx, http.MethodPut, "/api/v1/recipients/"+url.PathEscape(id)+"/phase", req, &out)
	return out, err
}

// ReportActivity adds to the recipient's activity counts and returns them.
func (c *Client) ReportActivity(ctx context.Context, id string, req api.ActivityRequest) (api.Activity, error) {
	var out api.Activity
	err := c.create(ctx, http.MethodPost, "/api/v1/recipients/"+url.PathEscape(id)+"/activity", req, &out)
	return out, err
}

// SetReminder opts the recipient in to the phase reminder every interval.
func (c *Client) SetReminder(ctx context.Context, id string, every time.Duration) (api.Reminder, error) {
	var out api.Reminder
	err := c.do(ctx, http.MethodPut, "/api/v1/recipients/"+url.PathEscape(id)+"/reminder", nil, api.ReminderRequest{Every: every.String()}, &out)
	return out, err
}

// ClearReminder opts the recipient out of the phase reminder.
func (c *Client) ClearReminder(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/recipients/"+url.PathEscape(id)+"/reminder", nil, nil, nil)
}

// ReadMailbox reads up to limit messages after the cursor after. With
// wait > 0 and nothing to read, the server holds the request until a
// message lands or wait passes (it allows at most 60 s). A zero limit
// takes the server's default. Pass the returned Next as after next time.
func (c *Client) ReadMailbox(ctx context.Context, id string, after uint64, wait time.Duration, limit int) (api.Mailbox, error) {
	q := url.Values{}
	if after > 0 {
		q.Set("after", strconv.FormatUint(after, 10))
	}
	if wait > 0 {
		q.Set("wait", wait.String())
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out api.Mailbox
	err := c.do(ctx, http.MethodGet, "/api/v1/recipients/"+url.PathEscape(id)+"/mailbox", q, nil, &out)
	return out, err
}

// DeadLetters reads the fetch commands the host refused before any request
// went out, from the cursor after; limit 0 is the server's default.
func (c *Client) DeadLetters(ctx context.Context, after uint64, limit int) (api.DeadLetters, error) {
	q := url.Values{}
	if after > 0 {
		q.Set("after", strconv.FormatUint(after, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out api.DeadLetters
	err := c.do(ctx, http.MethodGet, "/api/v1/fetch/dead-letters", q, nil, &out)
	return out, err
}

// Record records an item seen in an outside source of scope. The reporter
// is the client's principal; req.Run, when set, names the run that saw the
// item (kept on the event, no part of its identity, the key of the per-run
// budget). An exact repeat answers Duplicate and spends no budget. A scope
// with no observe entry left is an *api.Error with code
// observe_unavailable.
func (c *Client) Record(ctx context.Context, scope string, req api.ObserveRequest) (api.ObserveResult, error) {
	var out api.ObserveResult
	err := c.create(ctx, http.MethodPost, "/api/v1/scopes/"+url.PathEscape(scope)+"/observe", req, &out)
	return out, err
}

// ListWork lists a scope's Work; state "" is every state.
func (c *Client) ListWork(ctx context.Context, scope, state string) (api.WorkList, error) {
	q := url.Values{}
	if state != "" {
		q.Set("state", state)
	}
	var out api.WorkList
	err := c.do(ctx, http.MethodGet, "/api/v1/scopes/"+url.PathEscape(scope)+"/work", q, nil, &out)
	return out, err
}

// GetWork reads a Work with its inputs.
func (c *Client) GetWork(ctx context.Context, id string) (api.Work, error) {
	var out api.Work
	err := c.do(ctx, http.MethodGet, "/api/v1/work/"+url.PathEscape(id), nil, nil, &out)
	return out, err
}

// ClaimWork claims a Work for recipient and returns it with its inputs.
func (c *Client) ClaimWork(ctx context.Context, id, recipient string) (api.Work, error) {
	var out api.Work
	err := c.create(ctx, http.MethodPost, "/api/v1/work/"+url.PathEscape(id)+"/claim", api.ClaimRequest{Recipient: api.RecipientRef{ID: recipient}}, &out)
	return out, err
}

// CompleteWork completes a Work.
func (c *Client) CompleteWork(ctx context.Context, id string) (api.Work, error) {
	var out api.Work
	err := c.create(ctx, http.MethodPost, "/api/v1/work/"+url.PathEscape(id)+"/complete", nil, &out)
	return out, err
}

// StreamMailbox follows the mailbox from the cursor after over
// server-sent events and calls fn with each message, in order. It returns
// ctx.Err() when ctx ends, fn's error when fn returns one, ErrStreamEnded
// when the server closes the stream, or the error that broke it. It never
// reconnects: to resume, call it again with the Seq of the last message
// fn handled.
func (c *Client) StreamMailbox(ctx context.Context, id string, after uint64, fn func(api.Message) error) error {
	q := url.Values{}
	if after > 0 {
		q.Set("after", strconv.FormatUint(after, 10))
	}
	req, err := c.newRequest(ctx, http.MethodGet, "/api/v1/recipients/"+url.PathEscape(id)+"/mailbox/stream", q, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return responseError(resp)
	}
	var fnErr error
	err = readEvents(resp.Body, func(name, data string) error {
		if name != "" && name != "message" {
			return nil // an event this client does not know
		}
		var m api.Message
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			return fmt.Errorf("client: a mailbox event that is not a message: %w", err)
		}
		fnErr = fn(m)
		return fnErr
	})
	switch {
	case fnErr != nil:
		return fnErr
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return err
}

// readEvents parses a text/event-stream and calls emit with each event's
// name and data (its data lines joined by "\n"); an error from emit stops
// the read and is returned. Comments (keep-alives) and events without data
// are skipped. It returns ErrStreamEnded at the end of the body.
func readEvents(r io.Reader, emit func(name, data string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxEvent)
	var name string
	var data []string
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if len(data) > 0 {
				if err := emit(name, strings.Join(data, "\n")); err != nil {
					return err
				}
			}
			name, data = "", nil
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			name = value
		case "data":
			data = append(data, value)
		}
		// "id" is the message's seq, which the data carries too; "retry"
		// is a reconnect hint, and reconnecting is the caller's business.
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return ErrStreamEnded
}

func (c *Client) newRequest(ctx context.Context, method, path string, q url.Values, in any) (*http.Request, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("%w: encoding its body: %w", errRequest, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errRequest, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// do makes one request and decodes a 2xx body into out (when out is not
// nil), or returns the error response as an *api.Error.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, in, out any) error {
	return c.doKeyed(ctx, method, path, q, in, out, "")
}

// doKeyed is do with the Idempotency-Key key, when it is not "".
func (c *Client) doKeyed(ctx context.Context, method, path string, q url.Values, in, out any, key string) error {
	req, err := c.newRequest(ctx, method, path, q, in)
	if err != nil {
		return err
	}
	if key != "" {
		req.Header.Set(api.HeaderIdempotencyKey, api.FormatIdempotencyKey(key))
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return responseError(resp)
	}
	if out != nil && resp.StatusCode != http.StatusNoContent {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return fmt.Errorf("client: %s %s: decoding the response: %w", method, path, err)
		}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10)) // keep the connection reusable
	return nil
}

// responseError turns a non-2xx response into an *api.Error: the
// envelope's content when the body is the envelope, else code internal
// with the status and the start of the body.
func responseError(resp *http.Response) error {
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var env api.ErrorEnvelope
	if err == nil && json.Unmarshal(b, &env) == nil && env.Error.Code != "" {
		e := env.Error
		// A store_busy or rate_limited answer says when to retry in its
		// Retry-After header, not in the envelope.
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs >= 0 {
			e.RetryAfter = time.Duration(secs) * time.Second
		}
		return &e
	}
	msg := "HTTP " + resp.Status
	if s := strings.Join(strings.Fields(string(b)), " "); s != "" {
		if len(s) > 200 {
			s = s[:200] + "…"
		}
		msg += ": " + s
	}
	if err != nil {
		msg += " (reading the body: " + err.Error() + ")"
	}
	return &bareAnswer{status: resp.StatusCode, err: &api.Error{Code: api.CodeInternal, Message: msg}}
}

// bareAnswer is a non-2xx answer without the API's envelope: something
// in front of the host (a proxy, a load balancer) answering in its own
// words, or a host that failed before it could say more. It reads as
// its *api.Error (code internal, the status and the start of the body);
// its status tells a creating call's retry a gateway that got no answer
// from the host (retryable).
type bareAnswer struct {
	status int
	err    *api.Error
}

func (b *bareAnswer) Error() string { return b.err.Error() }
func (b *bareAnswer) Unwrap() error { return b.err }
