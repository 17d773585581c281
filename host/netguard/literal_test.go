package netguard

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestCheckLiteral(t *testing.T) {
	none := New(nil)
	loop4 := New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
	tests := []struct {
		host    string
		g       *Guard
		refused bool
	}{
		{"127.0.0.1", none, true},
		{"127.0.0.1", loop4, false},
		{"2130706433", none, true},       // 127.0.0.1 as one integer
		{"0x7f000001", none, true},       // as hex
		{"017700000001", none, true},     // as octal
		{"0177.0.0.1", none, true},       // octal part
		{"0x7f.1", none, true},           // hex part, short form
		{"127.1", none, true},            // short form
		{"127.0.0.1.", none, true},       // absolute form
		{"::1", none, true},              // IPv6 loopback, unbracketed
		{"[::1]", none, true},            // bracketed
		{"::ffff:127.0.0.1", none, true}, // IPv4-mapped
		{"[::ffff:7f00:1]", none, true},  // IPv4-mapped, hex
		{"::ffff:127.0.0.1", loop4, false},
		{"169.254.169.254", none, true},
		{"0xa9fea9fe", none, true},         // the metadata address as hex
		{"2852039166", none, true},         // and as an integer
		{"10.0.0.1", none, true},           // private
		{"012.0.0.1", none, true},          // 10.0.0.1, octal first part
		{"192.168.1.10", none, true},       // private
		{"172.16.0.1", none, true},         // private
		{"100.64.0.1", none, true},         // CGNAT
		{"fe80::1%eth0", none, true},       // link-local with a zone
		{"[fd00::1]", none, true},          // unique-local
		{"0.0.0.0", none, true},            // unspecified
		{"0", none, true},                  // 0.0.0.0 as an integer
		{"localhost", none, true},          // RFC 6761
		{"LocalHost.", none, true},         // any case, absolute
		{"localhost", loop4, false},        // 127.0.0.1 is let through: a dial can succeed
		{"8.8.8.8", none, false},           // public
		{"134744072", none, false},         // 8.8.8.8 as an integer: public
		{"[2606:4700::1111]", none, false}, // public IPv6
		{"example.com", none, false},       // a name: checked when dialled
		{"localhost.example.com", none, false},
		{"app.localhost", none, false},
		{"4294967296", none, false}, // over 32 bits: a name, not an address
		{"1.2.3.4.5", none, false},
		{"256.1.1.1", none, false},
		{"1.256.1", none, false}, // short form: 256 does not fit the middle byte
		{"0x", none, false},
		{"09.1.1.1", none, false}, // 9 is not an octal digit
		{"", none, false},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			err := tt.g.CheckLiteral(tt.host)
			var re *RefusedError
			if got := errors.As(err, &re); got != tt.refused {
				t.Fatalf("refused %v (%v), want %v", got, err, tt.refused)
			}
			if tt.refused && (!errors.Is(err, ErrRefused) || re.Host != tt.host || re.Reason == "" || !re.Addr.IsValid()) {
				t.Fatalf("%#v", re)
			}
		})
	}
}

// Every spelling of an IPv4 address that inet_aton reads (integer,
// dotted, short, any mix of decimal, octal and hex parts) parses to that
// address, and CheckLiteral's verdict on it is CheckAddr's on the address.
func TestParseLiteralSpellings(t *testing.T) {
	g := New([]netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")})
	rapid.Check(t, func(t *rapid.T) {
		v := rapid.Uint32().Draw(t, "addr")
		addr := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
		n := rapid.IntRange(1, 4).Draw(t, "parts")
		// The first n-1 parts are bytes; the last is what remains.
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
		got, ok := ParseLiteral(host)
		if !ok || got != addr {
			t.Fatalf("%q: %v %v, want %v", host, got, ok, addr)
		}
		if (g.CheckLiteral(host) == nil) != (g.CheckAddr(addr) == nil) {
			t.Fatalf("%q: CheckLiteral %v, CheckAddr %v", host, g.CheckLiteral(host), g.CheckAddr(addr))
		}
	})
}

func FuzzParseLiteral(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "2130706433", "0x7f.1", "[::1]", "fe80::1%eth0", "localhost", "example.com", "0177.0.0.01", "1.2.3.4.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		addr, ok := ParseLiteral(s)
		if !ok {
			return
		}
		if !addr.IsValid() {
			t.Fatalf("%q: ok with an invalid address", s)
		}
		// A literal the guard refuses is refused by CheckLiteral, and only
		// then.
		g := New(nil)
		if (g.CheckLiteral(s) == nil) != (g.CheckAddr(addr) == nil) {
			t.Fatalf("%q (%v): CheckLiteral %v, CheckAddr %v", s, addr, g.CheckLiteral(s), g.CheckAddr(addr))
		}
	})
}
