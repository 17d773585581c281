package netguard

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// Every spelling of an IPv4 address that inet_aton reads (one to four
// parts, the last filling what the others leave, each decimal, octal or
// hex) answers that one address, and the guard's verdict on the spelling
// through Resolve is CheckAddr's on the address.
func TestLiteralResolverReadsEverySpelling(t *testing.T) {
	g := New([]netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")})
	rapid.Check(t, func(t *rapid.T) {
		v := rapid.Uint32().Draw(t, "addr")
		addr := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
		n := rapid.IntRange(1, 4).Draw(t, "parts")
		var parts []uint64
		for i := range n - 1 {
			parts = append(parts, uint64(v>>(8*(3-i))&0xff))
		}
		parts = append(parts, uint64(v)&(1<<(8*(4-(n-1)))-1))
		var s []string
		for i, p := range parts {
			switch rapid.IntRange(0, 2).Draw(t, fmt.Sprint("base", i)) {
			case 0:
				s = append(s, strconv.FormatUint(p, 10))
			case 1:
				s = append(s, "0"+strconv.FormatUint(p, 8))
			default:
				s = append(s, rapid.SampledFrom([]string{"0x", "0X"}).Draw(t, fmt.Sprint("x", i))+strconv.FormatUint(p, 16))
			}
		}
		host := strings.Join(s, ".")
		got, err := LiteralResolver{}.LookupNetIP(context.Background(), "ip", host)
		if err != nil || len(got) != 1 || got[0] != addr {
			t.Fatalf("%q: %v %v, want %v", host, got, err, addr)
		}
		_, rerr := g.Resolve(context.Background(), LiteralResolver{}, host)
		if (rerr == nil) != (g.CheckAddr(addr) == nil) {
			t.Fatalf("%q: Resolve %v, CheckAddr %v", host, rerr, g.CheckAddr(addr))
		}
	})
}

// Whatever the string, LiteralResolver answers valid addresses or
// ErrNotLiteral, never both and never a panic, and Resolve through it
// answers a refusal, the addresses, or a ResolveError.
func FuzzLiteralResolver(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "2130706433", "0x7f.1", "[::1]", "fe80::1%eth0", "localhost", "a.localhost.", "example.com", "0177.0.0.01", "1.2.3.4.5", "0x", "08"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		addrs, err := LiteralResolver{}.LookupNetIP(context.Background(), "ip", host)
		switch {
		case err != nil && (!errors.Is(err, ErrNotLiteral) || len(addrs) != 0):
			t.Fatalf("%q: %v %v", host, addrs, err)
		case err == nil && len(addrs) == 0:
			t.Fatalf("%q: no address and no error", host)
		}
		for _, a := range addrs {
			if !a.IsValid() {
				t.Fatalf("%q: invalid address %v", host, a)
			}
		}
		_, rerr := New(nil).Resolve(context.Background(), LiteralResolver{}, host)
		var re *RefusedError
		var rse *ResolveError
		if rerr != nil && !errors.As(rerr, &re) && !errors.As(rerr, &rse) {
			t.Fatalf("%q: Resolve %v", host, rerr)
		}
	})
}
