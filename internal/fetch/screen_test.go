package fetch

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/sdk/abi"
)

// sentinel is in every header value of the refusal table: no message,
// fact or log line may ever contain it.
const sentinel = "SENTINEL-VALUE"

type refusalRow struct {
	name   string
	req    abi.FetchRequest
	header string // the offending header name Screen must report, if any
}

// refusalRows is every row of the refusal table, each aimed at srv so that
// a refusal that failed would reach it.
func refusalRows(srv string) []refusalRow {
	u := srv + "/r"
	h := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	rows := []refusalRow{
		{name: "method POST", req: abi.FetchRequest{Method: "POST", URL: u}},
		{name: "method lower-case get", req: abi.FetchRequest{Method: "get", URL: u}},
		{name: "method empty", req: abi.FetchRequest{Method: "", URL: u}},
		{name: "method OPTIONS", req: abi.FetchRequest{Method: "OPTIONS", URL: u}},
		{name: "url relative", req: abi.FetchRequest{Method: "GET", URL: "/r"}},
		{name: "url ftp", req: abi.FetchRequest{Method: "GET", URL: strings.Replace(u, "http://", "ftp://", 1)}},
		{name: "url opaque", req: abi.FetchRequest{Method: "GET", URL: "http:127.0.0.1/r"}},
		{name: "url userinfo", req: abi.FetchRequest{Method: "GET", URL: strings.Replace(u, "http://", "http://user:pw@", 1)}},
		{name: "url user only", req: abi.FetchRequest{Method: "GET", URL: strings.Replace(u, "http://", "http://token@", 1)}},
		{name: "url unparseable", req: abi.FetchRequest{Method: "GET", URL: "http://[::1"}},
		{name: "url unparseable with userinfo", req: abi.FetchRequest{Method: "GET", URL: "http://user:pw@[::1/r"}},
		{name: "url control byte", req: abi.FetchRequest{Method: "GET", URL: u + "\r\nx"}},
		{name: "url no host", req: abi.FetchRequest{Method: "GET", URL: "http:///r"}},
		{name: "url port 0", req: abi.FetchRequest{Method: "GET", URL: "http://127.0.0.1:0/r"}},
		{name: "url port too big", req: abi.FetchRequest{Method: "GET", URL: "http://127.0.0.1:70000/r"}},
		{name: "url empty", req: abi.FetchRequest{Method: "GET", URL: ""}},
	}
	for _, name := range []string{"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade",
		"host", "content-length", "proxy-authorization", "Proxy-Anything", "Connection", "HOST", "Content-Length"} {
		rows = append(rows, refusalRow{name: "name " + name, req: abi.FetchRequest{Method: "GET", URL: u, Headers: h(name, sentinel)}, header: name})
	}
	for _, name := range []string{"user agent", "user:agent", "", "ümlaut", " accept", "accept ", "\taccept", "a\r\nb", "x\x00y", "x(y)", "x/y", "x@y"} {
		rows = append(rows, refusalRow{name: fmt.Sprintf("name not a token %q", name), req: abi.FetchRequest{Method: "GET", URL: u, Headers: h(name, sentinel)}, header: name})
	}
	for _, v := range []string{"\r\nX-Injected: 1", "\rx", "\nx", "\x00", "in\tner", "caf\xc3\xa9", "\x7f", "\x80", "\xff", "\x01", "\x1f"} {
		rows = append(rows, refusalRow{name: fmt.Sprintf("value byte %q", v), req: abi.FetchRequest{Method: "GET", URL: u, Headers: h("X-Bad", sentinel+v+sentinel)}, header: "X-Bad"})
	}
	rows = append(rows,
		refusalRow{name: "names differing only in case, equal values", req: abi.FetchRequest{Method: "GET", URL: u, Headers: h("Accept", sentinel, "accept", sentinel)}, header: "accept"},
		refusalRow{name: "names differing only in case, other values", req: abi.FetchRequest{Method: "GET", URL: u, Headers: h("X-A", sentinel+"1", "x-a", sentinel+"2", "X-a", sentinel+"3")}, header: "x-a"},
		refusalRow{name: "user-agent twice by case", req: abi.FetchRequest{Method: "GET", URL: u, Headers: h("User-Agent", sentinel, "user-agent", sentinel)}, header: "user-agent"},
	)
	many := map[string]string{}
	for k := range MaxHeaders + 1 {
		many[fmt.Sprintf("x-h%02d", k)] = sentinel
	}
	rows = append(rows, refusalRow{name: "33 headers", req: abi.FetchRequest{Method: "GET", URL: u, Headers: many}})
	big := strings.Repeat(sentinel, MaxHeaderBytes)[:MaxHeaderBytes-len("x-big")+1]
	rows = append(rows, refusalRow{name: "8193 header bytes", req: abi.FetchRequest{Method: "GET", URL: u, Headers: h("x-big", big)}})
	two := map[string]string{"x-a": strings.Repeat("S", 4000), "x-b": strings.Repeat("S", 4000), "x-c": strings.Repeat("S", 200)}
	rows = append(rows, refusalRow{name: "header bytes summed over headers", req: abi.FetchRequest{Method: "GET", URL: u, Headers: two}})
	rows = append(rows, refusalRow{name: "authorization with a secret", req: abi.FetchRequest{Method: "GET", URL: u, Headers: h("Authorization", "Bearer "+sentinel), Secret: "gh"}, header: "authorization"})
	for _, secs := range []float64{-1, -0.5, math.NaN(), math.Inf(1), math.Inf(-1), 120.001, 1e9, 1e-9, math.SmallestNonzeroFloat64} {
		rows = append(rows, refusalRow{name: fmt.Sprintf("timeout %g", secs), req: abi.FetchRequest{Method: "GET", URL: u, TimeoutSeconds: secs}})
	}
	// Zero is not a duration, and absent is not zero: only the wire can
	// say zero was given.
	var zero abi.FetchRequest
	if err := json.Unmarshal([]byte(`{"method":"GET","url":"`+u+`","timeout_seconds":0}`), &zero); err != nil {
		panic(err)
	}
	rows = append(rows, refusalRow{name: "timeout 0 given", req: zero})
	rows = append(rows, refusalRow{name: "secret name not in the grammar", req: abi.FetchRequest{Method: "GET", URL: u, Secret: "Bad Name"}})
	return rows
}

func TestScreenRefuses(t *testing.T) {
	for _, row := range refusalRows("http://127.0.0.1:8080") {
		t.Run(row.name, func(t *testing.T) {
			cmd, err := Screen(row.req, 0)
			var fe *Error
			if !errors.As(err, &fe) {
				t.Fatalf("Screen = %+v, %v; want a refusal", cmd, err)
			}
			if fe.Reason != abi.FetchInvalidRequestOptions {
				t.Fatalf("reason %q", fe.Reason)
			}
			if fe.Header != row.header {
				t.Fatalf("Header = %q, want %q (%s)", fe.Header, row.header, fe.Message)
			}
			if row.header != "" && !strings.Contains(fe.Message, fmt.Sprintf("%q", clip(strings.ToLower(row.header)))) &&
				!strings.Contains(fe.Message, fmt.Sprintf("%q", clip(row.header))) {
				t.Fatalf("message %q does not name the header %q", fe.Message, row.header)
			}
			if strings.Contains(fe.Message, sentinel) || strings.Contains(fe.Message, "SSSS") {
				t.Fatalf("message quotes a header value: %q", fe.Message)
			}
		})
	}
}

func TestScreenAccepts(t *testing.T) {
	exactly32 := map[string]string{}
	for k := range MaxHeaders {
		exactly32[fmt.Sprintf("x-h%02d", k)] = "v"
	}
	for _, tc := range []struct {
		name    string
		req     abi.FetchRequest
		headers []Header
		timeout time.Duration
		check   func(t *testing.T, c Command)
	}{
		{name: "user-agent with capitals is lower-cased", req: abi.FetchRequest{Method: "GET", URL: "https://a.example/", Headers: map[string]string{"User-Agent": "Mine/1.0"}},
			headers: []Header{{"user-agent", "Mine/1.0"}}},
		{name: "inner spaces kept", req: abi.FetchRequest{Method: "GET", URL: "https://a.example/", Headers: map[string]string{"X-Q": "a  b c"}},
			headers: []Header{{"x-q", "a  b c"}}},
		{name: "surrounding whitespace trimmed", req: abi.FetchRequest{Method: "GET", URL: "https://a.example/", Headers: map[string]string{"Accept": " \ttext/html \t"}},
			headers: []Header{{"accept", "text/html"}}},
		{name: "empty value", req: abi.FetchRequest{Method: "GET", URL: "https://a.example/", Headers: map[string]string{"X-Empty": "   "}},
			headers: []Header{{"x-empty", ""}}},
		{name: "sorted by lower-cased name", req: abi.FetchRequest{Method: "HEAD", URL: "https://a.example/", Headers: map[string]string{"b": "2", "A": "1", "C": "3"}},
			headers: []Header{{"a", "1"}, {"b", "2"}, {"c", "3"}}},
		{name: "conditional headers allowed as is", req: abi.FetchRequest{Method: "GET", URL: "https://a.example/", Headers: map[string]string{"If-None-Match": `"x"`, "If-Modified-Since": "Wed, 21 Oct 2015 07:28:00 GMT"}},
			headers: []Header{{"if-modified-since", "Wed, 21 Oct 2015 07:28:00 GMT"}, {"if-none-match", `"x"`}}},
		{name: "authorization without a secret", req: abi.FetchRequest{Method: "GET", URL: "https://a.example/", Headers: map[string]string{"Authorization": "token x"}},
			headers: []Header{{"authorization", "token x"}}},
		{name: "token punctuation", req: abi.FetchRequest{Method: "GET", URL: "https://a.example/", Headers: map[string]string{"x!#$%&'*+-.^_`|~9": "v"}},
			headers: []Header{{"x!#$%&'*+-.^_`|~9", "v"}}},
		{name: "a name starting proxy without the dash", req: abi.FetchRequest{Method: "GET", URL: "https://a.example/", Headers: map[string]string{"Proxyish": "v"}},
			headers: []Header{{"proxyish", "v"}}},
		{name: "exactly 8192 bytes", req: abi.FetchRequest{Method: "GET", URL: "https://a.example/", Headers: map[string]string{"x-big": strings.Repeat("v", MaxHeaderBytes-5)}},
			headers: []Header{{"x-big", strings.Repeat("v", MaxHeaderBytes-5)}}},
		{name: "exactly 32 headers", req: abi.FetchRequest{Method: "GET", URL: "https://a.example/", Headers: exactly32},
			check: func(t *testing.T, c Command) {
				if len(c.Headers) != MaxHeaders {
					t.Fatalf("%d headers", len(c.Headers))
				}
			}},
		{name: "timeout at the maximum", req: abi.FetchRequest{Method: "GET", URL: "https://a.example/", TimeoutSeconds: 120}, timeout: 120 * time.Second},
		{name: "timeout absent", req: abi.FetchRequest{Method: "GET", URL: "https://a.example/"}, timeout: 0},
		{name: "fractional timeout", req: abi.FetchRequest{Method: "GET", URL: "https://a.example/", TimeoutSeconds: 0.25}, timeout: 250 * time.Millisecond},
		{name: "fragment dropped, upper-case scheme", req: abi.FetchRequest{Method: "GET", URL: "HTTPS://a.example/p?q=1#frag"},
			check: func(t *testing.T, c Command) {
				if c.URL.String() != "https://a.example/p?q=1" {
					t.Fatalf("URL %s", c.URL)
				}
			}},
		{name: "secret kept by name", req: abi.FetchRequest{Method: "GET", URL: "https://a.example/", Secret: "gh"},
			check: func(t *testing.T, c Command) {
				if c.Secret != "gh" {
					t.Fatalf("secret %q", c.Secret)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Screen(tc.req, 0)
			if err != nil {
				t.Fatal(err)
			}
			if tc.headers != nil && fmt.Sprint(c.Headers) != fmt.Sprint(tc.headers) {
				t.Fatalf("headers %q, want %q", c.Headers, tc.headers)
			}
			if c.Timeout != tc.timeout {
				t.Fatalf("timeout %s, want %s", c.Timeout, tc.timeout)
			}
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}

func TestScreenMaxTimeout(t *testing.T) {
	req := abi.FetchRequest{Method: "GET", URL: "https://a.example/", TimeoutSeconds: 11}
	if _, err := Screen(req, 10*time.Second); err == nil {
		t.Fatal("11 s accepted under a 10 s maximum")
	}
	if _, err := Screen(req, 0); err != nil {
		t.Fatalf("11 s under the default maximum: %v", err)
	}
}

// A stored validator is screened again before it is replayed: a value
// that could not be sent is dropped and the request goes out
// unconditional, never refused.
func TestConditionalScreensStoredValidators(t *testing.T) {
	stored := &abi.FetchResponse{Status: 200}
	cmd, err := Screen(abi.FetchRequest{Method: "GET", URL: "https://a.example/"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		v    validators
		want []Header
	}{
		{"both sendable", validators{etag: `"v1"`, lastModified: "Wed, 21 Oct 2015 07:28:00 GMT", stored: stored},
			[]Header{{"if-none-match", `"v1"`}, {"if-modified-since", "Wed, 21 Oct 2015 07:28:00 GMT"}}},
		{"control byte in the etag", validators{etag: "\"v\x01\"", lastModified: "Wed, 21 Oct 2015 07:28:00 GMT", stored: stored},
			[]Header{{"if-modified-since", "Wed, 21 Oct 2015 07:28:00 GMT"}}},
		{"CRLF in the etag", validators{etag: "\"v\"\r\nX-Injected: 1", stored: stored}, nil},
		{"obs-text in last-modified", validators{lastModified: "Wed\xff", stored: stored}, nil},
		{"surrounding space", validators{etag: ` "v" `, stored: stored}, nil},
		{"nothing stored to answer a 304", validators{etag: `"v1"`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := conditional(cmd, tc.v); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("conditional = %q, want %q", got, tc.want)
			}
		})
	}

	// The command's own conditional wins.
	own, _ := Screen(abi.FetchRequest{Method: "GET", URL: "https://a.example/", Headers: map[string]string{"If-None-Match": `"mine"`}}, 0)
	if got := conditional(own, validators{etag: `"v1"`, stored: stored}); got != nil {
		t.Fatalf("added %q to a command with its own if-none-match", got)
	}
	// Additions keep the command within the header bounds.
	full := map[string]string{}
	for k := range MaxHeaders {
		full[fmt.Sprintf("x-h%02d", k)] = "v"
	}
	fullCmd, _ := Screen(abi.FetchRequest{Method: "GET", URL: "https://a.example/", Headers: full}, 0)
	if got := conditional(fullCmd, validators{etag: `"v1"`, stored: stored}); got != nil {
		t.Fatalf("added %q to a command of %d headers", got, MaxHeaders)
	}

	for v, want := range map[string]string{`"v1"`: `"v1"`, ` "v1" `: `"v1"`, "\"v\x01\"": "", "W/\"v\"\xff": ""} {
		if got := mintValidator(v); got != want {
			t.Fatalf("mintValidator(%q) = %q, want %q", v, got, want)
		}
	}
}
