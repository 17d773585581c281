package netguard

import (
	"errors"
	"net/netip"
	"testing"
)

// FuzzDialControl: DialControl never panics, every error it returns is a
// refusal, and whatever it accepts is a tcp or udp network and an ip:port
// that parses and passes CheckAddr.
func FuzzDialControl(f *testing.F) {
	for _, seed := range [][2]string{
		{"tcp", "93.184.216.34:443"},
		{"tcp6", "[2606:2800:220:1:248:1893:25c8:1946]:443"},
		{"tcp6", "[fe80::1%eth0]:80"},
		{"tcp6", "[::ffff:127.0.0.1]:80"},
		{"tcp6", "[64:ff9b::a9fe:a9fe]:80"},
		{"udp4", "10.1.2.3:53"},
		{"tcp", "example.com:80"},
		{"tcp", "127.1:80"},
		{"tcp", "0x7f000001:80"},
		{"tcp", ":80"},
		{"unix", "/tmp/sock"},
		{"tcp", "[::1]"},
		{"tcp", "1.2.3.4:99999"},
	} {
		f.Add(seed[0], seed[1])
	}
	g := New([]netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")})
	f.Fuzz(func(t *testing.T, network, address string) {
		err := g.DialControl(network, address, nil)
		if err != nil {
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("DialControl(%q, %q) = %v, not a refusal", network, address, err)
			}
			return
		}
		switch network {
		case "tcp", "tcp4", "tcp6", "udp", "udp4", "udp6":
		default:
			t.Fatalf("accepted network %q", network)
		}
		ap, perr := netip.ParseAddrPort(address)
		if perr != nil {
			t.Fatalf("accepted %q, which is not ip:port: %v", address, perr)
		}
		if cerr := g.CheckAddr(ap.Addr()); cerr != nil {
			t.Fatalf("accepted %q, whose address is refused: %v", address, cerr)
		}
	})
}

// FuzzCheckAddr: the verdict on an address does not depend on its zone or
// on whether an IPv4 address is written in its mapped form.
func FuzzCheckAddr(f *testing.F) {
	f.Add([]byte{127, 0, 0, 1}, "")
	f.Add([]byte{0xfe, 0x80, 15: 1}, "eth0")
	f.Add([]byte{0, 0x64, 0xff, 0x9b, 12: 10, 13: 0, 14: 0, 15: 1}, "")
	f.Add([]byte{0x20, 0x02, 0xa9, 0xfe, 0xa9, 0xfe, 15: 0}, "1")
	g := New([]netip.Prefix{netip.MustParsePrefix("192.168.7.0/24"), netip.MustParsePrefix("fd12::/16")})
	f.Fuzz(func(t *testing.T, b []byte, zone string) {
		ip, ok := netip.AddrFromSlice(b)
		if !ok {
			if g.CheckAddr(ip) == nil {
				t.Fatal("the invalid address was allowed")
			}
			return
		}
		verdict := g.CheckAddr(ip) == nil
		if ip.Is6() && (g.CheckAddr(ip.WithZone(zone)) == nil) != verdict {
			t.Fatalf("%s: zone %q changes the verdict", ip, zone)
		}
		if ip.Is4() && (g.CheckAddr(netip.AddrFrom16(ip.As16())) == nil) != verdict {
			t.Fatalf("%s: the mapped form changes the verdict", ip)
		}
		if ip.Is4In6() && (g.CheckAddr(ip.Unmap()) == nil) != verdict {
			t.Fatalf("%s: unmapping changes the verdict", ip)
		}
	})
}
