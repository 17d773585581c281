package netguard

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"
)

func listen(t *testing.T, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	return ln
}

func TestRealDialerRefusesLoopbackUnlessAllowed(t *testing.T) {
	ln := listen(t, "127.0.0.1:0")
	_, port, _ := net.SplitHostPort(ln.Addr().String())

	refusing := New(nil).Dialer(2 * time.Second)
	for _, addr := range []string{
		ln.Addr().String(),
		"localhost:" + port, // a name is resolved by the dialer, then checked
		"[::ffff:127.0.0.1]:" + port,
	} {
		c, err := refusing.Dial("tcp", addr)
		if err == nil {
			_ = c.Close()
			t.Fatalf("dial %s through the guard succeeded", addr)
		}
		if !errors.Is(err, ErrRefused) {
			t.Fatalf("dial %s: %v, want a refusal", addr, err)
		}
	}

	allowing := New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}).Dialer(2 * time.Second)
	c, err := allowing.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial with 127.0.0.0/8 allowed: %v", err)
	}
	_ = c.Close()
}

// A redirect from an allowed destination to a refused one is refused at
// the dial of the redirect: the check runs on every connection, not once
// per request.
func TestRedirectToRefusedAddressIsRefusedAtDial(t *testing.T) {
	inner := listen(t, "127.0.0.2:0") // Linux answers on all of 127/8
	outer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/go" {
			http.Redirect(w, r, "http://"+inner.Addr().String()+"/secret", http.StatusFound)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer outer.Close()

	g := New([]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")})
	client := &http.Client{Transport: &http.Transport{
		Proxy:       nil, // with a proxy, the proxy is the address the guard checks
		DialContext: g.Dialer(2 * time.Second).DialContext,
	}}
	defer client.CloseIdleConnections()

	// The allowed first hop alone is fine.
	resp, err := client.Get(outer.URL + "/")
	if err != nil {
		t.Fatalf("the allowed destination: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()

	resp, err = client.Get(outer.URL + "/go")
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		t.Fatalf("redirect to %s was followed", inner.Addr())
	}
	var ue *url.Error
	var re *RefusedError
	if !errors.As(err, &ue) || !strings.Contains(ue.URL, "/secret") ||
		!errors.As(err, &re) || re.Addr != netip.MustParseAddr("127.0.0.2") {
		t.Fatalf("redirect: %v, want a refusal of the redirect target 127.0.0.2", err)
	}
}
