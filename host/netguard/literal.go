package netguard

import (
	"net/netip"
	"strings"
)

// ParseLiteral reads host as the address it names without any lookup, as
// a resolver reads it before it would ask DNS: an IPv4 or IPv6 literal
// (bracketed or not, an IPv6 zone kept), or one of the older IPv4
// spellings inet_aton(3) accepts and getaddrinfo passes through, which a
// URL parser leaves alone: a 32-bit integer ("2130706433"), hex or octal
// parts ("0x7f.0.0.1", "0177.0.0.1"), and fewer than four parts ("127.1",
// the last part filling the remaining bytes). One trailing dot (the
// absolute form) is ignored. ok is false for anything else, which is a
// name.
func ParseLiteral(host string) (addr netip.Addr, ok bool) {
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		ip, err := netip.ParseAddr(host[1 : len(host)-1])
		return ip, err == nil && ip.Is6()
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip, true
	}
	return parseInetAton(strings.TrimSuffix(host, "."))
}

// parseInetAton reads the classic IPv4 spellings: one to four parts split
// by dots, each decimal, octal (a leading 0) or hex (0x), the last part
// filling every byte the earlier ones left.
func parseInetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var vals [4]uint64
	for i, p := range parts {
		v, ok := atonPart(p)
		if !ok {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	n := len(parts)
	var out uint64
	for i := range n - 1 {
		if vals[i] > 0xff {
			return netip.Addr{}, false
		}
		out |= vals[i] << (8 * (3 - i))
	}
	last := vals[n-1]
	if bits := 8 * (4 - (n - 1)); last >= 1<<bits {
		return netip.Addr{}, false
	}
	out |= last
	return netip.AddrFrom4([4]byte{byte(out >> 24), byte(out >> 16), byte(out >> 8), byte(out)}), true
}

// atonPart reads one part: at most 32 bits, so a long string of digits
// cannot overflow.
func atonPart(p string) (uint64, bool) {
	base := uint64(10)
	switch {
	case len(p) > 2 && (p[:2] == "0x" || p[:2] == "0X"):
		base, p = 16, p[2:]
	case len(p) > 1 && p[0] == '0':
		base, p = 8, p[1:]
	}
	if p == "" {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(p); i++ {
		var d uint64
		switch c := p[i]; {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return 0, false
		}
		if d >= base {
			return 0, false
		}
		v = v*base + d
		if v > 0xffffffff {
			return 0, false
		}
	}
	return v, true
}

// loopbacks are the addresses "localhost" names (RFC 6761, 6.3).
func loopbacks() [2]netip.Addr {
	return [2]netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()}
}

// CheckLiteral refuses a host that no lookup can make the guard let
// through: a literal address (ParseLiteral) that CheckAddr refuses, or
// "localhost", which RFC 6761 reserves for loopback, when the guard
// refuses both 127.0.0.1 and ::1. The refusal is a *RefusedError whose
// Host is host as written. A name is nil: what it resolves to is checked
// when it is dialled (DialControl) or resolved (Resolve), as ever. This
// lets a caller refuse a destination when it is configured, long before
// anything is dialled, without a second copy of the rules: every decision
// is CheckAddr's.
func (g *Guard) CheckLiteral(host string) error {
	if ip, ok := ParseLiteral(host); ok {
		if reason := g.refusal(ip); reason != "" {
			return &RefusedError{Addr: ip, Host: host, Reason: reason}
		}
		return nil
	}
	if !strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return nil
	}
	var first *RefusedError
	for _, ip := range loopbacks() {
		reason := g.refusal(ip)
		if reason == "" {
			return nil // one way through is enough for a dial to succeed
		}
		if first == nil {
			first = &RefusedError{Addr: ip, Host: host, Reason: reason}
		}
	}
	return first
}
