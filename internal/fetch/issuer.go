package fetch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/vigilhq/vigil/internal/netguard"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// maxRoutes bounds the guards (with their transports) kept at once, one
// per distinct set of private ranges in the registry.
const maxRoutes = 64

// Issuer is the host side of vigil_fetch. Build it with New; it is safe
// for concurrent use.
type Issuer struct {
	cfg     Config
	log     *slog.Logger
	flights singleflight.Group

	mu     sync.Mutex // guards cache, pacer and routes
	cache  *cache
	pacer  *pacer
	routes map[string]*route

	// eventsRefused is set while the event log refuses facts for a full
	// disk, so that is logged once, not per fetch.
	eventsRefused atomic.Bool

	// dialHook, when set (by tests), sees every address the guard let
	// through, just before the connect; an error stops the dial.
	dialHook func(network, address string) error
}

var (
	_ plugin.Fetcher            = (*Issuer)(nil)
	_ plugin.ExtractionReporter = (*Issuer)(nil)
)

// route is one destination guard and the transport whose dialer carries
// it, shared by every kind granted the same private ranges so that
// connections are reused across their fetches.
type route struct {
	guard     *netguard.Guard
	transport *http.Transport
}

// New builds an Issuer. Zero fields of cfg take the defaults; a value
// that cannot work (a default timeout over the maximum, a secret whose
// value could not be sent) is an error.
func New(cfg Config) (*Issuer, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Issuer{
		cfg:    cfg,
		log:    cfg.Logger.With("component", "fetch"),
		cache:  newCache(cfg.MinInterval, cfg.MaxCacheBytes),
		pacer:  newPacer(cfg.MinInterval, cfg.QuietPeriod),
		routes: make(map[string]*route),
	}, nil
}

// CloseIdleConnections closes the idle connections of every transport.
func (i *Issuer) CloseIdleConnections() {
	i.mu.Lock()
	defer i.mu.Unlock()
	for _, r := range i.routes {
		r.transport.CloseIdleConnections()
	}
}

// outcome is what one flight answers every caller that shares it.
type outcome struct {
	leader string // the command id of the caller whose request it was
	held   bool   // answered from a held result, no request made
	resp   abi.FetchResponse
}

// Fetch screens, grants, and issues one command; see the package doc for
// the order and the taxonomy of what it answers.
func (i *Issuer) Fetch(ctx context.Context, call plugin.FetchCall) abi.FetchResponse {
	now := i.cfg.Clock.Now()
	id, err := store.NewID(now, i.cfg.IDs)
	if err != nil {
		return failure(&Error{Reason: abi.FetchUnavailable, Message: "no command id could be made", Err: err})
	}
	cid := id.String()
	cmd, fe := i.screen(call.Request)
	if fe != nil {
		i.clearValidators(call.Request.URL)
		return i.refuse(ctx, rawOccasion(cid, call.Kind, call.Request), now, fe)
	}
	occ := occasionOf(cid, call.Kind, cmd)
	if fe := i.grant(call, cmd); fe != nil {
		return i.refuse(ctx, occ, now, fe)
	}

	key := resourceKey(cmd)
	i.mu.Lock()
	held, ok := i.cache.fresh(key, now, hold(call))
	i.mu.Unlock()
	if ok {
		held.FromCache = true
		return held
	}
	op := cmd.Timeout
	if op == 0 {
		op = i.cfg.DefaultTimeout
	}
	if err := ctx.Err(); err != nil {
		return failure(ctxFailure(context.Cause(ctx)))
	}
	if dl, ok := ctx.Deadline(); ok && !dl.After(now) {
		return failure(ctxFailure(context.DeadlineExceeded))
	}
	ch := i.flights.DoChan(key, func() (any, error) {
		return i.issue(ctx, occ, call, cmd, key, op), nil
	})
	select {
	case r := <-ch:
		o := r.Val.(outcome)
		resp := o.resp
		if o.held || o.leader != cid {
			resp.FromCache = true
		}
		return resp
	case <-ctx.Done():
		return failure(ctxFailure(ctx.Err()))
	}
}

// hold is how old a held result call's reader may be served, and how
// long a result fetched for it is held: its watch's cadence, raised to
// its kind's floor on reading one resource (the registry's
// min_read_interval), so a watch probed more often than the floor is
// answered from the one read per floor. The cache raises it to
// MinInterval in turn.
func hold(call plugin.FetchCall) time.Duration {
	return max(call.Every, time.Duration(call.Entry.MinReadInterval))
}

// screen is Screen under the issuer's MaxTimeout, its refusal as an
// *Error of the taxonomy.
func (i *Issuer) screen(req abi.FetchRequest) (Command, *Error) {
	cmd, err := Screen(req, i.cfg.MaxTimeout)
	if err == nil {
		return cmd, nil
	}
	var fe *Error
	if !errors.As(err, &fe) {
		fe = &Error{Reason: abi.FetchInvalidRequestOptions, Message: err.Error(), Err: err}
	}
	return Command{}, fe
}

// refuse answers a command refused before anything was sent, with a
// fetch.failed fact and a dead letter.
func (i *Issuer) refuse(ctx context.Context, o occasion, now time.Time, fe *Error) abi.FetchResponse {
	i.log.Info("fetch refused", o.attrs("reason", fe.Reason, "message", fe.Message)...)
	i.recordFailure(ctx, o, now, fe, 0)
	return failure(fe)
}

// clearValidators forgets the stored validators of the resources at raw,
// the URL of a command refused as invalid_request_options.
func (i *Issuer) clearValidators(raw string) {
	u, err := url.Parse(raw)
	if err != nil {
		return
	}
	u.Fragment, u.RawFragment = "", ""
	i.mu.Lock()
	defer i.mu.Unlock()
	i.cache.clearValidators(u.String())
}

// ExtractionFailed forgets the validators stored for the resource the
// plugin's request names, when they are the validators of the bytes the
// plugin could not extract (the stored response has call's fingerprint):
// the next fetch of it goes out unconditional, so a 304 cannot re-confirm
// a broken extraction. The request is screened and granted as a fetch
// would be, and nothing is sent, held or recorded as a fact.
func (i *Issuer) ExtractionFailed(_ context.Context, call plugin.ExtractionCall) abi.ExtractionFailedResponse {
	refuse := func(e *Error) abi.ExtractionFailedResponse {
		return abi.ExtractionFailedResponse{Failure: failure(e).Failure}
	}
	fp := call.Request.Fingerprint
	if len(fp) != sha256.Size*2 || strings.Trim(fp, "0123456789abcdef") != "" {
		return refuse(invalid("", "fingerprint: want the lowercase hex SHA-256 the fetch answered"))
	}
	cmd, fe := i.screen(call.Request.Request)
	if fe != nil {
		return refuse(fe)
	}
	fetchCall := plugin.FetchCall{Kind: call.Kind, Entry: call.Entry, Request: call.Request.Request}
	if fe := i.grant(fetchCall, cmd); fe != nil {
		return refuse(fe)
	}
	i.mu.Lock()
	forgot := i.cache.forget(resourceKey(cmd), fp)
	i.mu.Unlock()
	if forgot {
		i.log.Info("validators forgotten: the plugin could not extract the answer", "kind", call.Kind, "method", cmd.Method, "url", cmd.URL.String())
	}
	return abi.ExtractionFailedResponse{Forgot: forgot}
}

// grant checks the command against its kind's grants and the host's
// secrets.
func (i *Issuer) grant(call plugin.FetchCall, cmd Command) *Error {
	host := cmd.URL.Hostname()
	if !abi.HostGranted(call.Entry.FetchHosts, host) {
		setting := "kinds." + call.Kind + ".fetch_hosts"
		return &Error{Reason: abi.FetchNotGranted, Setting: setting,
			Message: fmt.Sprintf("host %s is not granted to kind %s (setting: %s)", host, call.Kind, setting)}
	}
	if cmd.Secret == "" {
		return nil
	}
	if !slices.Contains(call.Entry.Secrets, cmd.Secret) {
		setting := "kinds." + call.Kind + ".secrets"
		return &Error{Reason: abi.FetchNotGranted, Setting: setting,
			Message: fmt.Sprintf("secret %s is not granted to kind %s (setting: %s)", cmd.Secret, call.Kind, setting)}
	}
	if _, ok := i.cfg.Secrets[cmd.Secret]; !ok {
		setting := "secrets." + cmd.Secret
		return &Error{Reason: abi.FetchNotGranted, Setting: setting,
			Message: fmt.Sprintf("secret %s is not in the host's configuration (setting: %s)", cmd.Secret, setting)}
	}
	return nil
}

// issue is one flight: the request to the origin that every identical
// concurrent command shares, its result held, its fact recorded. op bounds
// each operation of it, MaxFetchTime the whole, and the leader's deadline
// both.
func (i *Issuer) issue(ctx context.Context, o occasion, call plugin.FetchCall, cmd Command, key string, op time.Duration) outcome {
	start := i.cfg.Clock.Now()
	i.mu.Lock()
	held, ok := i.cache.fresh(key, start, hold(call))
	v := i.cache.validators(key)
	i.mu.Unlock()
	if ok {
		// A flight for this resource ended between the caller's look and
		// this one.
		return outcome{leader: o.ID, held: true, resp: held}
	}

	// The request outlives a caller that gives up: the callers sharing it
	// still wait, and the bounds end it.
	rctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	if dl, ok := ctx.Deadline(); ok {
		var stop context.CancelFunc
		rctx, stop = context.WithDeadline(rctx, dl)
		defer stop()
	}
	whole := i.cfg.Clock.AfterFunc(i.cfg.MaxFetchTime, func() { cancel(errFetchTimeout) })
	defer whole.Stop()
	wd := newWatchdog(i.cfg.Clock, op, func() { cancel(errOperationTimeout) })
	defer wd.stop()
	res := i.roundTrip(rctx, call, cmd, v, start, op, wd)

	now := i.cfg.Clock.Now()
	if res.fail == nil || res.fail.Reason != abi.FetchRateLimited {
		i.mu.Lock()
		kept := i.cache.put(key, o.URL, now, res.update, hold(call))
		i.mu.Unlock()
		if !kept {
			i.cfg.Metrics.FetchNotHeld()
			i.log.Debug("fetch result not held: the cache is full of fresh results", o.attrs()...)
		}
	}
	switch {
	case res.fail != nil:
		i.log.Info("fetch failed", o.attrs("reason", res.fail.Reason, "message", res.fail.Message)...)
		i.recordFailure(ctx, o, now, res.fail, 0)
	case res.resp.Status >= 400:
		e := &Error{Reason: abi.FetchHTTPStatus, Message: fmt.Sprintf("the origin answered %d %s", res.resp.Status, http.StatusText(res.resp.Status))}
		i.log.Info("fetch answered an error status", o.attrs("status", res.resp.Status)...)
		i.recordFailure(ctx, o, now, e, res.resp.Status)
	default:
		i.log.Debug("fetched", o.attrs("status", res.resp.Status, "bytes", len(res.resp.Body), "not_modified", res.resp.NotModified)...)
		i.recordSuccess(ctx, o, now, res.resp)
	}
	return outcome{leader: o.ID, resp: res.resp}
}

// result is what one origin request produced.
type result struct {
	resp   abi.FetchResponse
	fail   *Error
	update update
}

func failedWith(e *Error) result {
	r := failure(e)
	return result{resp: r, fail: e, update: update{held: &r, keep: true}}
}

// roundTrip resolves and checks the destination, waits its turn at the
// origin, sends the request and reads the answer; wd sees its progress.
func (i *Issuer) roundTrip(ctx context.Context, call plugin.FetchCall, cmd Command, v validators, start time.Time, op time.Duration, wd *watchdog) result {
	fail := func(err error) result { return failedWith(bounded(ctx, err, op, i.cfg.MaxFetchTime)) }
	rt := i.route(call.Entry.PrivateRanges)
	if _, err := rt.guard.Resolve(ctx, i.cfg.Resolver, cmd.URL.Hostname()); err != nil {
		return fail(err)
	}

	// The wait for the origin's turn is one operation: a wait longer than
	// the command's timeout, the whole fetch's time left or the caller's
	// is rate_limited now.
	origin := originOf(cmd.URL)
	now := i.cfg.Clock.Now()
	left := min(op, i.cfg.MaxFetchTime-now.Sub(start))
	if dl, ok := ctx.Deadline(); ok {
		left = min(left, dl.Sub(now))
	}
	i.mu.Lock()
	wait, ok := i.pacer.reserve(origin, now, left)
	i.mu.Unlock()
	if !ok {
		return failedWith(&Error{Reason: abi.FetchRateLimited,
			Message: fmt.Sprintf("%s is paced: its next request may go in %s, past the %s this fetch has left", origin, wait, max(left, 0))})
	}
	if wait > 0 {
		wd.pause()
		if err := i.cfg.Clock.Sleep(ctx, wait); err != nil {
			return fail(err)
		}
	}
	wd.progress()

	req, err := http.NewRequestWithContext(ctx, cmd.Method, cmd.URL.String(), nil)
	if err != nil {
		return failedWith(&Error{Reason: abi.FetchUnavailable, Message: "the request could not be built", Err: err})
	}
	// Names are set in canonical form so that net/http sees a command's
	// user-agent as replacing its own default: exactly one goes out.
	req.Header = make(http.Header, len(cmd.Headers)+4)
	req.Header["User-Agent"] = []string{i.cfg.UserAgent}
	for _, h := range cmd.Headers {
		req.Header[http.CanonicalHeaderKey(h.Name)] = []string{h.Value}
	}
	if cmd.Secret != "" {
		req.Header["Authorization"] = []string{"Bearer " + i.cfg.Secrets[cmd.Secret]}
	}
	cond := conditional(cmd, v)
	for _, h := range cond {
		req.Header[http.CanonicalHeaderKey(h.Name)] = []string{h.Value}
	}

	req = req.WithContext(wd.trace(ctx))
	client := &http.Client{Transport: rt.transport, CheckRedirect: i.checkRedirect(call, rt.guard, cmd)}
	resp, err := client.Do(req)
	if err != nil {
		// With a CheckRedirect error, resp is the previous hop, already
		// closed.
		return fail(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		now := i.cfg.Clock.Now()
		ra := retryAfter(resp.Header.Get("Retry-After"), now)
		i.mu.Lock()
		i.pacer.refused(origin, now, ra)
		i.mu.Unlock()
	}

	var body []byte
	if cmd.Method != http.MethodHead {
		body, err = io.ReadAll(io.LimitReader(progressReader{r: resp.Body, w: wd}, i.cfg.MaxBody+1))
		if err != nil {
			return fail(err)
		}
		if int64(len(body)) > i.cfg.MaxBody {
			return failedWith(&Error{Reason: abi.FetchTooLarge, Message: fmt.Sprintf("the body is over %d bytes", i.cfg.MaxBody)})
		}
	}

	if resp.StatusCode == http.StatusNotModified && len(cond) > 0 {
		out := *v.stored
		out.NotModified = true
		return result{resp: out, update: update{held: &out, keep: true}}
	}
	out := abi.FetchResponse{Status: resp.StatusCode, Headers: responseHeaders(resp.Header), Body: body, Fingerprint: fingerprint(body)}
	u := update{held: &out, keep: true}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		// A 2xx replaces what is stored: with its validators when it
		// carries any that could be sent back, with nothing otherwise.
		u.keep = false
		u.etag = mintValidator(resp.Header.Get("Etag"))
		u.lastModified = mintValidator(resp.Header.Get("Last-Modified"))
		if u.etag != "" || u.lastModified != "" {
			u.stored = &out
		} else {
			u.etag, u.lastModified = "", ""
		}
	}
	return result{resp: out, update: u}
}

// checkRedirect re-checks each hop: the grant, then the guard (the dial
// checks once more). An attached secret is dropped from a hop to another
// host or scheme.
func (i *Issuer) checkRedirect(call plugin.FetchCall, g *netguard.Guard, cmd Command) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) > i.cfg.MaxRedirects {
			return &Error{Reason: abi.FetchUnavailable, Message: fmt.Sprintf("stopped after %d redirects", i.cfg.MaxRedirects)}
		}
		// Userinfo in a Location would become a basic authorization.
		req.URL.User = nil
		host := req.URL.Hostname()
		if !abi.HostGranted(call.Entry.FetchHosts, host) {
			setting := "kinds." + call.Kind + ".fetch_hosts"
			return &Error{Reason: abi.FetchNotGranted, Setting: setting,
				Message: fmt.Sprintf("redirect to host %s, which is not granted to kind %s (setting: %s)", host, call.Kind, setting)}
		}
		if _, err := g.Resolve(req.Context(), i.cfg.Resolver, host); err != nil {
			e := *classify(err)
			e.Message = "redirect to " + host + ": " + e.Message
			return &e
		}
		if cmd.Secret != "" && (req.URL.Scheme != cmd.URL.Scheme || !strings.EqualFold(req.URL.Host, cmd.URL.Host)) {
			req.Header.Del("Authorization")
		}
		return nil
	}
}

// route returns the guard for a kind's private ranges, and its transport.
// A range that does not parse allows nothing (the registry refuses one).
func (i *Issuer) route(ranges []string) *route {
	prefixes := make([]netip.Prefix, 0, len(ranges))
	for _, s := range ranges {
		if p, err := netip.ParsePrefix(s); err == nil {
			prefixes = append(prefixes, p.Masked())
		}
	}
	slices.SortFunc(prefixes, func(a, b netip.Prefix) int { return strings.Compare(a.String(), b.String()) })
	prefixes = slices.Compact(prefixes)
	var kb strings.Builder
	for _, p := range prefixes {
		kb.WriteString(p.String())
		kb.WriteByte(',')
	}
	key := kb.String()

	i.mu.Lock()
	defer i.mu.Unlock()
	if r := i.routes[key]; r != nil {
		return r
	}
	if len(i.routes) >= maxRoutes {
		for k, r := range i.routes {
			r.transport.CloseIdleConnections()
			delete(i.routes, k)
			break
		}
	}
	g := netguard.New(prefixes)
	r := &route{guard: g, transport: &http.Transport{
		Proxy:                  nil, // a proxy would be dialled in place of the destination, past the guard
		DialContext:            i.dialer(g),
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}}
	i.routes[key] = r
	return r
}

// dialer resolves a name with the issuer's resolver and dials each
// address through a net.Dialer whose Control is the guard's DialControl,
// so the address is checked where the connection is made, after this
// second resolution. A refused address ends the dial: the other addresses
// of a name with a refused one are not tried.
func (i *Issuer) dialer(g *netguard.Guard) func(ctx context.Context, network, addr string) (net.Conn, error) {
	// The request's context bounds the connect.
	d := &net.Dialer{Control: func(network, address string, c syscall.RawConn) error {
		if err := g.DialControl(network, address, c); err != nil {
			return err
		}
		if i.dialHook != nil {
			return i.dialHook(network, address)
		}
		return nil
	}}
	var res netguard.Resolver = net.DefaultResolver
	if i.cfg.Resolver != nil {
		res = i.cfg.Resolver
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if _, err := netip.ParseAddr(host); err == nil {
			return d.DialContext(ctx, network, addr)
		}
		ips, err := res.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, &netguard.ResolveError{Host: host, Err: err}
		}
		if len(ips) == 0 {
			return nil, &netguard.ResolveError{Host: host, Err: netguard.ErrNoAddress}
		}
		var first error
		for _, ip := range ips {
			c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
			if err == nil {
				return c, nil
			}
			if errors.Is(err, netguard.ErrRefused) {
				return nil, err
			}
			if first == nil {
				first = err
			}
			if ctx.Err() != nil {
				break
			}
		}
		return nil, first
	}
}

// classify places an error in the failure taxonomy.
func classify(err error) *Error {
	var fe *Error
	var refused *netguard.RefusedError
	var unresolved *netguard.ResolveError
	var ne net.Error
	switch {
	case errors.As(err, &fe):
		return fe
	case errors.As(err, &refused):
		return &Error{Reason: abi.FetchDestinationRefused, Message: clipN(refused.Error(), 512), Err: err}
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return &Error{Reason: abi.FetchTimeout, Message: "no answer within the fetch's timeout: " + clipN(err.Error(), 512), Err: err}
	case errors.As(err, &unresolved):
		return &Error{Reason: abi.FetchConnectFailed, Message: clipN(unresolved.Error(), 512), Err: err}
	case errors.Is(err, context.Canceled):
		return &Error{Reason: abi.FetchUnavailable, Message: "the fetch was cancelled", Err: err}
	}
	return &Error{Reason: abi.FetchConnectFailed, Message: clipN(err.Error(), 512), Err: err}
}

// ctxFailure is the answer to a caller whose context ended first.
func ctxFailure(err error) *Error {
	if errors.Is(err, context.DeadlineExceeded) || err == nil {
		return &Error{Reason: abi.FetchTimeout, Message: "the plugin call's time ran out before the fetch answered", Err: err}
	}
	return &Error{Reason: abi.FetchUnavailable, Message: "the plugin call was cancelled before the fetch answered", Err: err}
}

func failure(e *Error) abi.FetchResponse {
	return abi.FetchResponse{Failure: &abi.FetchFailure{Reason: e.Reason, Message: e.Message}}
}

// originOf is scheme://host:port, the unit of pacing.
func originOf(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return u.Scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// responseHeaders are a response's headers as a plugin reads them: names
// in lower case, the first value of each.
func responseHeaders(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for k, vs := range h {
		if len(vs) > 0 {
			out[strings.ToLower(k)] = vs[0]
		}
	}
	return out
}

// fingerprint is the lowercase hex SHA-256 of body.
func fingerprint(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}
