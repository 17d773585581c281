package httpapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/observe"
)

// Path parameters reach the handlers percent-decoded: a recipient id with
// an encoded character is the same recipient as its plain spelling, a
// watch id or scope spelled with escapes is found, and a segment that is
// not valid percent-encoding is refused, never half-decoded.
func TestPathParamsArePercentDecoded(t *testing.T) {
	st := apitest.NewStack(t, apitest.Config{Plugins: fakePlugins(), Clock: fakeclock.At(t0)})
	ob, err := observe.New(observe.Options{Store: st.Store, Clock: fakeclock.At(t0), Rate: -1, RunPerMinute: -1}, observeConfig())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{app: New(Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients, Plugins: fakePlugins(), Observe: ob}, Options{})}

	status, b := f.do(t, "PUT", "/api/v1/recipients/agent%3A1%40host", `{"status":"running"}`)
	var rec api.Recipient
	if err := json.Unmarshal(b, &rec); status != 200 || err != nil || rec.ID != "agent:1@host" {
		t.Fatalf("put: %d %s", status, b)
	}
	for _, path := range []string{"/api/v1/recipients/agent:1@host", "/api/v1/recipients/%61gent%3a1%40host"} {
		status, b := f.do(t, "GET", path, "")
		if err := json.Unmarshal(b, &rec); status != 200 || err != nil || rec.ID != "agent:1@host" {
			t.Errorf("get %s: %d %s", path, status, b)
		}
	}
	if status, b := f.do(t, "GET", "/api/v1/recipients/agent%3A1%40host/mailbox", ""); status != 200 {
		t.Errorf("mailbox: %d %s", status, b)
	}

	status, b = f.do(t, "POST", "/api/v1/watches", `{"kind":"ci","params":{},"recipient":{"id":"agent:1@host"}}`)
	var w api.Watch
	if err := json.Unmarshal(b, &w); status != 201 || err != nil {
		t.Fatalf("create: %d %s", status, b)
	}
	escaped := "%" + strings.ToUpper(hex2(w.ID[0])) + w.ID[1:]
	if status, b := f.do(t, "GET", "/api/v1/watches/"+escaped, ""); status != 200 || !strings.Contains(string(b), w.ID) {
		t.Errorf("watch %s: %d %s", escaped, status, b)
	}

	if status, b := f.do(t, "GET", "/api/v1/scopes/sup%70ort/work", ""); status != 200 {
		t.Errorf("scope: %d %s", status, b)
	}

	// Written on the wire as is: net/http would not send a bad escape.
	addr := strings.TrimPrefix(apitest.Serve(t, f.app), "http://")
	for _, tt := range []struct{ path, code string }{
		{"/api/v1/recipients/agent%zz", api.CodeInvalidRecipient},
		{"/api/v1/recipients/agent%3", api.CodeInvalidRecipient},
		{"/api/v1/recipients/a%2Fb", api.CodeInvalidRecipient}, // decodes to a/b: not a recipient id
		{"/api/v1/watches/%zz", api.CodeNotFound},
		{"/api/v1/scopes/%zz/work", api.CodeNotFound},
	} {
		resp, env := rawExchange(t, addr, "GET "+tt.path+" HTTP/1.1\r\nHost: x\r\n\r\n")
		if env.Error.Code != tt.code || resp.StatusCode != api.Status(tt.code) {
			t.Errorf("%s: %d %+v, want %s", tt.path, resp.StatusCode, env.Error, tt.code)
		}
	}
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&15]})
}
