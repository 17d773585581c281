package fetch

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vigilhq/vigil/sdk/abi"
)

// Bounds of the refusal table.
const (
	// MaxHeaders is the most headers a command may carry.
	MaxHeaders = 32
	// MaxHeaderBytes bounds the sum, over a command's headers, of the
	// name's bytes and the trimmed value's bytes (no separators, no line
	// ends). The issuer's default user-agent counts in neither bound; a
	// plugin's own user-agent counts in both.
	MaxHeaderBytes = 8192
	// DefaultMaxTimeout is the cap on timeout_seconds when none is set.
	DefaultMaxTimeout = 120 * time.Second
	// minTimeout is the shortest timeout_seconds taken as a duration; a
	// positive value below it is refused as zero.
	minTimeout = time.Millisecond
)

// Header is one request header of a screened command: Name in lower case,
// Value with its surrounding whitespace trimmed.
type Header struct {
	Name  string
	Value string
}

// Command is a fetch request that passed the refusal table. It is what the
// issuer sends, before the issuer's own additions (the default user-agent,
// an attached secret, stored validators).
type Command struct {
	Method string
	// URL is absolute http or https, without userinfo or fragment.
	URL *url.URL
	// Headers are the plugin's headers, names lower-cased, sorted by name,
	// each name once.
	Headers []Header
	// Timeout is the plugin's timeout_seconds; zero means the issuer's
	// default.
	Timeout time.Duration
	// Secret names a host-held credential to attach, or is empty.
	Secret string
}

// Header returns the value of the header named name (lower case).
func (c Command) Header(name string) (string, bool) {
	for _, h := range c.Headers {
		if h.Name == name {
			return h.Value, true
		}
	}
	return "", false
}

// HeaderNames returns the command's header names, sorted.
func (c Command) HeaderNames() []string {
	out := make([]string, len(c.Headers))
	for i, h := range c.Headers {
		out[i] = h.Name
	}
	return out
}

// Screen applies the refusal table to req, from the request alone: it
// touches no network, cache or clock. A refused request is an *Error with
// Reason abi.FetchInvalidRequestOptions; its message names the offending
// header by name and never quotes a header's value. maxTimeout caps
// timeout_seconds (DefaultMaxTimeout when it is not positive).
//
// When one request breaks several rules, the rule reported is the first
// in this order: method, URL, header count, each header by its name as
// sent (sorted), case-duplicates, header bytes, the authorization/secret
// conflict, secret name, timeout.
func Screen(req abi.FetchRequest, maxTimeout time.Duration) (Command, error) {
	if maxTimeout <= 0 {
		maxTimeout = DefaultMaxTimeout
	}
	var cmd Command
	switch req.Method {
	case "GET", "HEAD":
		cmd.Method = req.Method
	default:
		return Command{}, invalid("", fmt.Sprintf("method %q: only GET and HEAD are issued", clip(req.Method)))
	}
	u, err := screenURL(req.URL)
	if err != nil {
		return Command{}, err
	}
	cmd.URL = u
	if cmd.Headers, err = screenHeaders(req.Headers); err != nil {
		return Command{}, err
	}
	if req.Secret != "" {
		if _, ok := cmd.Header("authorization"); ok {
			return Command{}, invalid("authorization", `header "authorization" conflicts with secret: the issuer attaches the secret as the authorization`)
		}
		if err := abi.CheckSecretName(req.Secret); err != nil {
			return Command{}, invalid("", "secret: "+err.Error())
		}
		cmd.Secret = req.Secret
	}
	if cmd.Timeout, err = screenTimeout(req.TimeoutSeconds, req.TimeoutGiven(), maxTimeout); err != nil {
		return Command{}, err
	}
	return cmd, nil
}

func invalid(header, msg string) *Error {
	return &Error{Reason: abi.FetchInvalidRequestOptions, Header: header, Message: msg}
}

// screenURL parses raw and refuses anything but an absolute http or https
// URL with a host and without userinfo. The fragment is dropped: it is
// never sent.
func screenURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// Not the whole *url.Error: it quotes the URL, userinfo and all.
		why := err
		if ue, ok := err.(*url.Error); ok {
			why = ue.Err
		}
		return nil, invalid("", "url does not parse: "+clip(why.Error()))
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, invalid("", fmt.Sprintf("url scheme %q: want an absolute http or https URL", clip(u.Scheme)))
	case u.Opaque != "":
		return nil, invalid("", "url is opaque: want http://host/… or https://host/…")
	case u.User != nil:
		return nil, invalid("", "url carries userinfo: credentials go in a granted secret, never in the URL")
	case u.Hostname() == "":
		return nil, invalid("", "url has no host")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, invalid("", fmt.Sprintf("url port %q: want 1-65535", clip(p)))
		}
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

// screenHeaders checks every header of the request and returns them
// lower-cased, trimmed and sorted.
func screenHeaders(in map[string]string) ([]Header, error) {
	if len(in) == 0 {
		return nil, nil
	}
	if len(in) > MaxHeaders {
		return nil, invalid("", fmt.Sprintf("%d headers: at most %d", len(in), MaxHeaders))
	}
	names := make([]string, 0, len(in))
	for name := range in {
		names = append(names, name)
	}
	slices.Sort(names) // so the refusal reported does not depend on map order
	out := make([]Header, 0, len(in))
	total := 0
	for _, name := range names {
		if !isToken(name) {
			return nil, invalid(name, fmt.Sprintf("header name %q is not an RFC 9110 token", clip(name)))
		}
		lower := strings.ToLower(name)
		if why := forbidden(lower); why != "" {
			return nil, invalid(name, fmt.Sprintf("header %q is refused: %s", clip(lower), why))
		}
		value := trimOWS(in[name])
		if !sendable(value) {
			return nil, invalid(name, fmt.Sprintf("header %q: its value has a byte outside printable ASCII and space", clip(lower)))
		}
		total += len(lower) + len(value)
		out = append(out, Header{Name: lower, Value: value})
	}
	slices.SortFunc(out, func(a, b Header) int { return strings.Compare(a.Name, b.Name) })
	for k := 1; k < len(out); k++ {
		if out[k].Name == out[k-1].Name {
			return nil, invalid(out[k].Name, fmt.Sprintf("header %q is named twice, differing only in case", clip(out[k].Name)))
		}
	}
	if total > MaxHeaderBytes {
		return nil, invalid("", fmt.Sprintf("headers total %d bytes: at most %d", total, MaxHeaderBytes))
	}
	return out, nil
}

// forbidden says why a lower-cased header name may not be set by a
// plugin, or "" when it may.
func forbidden(lower string) string {
	switch lower {
	case "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade":
		return "hop-by-hop, owned by the transport (RFC 9110 §7.6.1)"
	case "host", "content-length":
		return "derived by the transport from the URL and the body"
	}
	if strings.HasPrefix(lower, "proxy-") {
		return "configures the hop, not the request"
	}
	return ""
}

// screenTimeout turns timeout_seconds into a duration. Absent is the
// default; a given zero is refused (zero is not a duration, and absent is
// not zero), as is anything else that is not a positive finite number of
// seconds up to max.
func screenTimeout(secs float64, given bool, max time.Duration) (time.Duration, error) {
	switch {
	case secs == 0 && given:
		return 0, invalid("", "timeout_seconds 0 is not a duration: leave it out for the host's default")
	case secs == 0:
		return 0, nil
	case math.IsNaN(secs) || math.IsInf(secs, 0):
		return 0, invalid("", "timeout_seconds is not a finite number")
	case secs < 0:
		return 0, invalid("", "timeout_seconds is negative")
	case secs > max.Seconds():
		return 0, invalid("", fmt.Sprintf("timeout_seconds %g: at most %g (the host's maximum fetch timeout)", secs, max.Seconds()))
	}
	d := time.Duration(secs * float64(time.Second))
	if d < minTimeout {
		return 0, invalid("", fmt.Sprintf("timeout_seconds %g: below %s, not a duration", secs, minTimeout))
	}
	return d, nil
}

// isToken reports whether s is an RFC 9110 token: one or more tchar.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isTchar(s[i]) {
			return false
		}
	}
	return true
}

func isTchar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

// sendable reports whether v may go on the wire as a header value: every
// byte printable US-ASCII or SP (\x20–\x7e). Narrower than RFC 9110 on
// purpose: no HTAB, no obs-text, and never CR, LF or NUL.
func sendable(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return false
		}
	}
	return true
}

// trimOWS drops surrounding SP and HTAB (RFC 9110's OWS), nothing else.
func trimOWS(v string) string { return strings.Trim(v, " \t") }

// clip bounds a string quoted into a message.
func clip(s string) string {
	const n = 128
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
