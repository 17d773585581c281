package abi

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// Destination is one place a watch will fetch from, as admit names it on
// an ok answer, so the host can refuse at registration a watch whose every
// fetch it would refuse: an address its destination guard never lets
// through (loopback, private, link-local, metadata), or a host outside the
// kind's fetch grants.
type Destination struct {
	// Target is an absolute http or https URL, or host[:port] (see
	// ParseDestination for the grammar).
	Target string `json:"target"`
	// Field is the param the target came from ("url", "api_base"), when
	// one did; the host names it (as params.<field>) in its refusal.
	Field string `json:"field,omitempty"`
}

// Bounds of the destinations one admit answer names.
const (
	// MaxDestinations is the most destinations one answer may name.
	MaxDestinations = 16
	// MaxDestinationLen bounds a target, in bytes.
	MaxDestinationLen = 2048
	// MaxFieldLen bounds a destination's field, in bytes.
	MaxFieldLen = 256
	// maxHostLen bounds a host name, as DNS does.
	maxHostLen = 253
	// maxLabelLen bounds one label of a host name, as DNS does.
	maxLabelLen = 63
)

// Endpoint is a destination's target as the host checks it: where the
// watch's fetches go.
type Endpoint struct {
	// Host is a host name in lower case without a trailing dot, or an IP
	// literal without brackets (an IPv6 zone kept).
	Host string
	// Port is the port the target names, or 0 when it names none.
	Port int
}

// String is the endpoint as host[:port], an IPv6 literal in brackets: a
// target ParseDestination reads back as the same Endpoint.
func (e Endpoint) String() string {
	h := e.Host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	if e.Port != 0 {
		return h + ":" + strconv.Itoa(e.Port)
	}
	return h
}

// DestinationError is a target that ParseDestination refuses, and why.
type DestinationError struct {
	Target string
	Reason string
}

func (e *DestinationError) Error() string {
	t := e.Target
	if len(t) > 80 {
		t = t[:80] + "…"
	}
	return fmt.Sprintf("destination %q: %s", t, e.Reason)
}

// ParseDestination reads a destination's target. The grammar:
//
//	target    = url / authority
//	url       = ("http" / "https") "://" authority [ path ] [ "?" query ] [ "#" fragment ]
//	authority = host [ ":" port ]
//	host      = name / "[" ipv6 "]"
//	name      = label *( "." label ) [ "." ]
//	label     = 1-63 of a-z A-Z 0-9 "-" "_", not starting or ending with "-"
//	port      = 1-65535, decimal, no leading zero
//
// A url is read as net/url reads it (as the fetch issuer does): it must be
// absolute, not opaque, and carry no userinfo; only its host and port are
// kept. A name is at most 253 bytes; an IPv4 address is a name ("10.0.0.1"),
// and so are the forms a resolver reads as one ("2130706433", "0x7f.1"),
// which the host's check judges by the address they reach. Non-ASCII names
// are refused: give an internationalised name in its xn-- form. A target
// is at most MaxDestinationLen bytes. A refusal is a *DestinationError.
func ParseDestination(target string) (Endpoint, error) {
	bad := func(format string, args ...any) (Endpoint, error) {
		return Endpoint{}, &DestinationError{Target: target, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case target == "":
		return bad("empty")
	case len(target) > MaxDestinationLen:
		return bad("longer than %d bytes", MaxDestinationLen)
	}
	if strings.Contains(target, "://") {
		u, err := url.Parse(target)
		if err != nil {
			why := err
			if ue, ok := err.(*url.Error); ok {
				why = ue.Err
			}
			return bad("not a URL: %v", why)
		}
		switch {
		case u.Scheme != "http" && u.Scheme != "https":
			return bad("scheme %q: want http or https", u.Scheme)
		case u.Opaque != "":
			return bad("opaque URL: want http://host/… or https://host/…")
		case u.User != nil:
			return bad("userinfo in the URL: a destination names no credentials")
		case u.Host == "":
			return bad("no host")
		}
		return parseAuthority(u.Host, bad)
	}
	return parseAuthority(target, bad)
}

// parseAuthority reads host [":" port].
func parseAuthority(s string, bad func(string, ...any) (Endpoint, error)) (Endpoint, error) {
	var host, port string
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return bad("an unclosed [ in the host")
		}
		host, port = s[1:end], s[end+1:]
		if port != "" {
			p, ok := strings.CutPrefix(port, ":")
			if !ok {
				return bad("text after the ] of an IPv6 literal")
			}
			port = p
			if port == "" {
				return bad("an empty port")
			}
		}
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.Is6() {
			return bad("[%s] is not an IPv6 address", clipText(host))
		}
		host = ip.String()
	default:
		h, p, hasPort := strings.Cut(s, ":")
		if strings.Contains(p, ":") {
			return bad("more than one colon: an IPv6 literal goes in brackets")
		}
		if hasPort && p == "" {
			return bad("an empty port")
		}
		host, port = h, p
		if reason := checkName(host); reason != "" {
			return bad("host %q: %s", clipText(host), reason)
		}
		host = strings.TrimSuffix(strings.ToLower(host), ".")
	}
	ep := Endpoint{Host: host}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || port[0] == '0' || port[0] == '+' {
			return bad("port %q: want 1-65535", clipText(port))
		}
		ep.Port = n
	}
	return ep, nil
}

// checkName says what is wrong with a host name, or "".
func checkName(h string) string {
	if h == "" {
		return "empty"
	}
	if len(h) > maxHostLen+1 || (len(h) > maxHostLen && !strings.HasSuffix(h, ".")) {
		return fmt.Sprintf("longer than %d bytes", maxHostLen)
	}
	for _, label := range strings.Split(strings.TrimSuffix(h, "."), ".") {
		switch {
		case label == "":
			return "an empty label"
		case len(label) > maxLabelLen:
			return fmt.Sprintf("a label longer than %d bytes", maxLabelLen)
		case label[0] == '-' || label[len(label)-1] == '-':
			return "a label starts or ends with '-'"
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			switch {
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
			case c >= 0x80:
				return "not ASCII: give an internationalised name in its xn-- form"
			default:
				return fmt.Sprintf("%q is not a host name character", c)
			}
		}
	}
	return ""
}

// CheckDestinationField says what is wrong with a destination's field, or
// nil: a param's JSON name or dotted path ("url", "repo.api_base"), at
// most MaxFieldLen bytes of printable ASCII.
func CheckDestinationField(f string) error {
	if len(f) > MaxFieldLen {
		return fmt.Errorf("destination field longer than %d bytes", MaxFieldLen)
	}
	for i := 0; i < len(f); i++ {
		if f[i] < 0x21 || f[i] > 0x7e {
			return fmt.Errorf("destination field %q: want printable ASCII", clipText(f))
		}
	}
	return nil
}

func clipText(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
