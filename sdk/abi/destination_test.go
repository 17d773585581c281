package abi

import (
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

func TestParseDestination(t *testing.T) {
	tests := []struct {
		target string
		want   Endpoint
		bad    string // part of the refusal's reason; "" when accepted
	}{
		{target: "https://api.github.com", want: Endpoint{Host: "api.github.com"}},
		{target: "https://API.GitHub.com./repos?x=1#f", want: Endpoint{Host: "api.github.com"}},
		{target: "http://status.example.com:8080/healthz", want: Endpoint{Host: "status.example.com", Port: 8080}},
		{target: "HTTP://example.com/", want: Endpoint{Host: "example.com"}},
		{target: "http://127.0.0.1/", want: Endpoint{Host: "127.0.0.1"}},
		{target: "http://2130706433/", want: Endpoint{Host: "2130706433"}},
		{target: "http://0x7f000001/", want: Endpoint{Host: "0x7f000001"}},
		{target: "http://[::ffff:127.0.0.1]/", want: Endpoint{Host: "::ffff:127.0.0.1"}},
		{target: "http://[::1]:9000/", want: Endpoint{Host: "::1", Port: 9000}},
		{target: "http://[fe80::1%25eth0]/", want: Endpoint{Host: "fe80::1%eth0"}},
		{target: "http://exa%6dple.com/", bad: "not a URL"},
		{target: "localhost", want: Endpoint{Host: "localhost"}},
		{target: "gitea.example.com:3000", want: Endpoint{Host: "gitea.example.com", Port: 3000}},
		{target: "[2001:db8::1]:443", want: Endpoint{Host: "2001:db8::1", Port: 443}},
		{target: "my_host.internal", want: Endpoint{Host: "my_host.internal"}},
		{target: strings.Repeat("a", 63) + ".com", want: Endpoint{Host: strings.Repeat("a", 63) + ".com"}},

		{target: "", bad: "empty"},
		{target: "https://" + strings.Repeat("a", MaxDestinationLen), bad: "longer than"},
		{target: "ftp://example.com/", bad: "scheme"},
		{target: "https://user:pw@example.com/", bad: "userinfo"},
		{target: "http:///path", bad: "no host"},
		{target: "http://exa mple.com/", bad: "not a URL"},
		{target: "http://example.com:0/", bad: "port"},
		{target: "http://example.com:65536/", bad: "port"},
		{target: "http://example.com:/", bad: "empty port"},
		{target: "example.com:080", bad: "port"},
		{target: "example.com:+80", bad: "port"},
		{target: "example.com/path", bad: "host name character"},
		{target: "::1", bad: "more than one colon"},
		{target: "[::1", bad: "unclosed"},
		{target: "[::1]x", bad: "after the ]"},
		{target: "[::1]:", bad: "empty port"},
		{target: "[127.0.0.1]", bad: "not an IPv6"},
		{target: "[example.com]", bad: "not an IPv6"},
		{target: "a..b", bad: "empty label"},
		{target: "-a.example.com", bad: "starts or ends"},
		{target: strings.Repeat("a", 64) + ".com", bad: "label longer"},
		{target: strings.Repeat("a.", 127) + "ab", bad: "longer than 253"},
		{target: "bücher.de", bad: "xn--"},
		{target: "http://bücher.de/", bad: "xn--"},
		{target: "example.com\n", bad: "host name character"},
		{target: ".", bad: "empty label"},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			got, err := ParseDestination(tt.target)
			if tt.bad != "" {
				var de *DestinationError
				if !errors.As(err, &de) || !strings.Contains(de.Reason, tt.bad) {
					t.Fatalf("ParseDestination = %+v, %v; want a refusal saying %q", got, err, tt.bad)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseDestination = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestCheckDestinationField(t *testing.T) {
	for f, ok := range map[string]bool{
		"": true, "url": true, "repo.api_base": true, "a[0]": true,
		"a b": false, "é": false, "a\n": false, strings.Repeat("a", MaxFieldLen+1): false,
	} {
		if err := CheckDestinationField(f); (err == nil) != ok {
			t.Errorf("CheckDestinationField(%q) = %v", f, err)
		}
	}
}

func TestAdmitResponseDestinationsRoundTrip(t *testing.T) {
	in := AdmitResponse{OK: true, Destinations: []Destination{{Target: "https://x.example/", Field: "url"}, {Target: "api.github.com"}}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"ok":true,"destinations":[{"target":"https://x.example/","field":"url"},{"target":"api.github.com"}]}`; string(b) != want {
		t.Fatalf("marshal = %s, want %s", b, want)
	}
	var out AdmitResponse
	if err := StrictUnmarshal(b, &out); err != nil || len(out.Destinations) != 2 || out.Destinations[0] != in.Destinations[0] {
		t.Fatalf("unmarshal = %+v, %v", out, err)
	}
	if err := StrictUnmarshal([]byte(`{"ok":true,"destinations":[{"target":"x","port":1}]}`), &out); err == nil {
		t.Fatal("an unknown destination field decoded")
	}
}

// FuzzParseDestination: from any target, ParseDestination never panics;
// what it accepts has a host that reads back as itself (String parses to
// the same Endpoint), a port in range, and, for a URL, the host and port
// net/url reads; what it refuses is a *DestinationError.
func FuzzParseDestination(f *testing.F) {
	for _, s := range []string{
		"https://api.github.com", "http://127.0.0.1:8080/x", "http://[::ffff:127.0.0.1]/", "http://2130706433/",
		"localhost", "[::1]:80", "a..b", "http://[fe80::1%25eth0]/", "host:", "[::1]:",
		"https://u@x/", "x.example.com.", "HTTP://X/", "http://x:0/", "ftp://x", "[", "]:1", "http://[::1]x/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		ep, err := ParseDestination(target)
		if err != nil {
			var de *DestinationError
			if !errors.As(err, &de) || de.Target != target || de.Reason == "" {
				t.Fatalf("refusal %v is not a *DestinationError for the target", err)
			}
			return
		}
		if ep.Host == "" || ep.Port < 0 || ep.Port > 65535 || len(target) > MaxDestinationLen {
			t.Fatalf("accepted %q as %+v", target, ep)
		}
		again, err := ParseDestination(ep.String())
		if err != nil || again != ep {
			t.Fatalf("%q: %+v reads back from %q as %+v, %v", target, ep, ep.String(), again, err)
		}
		if strings.Contains(target, "://") {
			u, err := url.Parse(target)
			if err != nil {
				t.Fatalf("accepted %q, which net/url refuses: %v", target, err)
			}
			if u.User != nil || (u.Scheme != "http" && u.Scheme != "https") {
				t.Fatalf("accepted %q: scheme %q, userinfo %v", target, u.Scheme, u.User)
			}
			host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
			if !strings.Contains(host, ":") && host != ep.Host {
				t.Fatalf("%q: host %q, net/url reads %q", target, ep.Host, host)
			}
			if p := u.Port(); p != strconv.Itoa(ep.Port) && (p != "" || ep.Port != 0) {
				t.Fatalf("%q: port %d, net/url reads %q", target, ep.Port, p)
			}
		}
	})
}
