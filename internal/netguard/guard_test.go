package netguard

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// refusedV4 is the brief's list of refused IPv4 ranges, written out here
// independently of the package's table, with one address inside each.
var refusedV4 = []struct {
	prefix string
	sample string
}{
	{"0.0.0.0/8", "0.1.2.3"},
	{"10.0.0.0/8", "10.20.30.40"},
	{"100.64.0.0/10", "100.100.100.200"}, // a cloud metadata address, too
	{"127.0.0.0/8", "127.0.0.1"},
	{"169.254.0.0/16", "169.254.169.254"},
	{"172.16.0.0/12", "172.20.1.1"},
	{"192.0.0.0/24", "192.0.0.192"},
	{"192.0.2.0/24", "192.0.2.1"},
	{"192.168.0.0/16", "192.168.1.1"},
	{"198.18.0.0/15", "198.19.255.1"},
	{"198.51.100.0/24", "198.51.100.7"},
	{"203.0.113.0/24", "203.0.113.9"},
	{"224.0.0.0/4", "239.255.255.250"},
	{"240.0.0.0/4", "240.0.0.1"},
	{"255.255.255.255/32", "255.255.255.255"},
}

// embeddings are the IPv6 forms that carry an IPv4 address, built from
// text so they do not share the package's byte arithmetic.
func embeddings(v4 netip.Addr, subnet, iid uint16) map[string]netip.Addr {
	b := v4.As4()
	forms := map[string]string{
		"mapped":       "::ffff:" + v4.String(),
		"compatible":   "::" + v4.String(),
		"nat64":        "64:ff9b::" + v4.String(),
		"nat64-local":  "64:ff9b:1::" + v4.String(),
		"6to4":         fmt.Sprintf("2002:%02x%02x:%02x%02x:%x::%x", b[0], b[1], b[2], b[3], subnet, iid),
		"6to4-minimal": fmt.Sprintf("2002:%02x%02x:%02x%02x::", b[0], b[1], b[2], b[3]),
	}
	out := make(map[string]netip.Addr, len(forms))
	for name, s := range forms {
		out[name] = netip.MustParseAddr(s)
	}
	return out
}

// tb is what the helpers need of *testing.T and *rapid.T alike.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
}

func mustRefuse(t tb, g *Guard, ip netip.Addr) {
	t.Helper()
	err := g.CheckAddr(ip)
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("CheckAddr(%s) = %v, want refused", ip, err)
	}
	var re *RefusedError
	if !errors.As(err, &re) || re.Addr != ip || re.Reason == "" {
		t.Fatalf("CheckAddr(%s): %#v", ip, err)
	}
}

func mustAllow(t tb, g *Guard, ip netip.Addr) {
	t.Helper()
	if err := g.CheckAddr(ip); err != nil {
		t.Fatalf("CheckAddr(%s) = %v, want allowed", ip, err)
	}
}

func TestRefusesSpecialIPv4AndEveryEmbedding(t *testing.T) {
	g := New(nil)
	for _, r := range refusedV4 {
		p := netip.MustParsePrefix(r.prefix)
		first := p.Addr()
		last := lastAddr(p)
		for _, ip := range []netip.Addr{first, last, netip.MustParseAddr(r.sample)} {
			t.Run(r.prefix+"/"+ip.String(), func(t *testing.T) {
				if !p.Contains(ip) {
					t.Fatalf("test table: %s not in %s", ip, p)
				}
				mustRefuse(t, g, ip)
				for name, form := range embeddings(ip, 1, 1) {
					t.Run(name, func(t *testing.T) { mustRefuse(t, g, form) })
				}
			})
		}
	}
}

func TestReasons(t *testing.T) {
	g := New(nil)
	for addr, want := range map[string]string{
		"169.254.169.254":        "cloud metadata",
		"169.254.1.1":            "link-local",
		"127.0.0.1":              "loopback",
		"::ffff:10.0.0.1":        "IPv4-mapped form of 10.0.0.1: private",
		"64:ff9b::7f00:1":        "NAT64 form of 127.0.0.1: loopback",
		"2002:a9fe:a9fe::":       "6to4 form of 169.254.169.254: cloud metadata",
		"::10.0.0.1":             "IPv4-compatible form of 10.0.0.1: private",
		"fe80::1%eth0":           "link-local",
		"4000::1":                "not global unicast",
		"255.255.255.255":        "broadcast",
		"2001:db8::1":            "documentation",
		"0.0.0.0":                "unspecified",
		"::":                     "unspecified",
		"64:ff9b:1::8.8.8.8":     "local-use NAT64",
		"100.64.0.1":             "CGNAT",
		"2001:0:4136:e378::1":    "Teredo",
		"fd00:ec2::254":          "unique-local",
		"ff02::1":                "multicast",
		"192.0.0.192":            "IETF protocol assignments",
		"::1":                    "loopback",
		"100::1":                 "discard",
		"fec0::1":                "site-local",
		"3fff::1":                "documentation",
		"::8.8.8.8":              "IPv4-compatible (deprecated",
		"198.18.0.1":             "benchmarking",
		"240.0.0.1":              "reserved",
		"224.0.0.1":              "multicast",
		"192.168.0.1":            "private (RFC 1918)",
		"172.31.255.255":         "private (RFC 1918)",
		"203.0.113.1":            "TEST-NET-3",
		"198.51.100.1":           "TEST-NET-2",
		"192.0.2.1":              "TEST-NET-1",
		"0.255.255.255":          "this network",
		"::ffff:169.254.0.1":     "link-local",
		"64:ff9b::c0a8:1":        "NAT64 form of 192.168.0.1",
		"2002:c0a8:101:1::1":     "6to4 form of 192.168.1.1",
		"::ffff:0.0.0.0":         "unspecified",
		"fe80::1%25":             "link-local",
		"2001:2::1":              "IETF protocol assignments",
		"64:ff9b:1::a00:1":       "local-use NAT64",
		"::ffff:255.255.255.255": "broadcast",
	} {
		ip, err := netip.ParseAddr(addr)
		if err != nil {
			t.Fatalf("test table: %v", err)
		}
		err = g.CheckAddr(ip)
		var re *RefusedError
		if !errors.As(err, &re) || !strings.Contains(re.Reason, want) {
			t.Errorf("CheckAddr(%s) = %v, want a refusal mentioning %q", addr, err, want)
		}
	}
}

func TestRefusesSpecialIPv6(t *testing.T) {
	g := New(nil)
	for _, s := range []string{
		"::", "::1", "fe80::1", "fe80::1%eth0", "febf:ffff::1", "fc00::1",
		"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fd00:ec2::254", "ff02::1",
		"ff0e::1", "2001:db8::1", "2001:db8:ffff::1", "100::", "100::ffff:ffff:ffff:ffff",
		"64:ff9b:1::", "64:ff9b:1:ffff::8.8.8.8", "2001::1", "2001:1ff::1", "3fff::1",
		"3fff:fff::1", "fec0::1", "::8.8.8.8", "::2", "4000::1", "1::1", "8000::1",
		"e000::1", "::1:0:0:1", "64:ff9b::1:0:8.8.8.8",
	} {
		t.Run(s, func(t *testing.T) { mustRefuse(t, g, netip.MustParseAddr(s)) })
	}
	mustRefuse(t, g, netip.Addr{})
}

func TestAllowsPublic(t *testing.T) {
	g := New(nil)
	for _, s := range []string{
		"93.184.216.34", "8.8.8.8", "1.1.1.1", "1.0.0.0", "9.255.255.255",
		"11.0.0.0", "100.63.255.255", "100.128.0.0", "126.255.255.255",
		"128.0.0.0", "169.253.255.255", "169.255.0.0", "172.15.255.255",
		"172.32.0.0", "191.255.255.255", "192.0.1.255", "192.0.3.0",
		"192.167.255.255", "192.169.0.0", "198.17.255.255", "198.20.0.0",
		"198.51.99.255", "198.51.101.0", "203.0.112.255", "203.0.114.0",
		"223.255.255.255",
		"2606:2800:220:1:248:1893:25c8:1946", "2a00:1450:4001:81a::200e",
		"2000::1", "3ffe::1", "2001:200::1", "2001:db7:ffff::1", "2001:db9::1",
		"::ffff:93.184.216.34", "64:ff9b::93.184.216.34",
		"2002:5db8:d822::1", "2002:0808:0808:1::53",
	} {
		t.Run(s, func(t *testing.T) { mustAllow(t, g, netip.MustParseAddr(s)) })
	}
}

func TestAllowPrefixesLetThroughExactlyWhatTheyContain(t *testing.T) {
	g := New([]netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("127.0.0.1/32"),
		netip.MustParsePrefix("fd00::/8"),
		netip.MustParsePrefix("::ffff:192.168.1.0/120"), // the mapped form of 192.168.1.0/24
		netip.MustParsePrefix("169.254.1.7/16"),         // not masked: taken as 169.254.0.0/16
		{},                                              // invalid: allows nothing
	})
	for _, s := range []string{
		"10.0.0.0", "10.255.255.255", "::ffff:10.1.2.3", "127.0.0.1",
		"fd00::1", "fdff::1", "192.168.1.1", "::ffff:192.168.1.255",
		"169.254.169.254", "8.8.8.8",
	} {
		t.Run("allow "+s, func(t *testing.T) { mustAllow(t, g, netip.MustParseAddr(s)) })
	}
	for _, s := range []string{
		"127.0.0.2", "::1", "fc00::1", "fe80::1",
		"192.168.2.1", "172.16.0.1", "0.0.0.0", "::",
		// An allowed IPv4 address reached through a translator is not allowed.
		"64:ff9b::10.1.2.3", "2002:0a01:0203::", "::10.1.2.3", "64:ff9b:1::10.1.2.3",
	} {
		t.Run("refuse "+s, func(t *testing.T) { mustRefuse(t, g, netip.MustParseAddr(s)) })
	}

	got := g.Allowed()
	want := []string{"10.0.0.0/8", "127.0.0.1/32", "fd00::/8", "192.168.1.0/24", "169.254.0.0/16"}
	if len(got) != len(want) {
		t.Fatalf("Allowed() = %v", got)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Fatalf("Allowed() = %v, want %v", got, want)
		}
	}
	got[0] = netip.MustParsePrefix("0.0.0.0/0")
	mustRefuse(t, g, netip.MustParseAddr("172.16.0.1")) // Allowed returned a copy

	allow := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	g = New(allow)
	allow[0] = netip.MustParsePrefix("0.0.0.0/0")
	mustRefuse(t, g, netip.MustParseAddr("10.0.0.1")) // New copied its argument
}

func TestNilGuardRefusesWithNoAllowPrefixes(t *testing.T) {
	var g *Guard
	mustRefuse(t, g, netip.MustParseAddr("127.0.0.1"))
	mustRefuse(t, g, netip.MustParseAddr("64:ff9b::a9fe:a9fe"))
	mustAllow(t, g, netip.MustParseAddr("93.184.216.34"))
	if g.Allowed() != nil {
		t.Fatal("nil guard has allow prefixes")
	}
	if err := g.DialControl("tcp", "127.0.0.1:80", nil); !errors.Is(err, ErrRefused) {
		t.Fatalf("nil guard DialControl: %v", err)
	}
}

// refusedV4Gen draws an address inside one of the refused IPv4 ranges.
func refusedV4Gen() *rapid.Generator[netip.Addr] {
	return rapid.Custom(func(t *rapid.T) netip.Addr {
		p := netip.MustParsePrefix(rapid.SampledFrom(refusedV4).Draw(t, "range").prefix)
		host := rapid.Uint32().Draw(t, "host")
		base := p.Addr().As4()
		n := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
		if p.Bits() < 32 {
			n |= host & (1<<(32-p.Bits()) - 1)
		}
		return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
	})
}

func inRefusedV4(ip netip.Addr) bool {
	for _, r := range refusedV4 {
		if netip.MustParsePrefix(r.prefix).Contains(ip) {
			return true
		}
	}
	return false
}

func TestPropertyRefusedIPv4IsRefusedInEveryEmbedding(t *testing.T) {
	g := New(nil)
	rapid.Check(t, func(t *rapid.T) {
		ip := refusedV4Gen().Draw(t, "ip")
		mustRefuse(t, g, ip)
		subnet := rapid.Uint16().Draw(t, "subnet")
		iid := rapid.Uint16().Draw(t, "iid")
		for name, form := range embeddings(ip, subnet, iid) {
			if err := g.CheckAddr(form); !errors.Is(err, ErrRefused) {
				t.Fatalf("%s form %s of %s: %v", name, form, ip, err)
			}
		}
	})
}

func TestPropertyPublicIPv4IsAllowedThroughTranslators(t *testing.T) {
	g := New(nil)
	rapid.Check(t, func(t *rapid.T) {
		b := rapid.SliceOfN(rapid.Byte(), 4, 4).Draw(t, "ip")
		ip := netip.AddrFrom4([4]byte(b))
		if inRefusedV4(ip) {
			mustRefuse(t, g, ip)
			return
		}
		mustAllow(t, g, ip)
		forms := embeddings(ip, rapid.Uint16().Draw(t, "subnet"), rapid.Uint16().Draw(t, "iid"))
		for _, name := range []string{"mapped", "nat64", "6to4", "6to4-minimal"} {
			mustAllow(t, g, forms[name])
		}
		// The deprecated and the local-use forms are refused whatever
		// they carry.
		mustRefuse(t, g, forms["compatible"])
		mustRefuse(t, g, forms["nat64-local"])
	})
}

func TestPropertyAllowPrefixLetsThroughExactlyItsAddresses(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		inside := refusedV4Gen().Draw(t, "inside")
		p := netip.PrefixFrom(inside, rapid.IntRange(8, 32).Draw(t, "bits")).Masked()
		g := New([]netip.Prefix{p})
		mustAllow(t, g, inside)
		mustAllow(t, g, netip.AddrFrom16(inside.As16())) // its mapped form
		other := refusedV4Gen().Draw(t, "other")
		if p.Contains(other) {
			mustAllow(t, g, other)
		} else {
			mustRefuse(t, g, other)
		}
	})
}

func TestZoneIsIgnored(t *testing.T) {
	g := New(nil)
	for _, s := range []string{"fe80::1%eth0", "ff02::1%1", "fd00::1%lo", "::1%lo", "2001:db8::1%eth0", "2001::1%eth0", "3fff::1%2"} {
		mustRefuse(t, g, netip.MustParseAddr(s))
	}
	if err := g.DialControl("tcp6", "[fe80::1%eth0]:443", nil); !errors.Is(err, ErrRefused) {
		t.Fatalf("zoned link-local dial: %v", err)
	}
}

func TestDialControl(t *testing.T) {
	g := New([]netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")})
	for _, c := range []struct {
		network, address string
		ok               bool
	}{
		{"tcp", "93.184.216.34:443", true},
		{"tcp4", "93.184.216.34:80", true},
		{"tcp6", "[2606:2800:220:1:248:1893:25c8:1946]:443", true},
		{"udp", "8.8.8.8:53", true},
		{"tcp", "10.1.2.3:80", true},
		{"tcp", "10.2.0.1:80", false},
		{"tcp", "127.0.0.1:80", false},
		{"tcp6", "[::1]:80", false},
		{"tcp6", "[::ffff:127.0.0.1]:80", false},
		{"tcp6", "[64:ff9b::a9fe:a9fe]:80", false},
		{"tcp", "169.254.169.254:80", false},
		{"tcp", "example.com:80", false}, // a name is never dialled as such
		{"tcp", "93.184.216.34", false},  // no port
		{"tcp", "", false},
		{"unix", "/run/docker.sock", false},
		{"ip4:icmp", "8.8.8.8", false},
		{"tcp", "[93.184.216.34]:80", false},
	} {
		err := g.DialControl(c.network, c.address, nil)
		if c.ok != (err == nil) || (err != nil && !errors.Is(err, ErrRefused)) {
			t.Errorf("DialControl(%q, %q) = %v, want ok=%v", c.network, c.address, err, c.ok)
		}
	}
}

// fakeResolver is a Resolver that answers from a function.
type fakeResolver struct {
	lookup func(ctx context.Context, network, host string) ([]netip.Addr, error)
}

func (f fakeResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return f.lookup(ctx, network, host)
}

func answers(t *testing.T, addrs ...string) fakeResolver {
	return fakeResolver{func(_ context.Context, network, host string) ([]netip.Addr, error) {
		if network != "ip" {
			t.Errorf("lookup network %q, want ip", network)
		}
		var out []netip.Addr
		for _, a := range addrs {
			out = append(out, netip.MustParseAddr(a))
		}
		return out, nil
	}}
}

func TestResolveChecksEveryAddress(t *testing.T) {
	ctx := context.Background()
	g := New(nil)

	got, err := g.Resolve(ctx, answers(t, "93.184.216.34", "::ffff:8.8.8.8", "2606:2800:220:1:248:1893:25c8:1946"), "example.com")
	if err != nil || len(got) != 3 || got[1] != netip.MustParseAddr("8.8.8.8") {
		t.Fatalf("public name: %v %v", got, err)
	}

	// One refused address among public ones refuses the name, whatever
	// its position.
	for _, addrs := range [][]string{
		{"93.184.216.34", "10.0.0.1"},
		{"169.254.169.254", "93.184.216.34"},
		{"93.184.216.34", "8.8.8.8", "::1"},
		{"2606:2800:220:1:248:1893:25c8:1946", "64:ff9b::7f00:1"},
	} {
		got, err := g.Resolve(ctx, answers(t, addrs...), "rebind.example")
		var re *RefusedError
		if !errors.Is(err, ErrRefused) || !errors.As(err, &re) || got != nil {
			t.Fatalf("%v: %v %v", addrs, got, err)
		}
		if re.Host != "rebind.example" || !re.Addr.IsValid() || g.CheckAddr(re.Addr) == nil {
			t.Fatalf("%v: refusal names %q %s", addrs, re.Host, re.Addr)
		}
		if !strings.Contains(err.Error(), "rebind.example resolves to "+re.Addr.String()) {
			t.Fatalf("message: %v", err)
		}
	}

	// A failed lookup and an empty answer are not refusals.
	boom := errors.New("SERVFAIL")
	_, err = g.Resolve(ctx, fakeResolver{func(context.Context, string, string) ([]netip.Addr, error) { return nil, boom }}, "x.example")
	var rerr *ResolveError
	if !errors.Is(err, boom) || errors.Is(err, ErrRefused) || !errors.As(err, &rerr) || rerr.Host != "x.example" {
		t.Fatalf("failed lookup: %v", err)
	}
	_, err = g.Resolve(ctx, answers(t), "empty.example")
	if !errors.Is(err, ErrNoAddress) || errors.Is(err, ErrRefused) {
		t.Fatalf("empty answer: %v", err)
	}

	// Allowed prefixes apply to resolved names too.
	got, err = New([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}).Resolve(ctx, answers(t, "10.0.0.1", "93.184.216.34"), "internal.example")
	if err != nil || len(got) != 2 {
		t.Fatalf("allowed private name: %v %v", got, err)
	}
}

func TestResolveChecksLiteralsWithoutALookup(t *testing.T) {
	ctx := context.Background()
	never := fakeResolver{func(context.Context, string, string) ([]netip.Addr, error) {
		t.Fatal("a literal IP was looked up")
		return nil, nil
	}}
	g := New(nil)
	for _, host := range []string{"127.0.0.1", "[::1]", "::1", "169.254.169.254", "[fe80::1%eth0]", "::ffff:10.0.0.1"} {
		if _, err := g.Resolve(ctx, never, host); !errors.Is(err, ErrRefused) {
			t.Errorf("Resolve(%q) = %v, want refused", host, err)
		}
	}
	for _, host := range []string{"93.184.216.34", "[2606:2800:220:1:248:1893:25c8:1946]"} {
		got, err := g.Resolve(ctx, never, host)
		if err != nil || len(got) != 1 {
			t.Errorf("Resolve(%q) = %v %v", host, got, err)
		}
	}
}

// lastAddr is the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	ip, _ := netip.AddrFromSlice(b)
	return ip
}

var _ Resolver = fakeResolver{}
