package netguard

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// Guard decides which addresses may be dialled. Build it with New; it
// never changes afterwards and is safe for concurrent use.
type Guard struct {
	allow []netip.Prefix
	v4    []rule
	v6    []rule
}

// rule is one refused range and the reason an operator reads.
type rule struct {
	prefix netip.Prefix
	reason string
}

// New builds a guard that refuses special-purpose addresses except those
// an allow prefix contains. The slice is copied. Each prefix is masked to
// its network, and an IPv4-mapped prefix (::ffff:10.0.0.0/104) is taken as
// the IPv4 prefix it names (10.0.0.0/8); an invalid prefix allows nothing.
func New(allow []netip.Prefix) *Guard {
	g := &Guard{v4: v4Rules(), v6: v6Rules()}
	for _, p := range allow {
		if !p.IsValid() {
			continue
		}
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		g.allow = append(g.allow, p.Masked())
	}
	return g
}

// Allowed returns a copy of the guard's allow prefixes, as New stored
// them.
func (g *Guard) Allowed() []netip.Prefix {
	if g == nil {
		return nil
	}
	return append([]netip.Prefix(nil), g.allow...)
}

// CheckAddr returns nil when ip may be dialled, and a *RefusedError
// otherwise. An IPv6 zone is ignored: fe80::1%eth0 is link-local.
func (g *Guard) CheckAddr(ip netip.Addr) error {
	if reason := g.refusal(ip); reason != "" {
		return &RefusedError{Addr: ip, Reason: reason}
	}
	return nil
}

// refusal is the reason ip is refused, or "" when it is allowed.
func (g *Guard) refusal(ip netip.Addr) string {
	if !ip.IsValid() {
		return "not a valid IP address"
	}
	// netip.Prefix.Contains never matches an address with a zone, so a
	// zoned fe80::1%eth0 would slip past every IPv6 rule below.
	ip = ip.WithZone("")
	// The IPv4-mapped form is the same address; judge it as IPv4, so an
	// IPv4 rule or allow prefix matches it (Contains would not).
	canon := ip.Unmap()
	if g.allowed(canon) {
		return ""
	}
	v4, v6 := g.rules()
	if canon.Is4() {
		reason := match(v4, canon)
		if reason != "" && ip.Is4In6() {
			return "IPv4-mapped form of " + canon.String() + ": " + reason
		}
		return reason
	}
	if reason := match(v6, canon); reason != "" {
		return reason
	}
	b := canon.As16()
	switch {
	case isCompat(b):
		embedded := netip.AddrFrom4([4]byte(b[12:16]))
		if reason := match(v4, embedded); reason != "" {
			return "IPv4-compatible form of " + embedded.String() + ": " + reason
		}
		return "IPv4-compatible (deprecated, RFC 4291)"
	case isNAT64(b):
		embedded := netip.AddrFrom4([4]byte(b[12:16]))
		if reason := match(v4, embedded); reason != "" {
			return "NAT64 form of " + embedded.String() + ": " + reason
		}
		return ""
	case is6to4(b):
		embedded := netip.AddrFrom4([4]byte(b[2:6]))
		if reason := match(v4, embedded); reason != "" {
			return "6to4 form of " + embedded.String() + ": " + reason
		}
		return ""
	case b[0]&0xe0 != 0x20:
		return "not global unicast (outside 2000::/3)"
	}
	return ""
}

func (g *Guard) allowed(ip netip.Addr) bool {
	if g == nil {
		return false
	}
	for _, p := range g.allow {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// rules returns the guard's tables; a nil guard builds them afresh.
func (g *Guard) rules() (v4, v6 []rule) {
	if g == nil {
		return v4Rules(), v6Rules()
	}
	return g.v4, g.v6
}

func match(rules []rule, ip netip.Addr) string {
	for _, r := range rules {
		if r.prefix.Contains(ip) {
			return r.reason
		}
	}
	return ""
}

// isCompat: ::/96, the deprecated IPv4-compatible form (:: and ::1 are
// matched by the IPv6 table before this is asked).
func isCompat(b [16]byte) bool {
	return b == [16]byte{12: b[12], 13: b[13], 14: b[14], 15: b[15]}
}

// isNAT64: the well-known NAT64 prefix 64:ff9b::/96 (RFC 6052), IPv4
// address in the last 32 bits.
func isNAT64(b [16]byte) bool {
	return b == [16]byte{0: 0x00, 1: 0x64, 2: 0xff, 3: 0x9b, 12: b[12], 13: b[13], 14: b[14], 15: b[15]}
}

// is6to4: 2002::/16 (RFC 3056), IPv4 address in bits 16–47.
func is6to4(b [16]byte) bool { return b[0] == 0x20 && b[1] == 0x02 }

// v4Rules is the refused IPv4 table, most specific first so the reason is
// the narrowest one (169.254.169.254 is "cloud metadata", not just
// link-local). Source: the IANA IPv4 Special-Purpose Address Registry.
func v4Rules() []rule {
	return []rule{
		{pfx("0.0.0.0/32"), "unspecified"},
		{pfx("0.0.0.0/8"), `"this network" (RFC 791)`},
		{pfx("10.0.0.0/8"), "private (RFC 1918)"},
		{pfx("100.64.0.0/10"), "shared address space, CGNAT (RFC 6598)"},
		{pfx("127.0.0.0/8"), "loopback"},
		{pfx("169.254.169.254/32"), "cloud metadata service (link-local)"},
		{pfx("169.254.0.0/16"), "link-local"},
		{pfx("172.16.0.0/12"), "private (RFC 1918)"},
		{pfx("192.0.0.0/24"), "IETF protocol assignments (RFC 6890)"},
		{pfx("192.0.2.0/24"), "documentation, TEST-NET-1 (RFC 5737)"},
		{pfx("192.168.0.0/16"), "private (RFC 1918)"},
		{pfx("198.18.0.0/15"), "benchmarking (RFC 2544)"},
		{pfx("198.51.100.0/24"), "documentation, TEST-NET-2 (RFC 5737)"},
		{pfx("203.0.113.0/24"), "documentation, TEST-NET-3 (RFC 5737)"},
		{pfx("224.0.0.0/4"), "multicast"},
		{pfx("255.255.255.255/32"), "limited broadcast"},
		{pfx("240.0.0.0/4"), "reserved (RFC 1112)"},
	}
}

// v6Rules is the refused IPv6 table, checked before the embedded-IPv4
// forms and the global-unicast rule. Source: the IANA IPv6 Special-Purpose
// Address Registry.
func v6Rules() []rule {
	return []rule{
		{pfx("::/128"), "unspecified"},
		{pfx("::1/128"), "loopback"},
		{pfx("64:ff9b:1::/48"), "local-use NAT64 (RFC 8215)"},
		{pfx("100::/64"), "discard-only (RFC 6666)"},
		{pfx("2001::/23"), "IETF protocol assignments, incl. Teredo (RFC 2928)"},
		{pfx("2001:db8::/32"), "documentation (RFC 3849)"},
		{pfx("3fff::/20"), "documentation (RFC 9637)"},
		{pfx("fc00::/7"), "unique-local (RFC 4193)"},
		{pfx("fe80::/10"), "link-local"},
		{pfx("fec0::/10"), "site-local (deprecated, RFC 3879)"},
		{pfx("ff00::/8"), "multicast"},
	}
}

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// DialControl is a net.Dialer Control function: it refuses the connection
// unless address, the "ip:port" the dialer is about to connect to, passes
// CheckAddr. It runs after name resolution, once per address attempted.
// A network other than tcp or udp, or an address that is not a literal
// ip:port, is refused.
func (g *Guard) DialControl(network, address string, _ syscall.RawConn) error {
	switch network {
	case "tcp", "tcp4", "tcp6", "udp", "udp4", "udp6":
	default:
		return &RefusedError{Reason: fmt.Sprintf("network %q is not tcp or udp", network)}
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &RefusedError{Reason: fmt.Sprintf("dial address %q is not ip:port", address)}
	}
	return g.CheckAddr(ap.Addr())
}

// Dialer returns a net.Dialer with the given connect timeout whose Control
// is DialControl. Use it as an http.Transport's DialContext, with the
// Transport's Proxy left nil.
func (g *Guard) Dialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: timeout, Control: g.DialControl}
}

// Resolver is what Resolve asks for addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

var _ Resolver = (*net.Resolver)(nil)

// Resolve returns the addresses host resolves to, after checking every one
// of them: if any is refused, the name is refused (a *RefusedError naming
// the host and that address) and no address is returned. A literal IP
// (bracketed or not) is checked without a lookup. A nil r is
// net.DefaultResolver. A lookup that fails or answers nothing is a
// *ResolveError, not a refusal.
//
// Resolve decides before a request goes out; it does not pin the answer.
// The transport resolves the name again when it dials, which is why the
// dialer must carry DialControl as well.
func (g *Guard) Resolve(ctx context.Context, r Resolver, host string) ([]netip.Addr, error) {
	literal := host
	if strings.HasPrefix(literal, "[") && strings.HasSuffix(literal, "]") {
		literal = literal[1 : len(literal)-1]
	}
	if ip, err := netip.ParseAddr(literal); err == nil {
		if err := g.CheckAddr(ip); err != nil {
			return nil, err
		}
		return []netip.Addr{ip}, nil
	}
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, &ResolveError{Host: host, Err: err}
	}
	if len(addrs) == 0 {
		return nil, &ResolveError{Host: host, Err: ErrNoAddress}
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, ip := range addrs {
		if reason := g.refusal(ip); reason != "" {
			return nil, &RefusedError{Addr: ip, Host: host, Reason: reason}
		}
		// net.Resolver can answer an IPv4 address in its mapped form.
		out = append(out, ip.Unmap())
	}
	return out, nil
}
