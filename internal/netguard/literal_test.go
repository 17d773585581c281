package netguard

import (
	"context"
	"errors"
	"net/netip"
	"testing"
)

func TestLiteralResolver(t *testing.T) {
	tests := []struct {
		host string
		want []string // nil: not a literal
	}{
		{"localhost", []string{"127.0.0.1", "::1"}},
		{"LOCALHOST.", []string{"127.0.0.1", "::1"}},
		{"api.localhost", []string{"127.0.0.1", "::1"}},
		{"2130706433", []string{"127.0.0.1"}},
		{"0x7f000001", []string{"127.0.0.1"}},
		{"0X7F000001", []string{"127.0.0.1"}},
		{"127.1", []string{"127.0.0.1"}},
		{"127.0.1", []string{"127.0.0.1"}},
		{"0177.0.0.1", []string{"127.0.0.1"}},
		{"0xa9.0xfe.0xa9.0xfe", []string{"169.254.169.254"}},
		{"10.0.0.1", []string{"10.0.0.1"}},
		{"::1", []string{"::1"}},
		{"4294967295", []string{"255.255.255.255"}},
		{"4294967296", nil},
		{"256.1.1.1", nil},
		{"1.2.3.4.5", nil},
		{"08", nil},
		{"0x", nil},
		{"1..2", nil},
		{"+1", nil},
		{"example.com", nil},
		{"0xdead.beef", nil},
		{"localhost.example.com", nil},
		{"mylocalhost", nil},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			got, err := LiteralResolver{}.LookupNetIP(context.Background(), "ip", tt.host)
			if tt.want == nil {
				if !errors.Is(err, ErrNotLiteral) {
					t.Fatalf("LookupNetIP = %v, %v; want ErrNotLiteral", got, err)
				}
				return
			}
			if err != nil || len(got) != len(tt.want) {
				t.Fatalf("LookupNetIP = %v, %v; want %v", got, err, tt.want)
			}
			for i, a := range got {
				if a != netip.MustParseAddr(tt.want[i]) {
					t.Fatalf("LookupNetIP = %v, want %v", got, tt.want)
				}
			}
		})
	}
	if got, err := (LiteralResolver{}).LookupNetIP(context.Background(), "ip6", "2130706433"); !errors.Is(err, ErrNotLiteral) {
		t.Fatalf("an IPv4 form answered for ip6: %v, %v", got, err)
	}
}

// With Resolve, a literal name is judged by the address it reaches, and
// an allow prefix lets it through as it does the address; a name that
// needs DNS is not a refusal.
func TestResolveLiteralNames(t *testing.T) {
	ctx := context.Background()
	for _, host := range []string{"localhost", "2130706433", "0x7f000001", "127.1", "0xa9fea9fe"} {
		_, err := New(nil).Resolve(ctx, LiteralResolver{}, host)
		var re *RefusedError
		if !errors.As(err, &re) || re.Host != host {
			t.Errorf("Resolve(%q) = %v, want a refusal naming the host", host, err)
		}
	}
	allow := New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")})
	if _, err := allow.Resolve(ctx, LiteralResolver{}, "2130706433"); err != nil {
		t.Errorf("allowed 127.0.0.0/8, and 2130706433 is refused: %v", err)
	}
	if _, err := allow.Resolve(ctx, LiteralResolver{}, "localhost"); err != nil {
		t.Errorf("allowed loopback, and localhost is refused: %v", err)
	}
	_, err := New(nil).Resolve(ctx, LiteralResolver{}, "example.com")
	var re *ResolveError
	if !errors.As(err, &re) || !errors.Is(err, ErrNotLiteral) || errors.Is(err, ErrRefused) {
		t.Errorf("Resolve(example.com) = %v, want a ResolveError wrapping ErrNotLiteral", err)
	}
}
