package httpapi

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/fakeclock"
)

// rawServer serves the API on a real 127.0.0.1 listener with a short read
// timeout, and returns its address.
func rawServer(t *testing.T) string {
	t.Helper()
	st := apitest.NewStack(t, apitest.Config{Plugins: fakePlugins(), Clock: fakeclock.At(t0)})
	app := New(Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients, Plugins: fakePlugins()},
		Options{BodyLimit: 4096, ReadTimeout: 300 * time.Millisecond})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(Listener(ln)) }()
	t.Cleanup(func() { _ = app.Shutdown() })
	return ln.Addr().String()
}

// rawExchange writes parts to a fresh connection, pausing stall after
// the last one, and reads the one response.
func rawExchange(t *testing.T, addr string, parts ...string) (*http.Response, api.ErrorEnvelope) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	for _, p := range parts {
		if _, err := io.WriteString(conn, p); err != nil {
			// The server may answer and close before it has read all.
			break
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var env api.ErrorEnvelope
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("%d: not the error envelope: %q", resp.StatusCode, b)
	}
	return resp, env
}

func TestTransportLimitsAnswerInTheEnvelope(t *testing.T) {
	addr := rawServer(t)
	tests := []struct {
		name   string
		parts  []string
		status int
		code   string
	}{
		{"headers over the buffer", []string{"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", HeaderLimit) + "\r\n\r\n"},
			431, api.CodeHeadersTooLarge},
		{"many headers over the buffer", []string{"GET /healthz HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-A: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\r\n", 400) + "\r\n"},
			431, api.CodeHeadersTooLarge},
		{"target over the URI limit", []string{"GET /api/v1/watches?x=" + strings.Repeat("a", MaxURI) + " HTTP/1.1\r\nHost: x\r\n\r\n"},
			414, api.CodeURITooLong},
		{"target over the whole buffer", []string{"GET /api/v1/watches?x=" + strings.Repeat("a", 3*HeaderLimit) + " HTTP/1.1\r\nHost: x\r\n\r\n"},
			414, api.CodeURITooLong},
		{"target just over the buffer", []string{"GET /" + strings.Repeat("a", HeaderLimit) + " HTTP/1.1\r\nHost: x\r\n\r\n"},
			414, api.CodeURITooLong},
		{"short line, headers over the buffer, sent in pieces", []string{"GET /healthz HTTP/1.1\r\n", "Host: x\r\nX-Big: " + strings.Repeat("a", HeaderLimit/2), strings.Repeat("b", HeaderLimit) + "\r\n\r\n"},
			431, api.CodeHeadersTooLarge},
		{"stalled body", []string{"POST /api/v1/watches HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"kind\":"},
			408, api.CodeRequestTimeout},
		{"stalled headers", []string{"GET /healthz HTTP/1.1\r\nHost: x\r\n"},
			408, api.CodeRequestTimeout},
		{"declared body over the limit", []string{"POST /api/v1/watches HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{}"},
			413, api.CodeBodyTooLarge},
		{"not HTTP", []string{"HELLO\r\n\r\n"},
			400, api.CodeMalformedRequest},
		{"bad content length", []string{"POST /api/v1/watches HTTP/1.1\r\nHost: x\r\nContent-Length: lots\r\n\r\n"},
			400, api.CodeMalformedRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, env := rawExchange(t, addr, tt.parts...)
			if resp.StatusCode != tt.status || env.Error.Code != tt.code || env.Error.Message == "" {
				t.Fatalf("%d %+v, want %d %s", resp.StatusCode, env.Error, tt.status, tt.code)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
}

// A request within every limit is served on the same listener: the limits
// refuse only what is over them.
func TestTransportWithinLimitsIsServed(t *testing.T) {
	addr := rawServer(t)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	req := "GET /api/v1/watches?x=" + strings.Repeat("a", MaxURI-64) + " HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("b", 2048) + "\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

// On a kept-alive connection the second request is judged on its own: a
// request line over the buffer after a request with a body is 414, and
// headers over it after a short request line are 431.
func TestTransportLimitsOnAKeptAliveConnection(t *testing.T) {
	addr := rawServer(t)
	for _, tt := range []struct {
		name   string
		second string
		status int
		code   string
	}{
		{"long request line", "GET /" + strings.Repeat("a", 2*HeaderLimit) + " HTTP/1.1\r\nHost: x\r\n\r\n", 414, api.CodeURITooLong},
		{"long headers", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 2*HeaderLimit) + "\r\n\r\n", 431, api.CodeHeadersTooLarge},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			br := bufio.NewReader(conn)
			// A first request whose body does not end in a line feed.
			first := "PUT /api/v1/recipients/agent-1 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n{\"status\":\"running\"}"
			if _, err := io.WriteString(conn, first); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("first: %d", resp.StatusCode)
			}
			_, _ = io.WriteString(conn, tt.second)
			resp, err = http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			var env api.ErrorEnvelope
			if err := json.Unmarshal(b, &env); err != nil || resp.StatusCode != tt.status || env.Error.Code != tt.code {
				t.Fatalf("%d %s, want %d %s", resp.StatusCode, b, tt.status, tt.code)
			}
		})
	}
}

// Whatever bytes a client sends, the server answers below 500 or not at
// all: a client's mistake is never a 5xx.
func TestTransportGarbageIsNeverA5xx(t *testing.T) {
	addr := rawServer(t)
	rapid.Check(t, func(t *rapid.T) {
		head := rapid.SampledFrom([]string{"", "GET / HTTP/1.1\r\n", "POST /api/v1/watches HTTP/1.1\r\nHost: x\r\n", "PUT /api/v1/recipients/a%zz HTTP/1.1\r\n",
			"GET /api/v1/watches?limit=", "POST /api/v1/watches HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"}).Draw(t, "head")
		tail := rapid.SliceOfN(rapid.Byte(), 0, 3*HeaderLimit).Draw(t, "tail")
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = conn.Write(append([]byte(head), tail...))
		_ = conn.(*net.TCPConn).CloseWrite()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			return // closed without an answer: nothing was a request
		}
		_ = resp.Body.Close()
		if resp.StatusCode >= 500 {
			t.Fatalf("%q + %d bytes: %d", head, len(tail), resp.StatusCode)
		}
	})
}
