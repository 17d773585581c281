package fetch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/vigilhq/vigil/internal/netguard"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/sdk/abi"
)

// FuzzScreen: Screen never panics; what it accepts satisfies every rule of
// the refusal table; what it refuses is invalid_request_options, and its
// message never quotes a header value.
func FuzzScreen(f *testing.F) {
	f.Add("GET", "https://a.example/p?q=1", "Accept", "text/html", "User-Agent", "Mine/1", "", float64(0), "", uint8(0))
	f.Add("HEAD", "http://127.0.0.1:8080/", "user-agent", " x ", "User-Agent", "y", "x-a", float64(30), "gh", uint8(0))
	f.Add("GET", "http://a/", "X-Bad", "SECRET\r\nInjected: 1", "Host", "SECRET-h", "proxy-x", float64(-1), "", uint8(0))
	f.Add("GET", "http://u:p@a/", "a b", "SECRET", "é", "v", ":authority", math.NaN(), "Bad Name", uint8(40))
	f.Add("POST", "ftp://a/", "Authorization", "Bearer SECRET", "", "", "te", math.Inf(1), "gh", uint8(31))
	f.Add("GET", "https://a/", "x-big", strings.Repeat("SECRET", 1400), "x-b", "v", "x-c", float64(120), "", uint8(2))
	f.Fuzz(func(t *testing.T, method, rawURL, n1, v1, n2, v2, n3 string, secs float64, secret string, extra uint8) {
		headers := map[string]string{n1: v1, n2: v2, n3: v2}
		for k := range int(extra) {
			headers[fmt.Sprintf("x-e%02d", k)] = v1
		}
		req := abi.FetchRequest{Method: method, URL: rawURL, Headers: headers, TimeoutSeconds: secs, Secret: secret}
		cmd, err := Screen(req, 0)
		if err != nil {
			var fe *Error
			if !errors.As(err, &fe) || fe.Reason != abi.FetchInvalidRequestOptions {
				t.Fatalf("refusal %v is not invalid_request_options", err)
			}
			if strings.Contains(v1+v2, "SECRET") && strings.Contains(fe.Message, "SECRET") {
				elsewhere := false
				for _, s := range []string{method, rawURL, n1, n2, n3, secret} {
					elsewhere = elsewhere || strings.Contains(s, "SECRET") || strings.Contains(fmt.Sprintf("%q", s), "SECRET")
				}
				if !elsewhere {
					t.Fatalf("message quotes a header value: %q", fe.Message)
				}
			}
			return
		}
		if cmd.Method != "GET" && cmd.Method != "HEAD" {
			t.Fatalf("method %q accepted", cmd.Method)
		}
		if u := cmd.URL; (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil || u.Opaque != "" || u.Fragment != "" {
			t.Fatalf("URL %q accepted", rawURL)
		}
		if len(cmd.Headers) > MaxHeaders {
			t.Fatalf("%d headers accepted", len(cmd.Headers))
		}
		total := 0
		for k, h := range cmd.Headers {
			total += len(h.Name) + len(h.Value)
			if !isToken(h.Name) || strings.ToLower(h.Name) != h.Name || forbidden(h.Name) != "" {
				t.Fatalf("name %q accepted", h.Name)
			}
			if !sendable(h.Value) || trimOWS(h.Value) != h.Value {
				t.Fatalf("value of %s accepted: %q", h.Name, h.Value)
			}
			if k > 0 && cmd.Headers[k-1].Name >= h.Name {
				t.Fatalf("names not unique and sorted: %q", cmd.HeaderNames())
			}
		}
		if total > MaxHeaderBytes {
			t.Fatalf("%d header bytes accepted", total)
		}
		if len(cmd.Headers) != len(headers) {
			t.Fatalf("%d headers in, %d out: one was dropped rather than refused", len(headers), len(cmd.Headers))
		}
		if cmd.Timeout < 0 || cmd.Timeout > DefaultMaxTimeout || (secs == 0) != (cmd.Timeout == 0) {
			t.Fatalf("timeout_seconds %g accepted as %s", secs, cmd.Timeout)
		}
		if _, ok := cmd.Header("authorization"); ok && cmd.Secret != "" {
			t.Fatal("authorization accepted with a secret")
		}
	})
}

// FuzzDestination: from any URL and any address a name resolves to, the
// issuer never panics and never dials an address the guard refuses; a
// refused literal address or resolved name is destination_refused with
// no dial at all. No connection is ever made: the test's dial hook stops
// every dial the guard lets through, just before the connect.
func FuzzDestination(f *testing.F) {
	for _, seed := range []struct {
		url string
		ip  []byte
	}{
		{"http://127.0.0.1/", nil},
		{"http://169.254.169.254/latest/meta-data/", nil},
		{"http://[::1]:8080/", nil},
		{"http://[::ffff:127.0.0.1]/", nil},
		{"http://[64:ff9b::a9fe:a9fe]/", nil},
		{"https://10.1.2.3/", nil},
		{"http://93.184.216.34/", nil},
		{"http://name.test/", []byte{127, 0, 0, 1}},
		{"http://name.test:8443/", []byte{93, 184, 216, 34}},
		{"http://name.test/", []byte{10, 9, 9, 9}},
		{"http://name.test/", []byte{0xfe, 0x80, 15: 1}},
		{"http://0x7f000001/", nil},
		{"http://127.1/", nil},
		{"http://[fe80::1%25eth0]/", nil},
		{"http://name.test./", []byte{192, 168, 1, 1}},
	} {
		f.Add(seed.url, seed.ip)
	}
	allow := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	guard := netguard.New(allow)
	f.Fuzz(func(t *testing.T, rawURL string, ip []byte) {
		answer, okAnswer := netip.AddrFromSlice(ip)
		res := &fakeResolver{answer: func(string, int64) ([]netip.Addr, error) {
			if !okAnswer {
				return nil, errors.New("no such host")
			}
			return []netip.Addr{answer}, nil
		}}
		i, err := New(Config{Clock: newFakeClock(), Resolver: res})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var dialled []string
		i.dialHook = func(_, address string) error {
			mu.Lock()
			dialled = append(dialled, address)
			mu.Unlock()
			return errors.New("the fuzz test connects nowhere")
		}
		defer i.CloseIdleConnections()
		// No deadline on the context: the fake clock's now is not the
		// wall clock a deadline is compared with. timeout_seconds bounds it.
		resp := i.Fetch(context.Background(), plugin.FetchCall{Kind: "fuzz", Entry: plugin.Entry{FetchHosts: []string{"*"}, PrivateRanges: []string{"10.0.0.0/8"}},
			Request: abi.FetchRequest{Method: "GET", URL: rawURL, TimeoutSeconds: 2}})

		mu.Lock()
		defer mu.Unlock()
		for _, a := range dialled {
			ap, err := netip.ParseAddrPort(a)
			if err != nil || guard.CheckAddr(ap.Addr()) != nil {
				t.Fatalf("dialled %s for %q", a, rawURL)
			}
		}
		cmd, err := Screen(abi.FetchRequest{Method: "GET", URL: rawURL}, 0)
		if err != nil {
			if reason(resp) != abi.FetchInvalidRequestOptions || len(dialled) != 0 {
				t.Fatalf("a refused URL answered %+v, dialled %q", resp, dialled)
			}
			return
		}
		host := cmd.URL.Hostname()
		target, perr := netip.ParseAddr(host)
		if perr != nil {
			if !okAnswer {
				return
			}
			target = answer
		}
		if guard.CheckAddr(target) != nil {
			if reason(resp) != abi.FetchDestinationRefused || len(dialled) != 0 {
				t.Fatalf("%q (%s) refused by the guard answered %+v, dialled %q", rawURL, target, resp.Failure, dialled)
			}
		}
	})
}
