package httpapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/host/netguard"
	"github.com/vigilhq/vigil/host/recipients"
	"github.com/vigilhq/vigil/internal/apitest"
)

// A recipient's bounds and its webhook's destination are refused through
// the API as a 422 that names the field and the setting that would allow
// it.
func TestRecipientBoundsOverHTTP(t *testing.T) {
	st := apitest.NewStack(t, apitest.Config{Plugins: fakePlugins{}, Clock: fixedClock{t0}})
	recips := st.Recipients.WithLimits(recipients.Limits{MaxRefs: 2, MaxPending: 2}).WithDestinations(netguard.New(nil))
	f := &fixture{app: New(Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: recips, Plugins: fakePlugins{}},
		Options{StreamWait: 50 * time.Millisecond})}
	watch := `{"kind":"ci","params":{},"recipient":{"id":"agent-1"}}`
	for range 2 {
		if status, b := f.do(t, "POST", "/api/v1/watches", watch); status != 201 {
			t.Fatalf("%d %s", status, b)
		}
	}
	refs := func(n int) string {
		var rs []string
		for i := range n {
			rs = append(rs, fmt.Sprintf(`{"kind":"ticket","params":{"n":%d}}`, i))
		}
		return `{"status":"running","refs":[` + strings.Join(rs, ",") + `]}`
	}
	for _, tt := range []struct {
		name, method, path, body string
		code, field, setting     string
	}{
		{"pending at the bound", "POST", "/api/v1/watches", watch, api.CodeTooManyPending, "recipient.id", "recipient_max_pending"},
		{"refs over the bound", "PUT", "/api/v1/recipients/agent-2", refs(3), api.CodeTooManyRefs, "refs", "recipient_max_refs"},
		{"loopback webhook", "PUT", "/api/v1/recipients/agent-2", `{"status":"running","webhook":{"url":"http://127.0.0.1:9000/hook","secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}`,
			api.CodeDestinationRefused, "webhook.url", "webhook_allow"},
		{"metadata webhook, integer form", "PUT", "/api/v1/recipients/agent-2", `{"status":"running","webhook":{"url":"http://2852039166/latest","secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}`,
			api.CodeDestinationRefused, "webhook.url", "webhook_allow"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, b := f.do(t, tt.method, tt.path, tt.body)
			var env api.ErrorEnvelope
			if err := json.Unmarshal(b, &env); err != nil || status != 422 || env.Error.Code != tt.code || env.Error.Field != tt.field || env.Error.Setting != tt.setting {
				t.Fatalf("%d %s", status, b)
			}
		})
	}
	if status, b := f.do(t, "PUT", "/api/v1/recipients/agent-2", refs(2)); status != 200 {
		t.Fatalf("refs at the bound: %d %s", status, b)
	}
	if status, b := f.do(t, "POST", "/api/v1/watches", `{"kind":"ci","params":{},"recipient":{"id":"agent-3"}}`); status != 201 {
		t.Fatalf("another recipient: %d %s", status, b)
	}
}
