package netguard

import (
	"context"
	"errors"
	"net/netip"
	"strconv"
	"strings"
)

// ErrNotLiteral: a name whose address only a DNS lookup can tell.
var ErrNotLiteral = errors.New("not a name with a fixed address")

// LiteralResolver is a Resolver that looks nothing up: it answers only
// the names whose address is fixed without DNS, and ErrNotLiteral for any
// other. With Resolve it judges, before anything is stored or sent, a
// destination the guard would refuse whatever DNS says:
//
//   - "localhost" and every name under it ("a.localhost"), which resolvers
//     answer with loopback (RFC 6761, section 6.3): 127.0.0.1 and ::1;
//   - the IPv4 forms a system resolver (inet_aton) reads as an address:
//     one to four dot-separated parts, each decimal, 0x-prefixed hex or
//     0-prefixed octal, the last filling the remaining bytes
//     ("2130706433", "0x7f000001", "127.1", "0177.0.0.1").
//
// It decides nothing itself: Resolve asks the guard about the address,
// so an operator's allow prefix lets 127.0.0.1 through as a name as it
// does as a literal. A name made only of such parts cannot be a DNS name
// (no top-level domain is numeric), so reading it as an address never
// refuses a name that DNS would answer.
type LiteralResolver struct{}

var _ Resolver = LiteralResolver{}

// LookupNetIP answers host's fixed addresses for network "ip", "ip4" or
// "ip6", or an error wrapping ErrNotLiteral.
func (LiteralResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, a := range literalAddrs(host) {
		switch {
		case network == "ip4" && !a.Is4(), network == "ip6" && !a.Is6():
			continue
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, ErrNotLiteral
	}
	return out, nil
}

func literalAddrs(host string) []netip.Addr {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()}
	}
	if a, ok := parseInetAton(h); ok {
		return []netip.Addr{a}
	}
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")); err == nil {
		return []netip.Addr{a}
	}
	return nil
}

// parseInetAton reads s as inet_aton does: a, a.b, a.b.c or a.b.c.d.
func parseInetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		v, ok := parsePart(p)
		if !ok {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	last := len(vals) - 1
	for _, v := range vals[:last] {
		if v > 0xff {
			return netip.Addr{}, false
		}
	}
	if vals[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}, false
	}
	n := vals[last]
	for i, v := range vals[:last] {
		n |= v << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

// parsePart reads one part: decimal, 0x hex, or 0-prefixed octal.
func parsePart(p string) (uint64, bool) {
	base := 10
	switch {
	case p == "":
		return 0, false
	case len(p) > 2 && (p[:2] == "0x" || p[:2] == "0X"):
		base, p = 16, p[2:]
	case len(p) > 1 && p[0] == '0':
		base, p = 8, p[1:]
	}
	if p[0] == '+' || p[0] == '-' || len(p) > 16 {
		return 0, false
	}
	v, err := strconv.ParseUint(p, base, 64)
	return v, err == nil
}
